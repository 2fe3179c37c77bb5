"""Bad input to the models: LinformerConfig, from_pretrained and `linformer convert` (issue-13 sweep).

Each case must end in a clear error naming the bad value, and leave every file as it was
(tests/bad_input_checks.py classifies what happened).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from tests.bad_input_checks import check_cli, check_handled, check_raises, run_cli, snapshot
from tests.fixtures.models import TINY, N, save_tiny_source, tiny_linformer_config, tiny_source
from transformers import AutoModelForMaskedLM

from linformer_kit.models import ConvertConfig, LinformerConfig, LinformerForMaskedLM, convert_checkpoint

# --- LinformerConfig: every field checked at construction -------------------------------------------------

CONFIG_CASES = {
    "num_hidden_layers 0": ({"num_hidden_layers": 0}, r"num_hidden_layers.*\b0\b"),
    "num_hidden_layers -1": ({"num_hidden_layers": -1}, r"num_hidden_layers.*-1"),
    "hidden_size 0": ({"hidden_size": 0}, r"hidden_size.*\b0\b"),
    "hidden_size -8": ({"hidden_size": -8, "num_attention_heads": 2}, r"hidden_size.*-8"),
    "hidden_size float": ({"hidden_size": 64.0, "num_attention_heads": 2}, r"hidden_size.*64\.0"),
    "num_attention_heads 0": ({"num_attention_heads": 0}, r"num_attention_heads.*\b0\b"),
    "num_attention_heads -2": ({"num_attention_heads": -2}, r"num_attention_heads.*-2"),
    "intermediate_size 0": ({"intermediate_size": 0}, r"intermediate_size.*\b0\b"),
    "intermediate_size -1": ({"intermediate_size": -1}, r"intermediate_size.*-1"),
    "vocab_size 0": ({"vocab_size": 0}, r"vocab_size.*\b0\b"),
    "max_position_embeddings 0": ({"max_position_embeddings": 0}, r"max_position_embeddings.*\b0\b"),
    "max_position_embeddings -1": ({"max_position_embeddings": -1}, r"max_position_embeddings.*-1"),
    "type_vocab_size 0": ({"type_vocab_size": 0}, r"type_vocab_size.*\b0\b"),
    "hidden_act banana": ({"hidden_act": "banana"}, r"hidden_act.*'banana'"),
    "hidden_dropout_prob 1.5": ({"hidden_dropout_prob": 1.5}, r"hidden_dropout_prob.*1\.5"),
    "attention dropout -0.1": (
        {"attention_probs_dropout_prob": -0.1},
        r"attention_probs_dropout_prob.*-0\.1",
    ),
    "classifier_dropout 1": ({"classifier_dropout": 1.0}, r"classifier_dropout.*1\.0"),
    "layer_norm_eps 0": ({"layer_norm_eps": 0.0}, r"layer_norm_eps.*0\.0"),
    "initializer_range negative": ({"initializer_range": -0.02}, r"initializer_range.*-0\.02"),
    "pad_token_id = vocab_size": ({"vocab_size": 99, "pad_token_id": 99}, r"pad_token_id=99"),
    "pad_token_id -1": ({"pad_token_id": -1, "position_style": "bert"}, r"pad_token_id=-1"),
    "num_labels 0": ({"num_labels": 0}, r"num_labels.*\b0\b"),
    "k float": ({"projected_length": 32.0}, r"projected_length.*32\.0"),
    "k bool": ({"projected_length": True}, r"projected_length.*True"),
    "k str": ({"projected_length": "128"}, r"projected_length.*'128'"),
    "k 0": ({"projected_length": 0}, r"k=0"),
    "k -1": ({"projected_length": -1}, r"k=-1"),
    "k above n": ({"projected_length": 1000}, r"k=1000.*512"),
    "k list of wrong length": ({"projected_length": [8]}, r"1 entries.*num_hidden_layers=12"),
    "sharing E": ({"sharing": "E"}, r"sharing.*'E'"),
    "projection E": ({"projection": "E"}, r"projection.*'E'"),
    "position_style gpt": ({"position_style": "gpt"}, r"position_style.*'gpt'"),
    "layerwise with per-layer k": (
        {"sharing": "layerwise", "projected_length": [8] * 11 + [4]},
        r"layerwise.*single k",
    ),
    "mean pooling, k not dividing n": ({"projection": "mean", "projected_length": 100}, r"k=100 must divide"),
}


@pytest.mark.parametrize("case", CONFIG_CASES)
def test_linformer_config(case: str) -> None:
    kwargs, match = CONFIG_CASES[case]
    check_raises(lambda: LinformerConfig(**kwargs), ValueError, match)


# --- from_pretrained: never a silent re-initialisation ---------------------------------------------------


@pytest.fixture(scope="module")
def linformer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny headwise k=8 LinformerForMaskedLM."""
    folder = tmp_path_factory.mktemp("linformer")
    torch.manual_seed(0)
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(folder)
    return folder


def _copy(folder: Path, tmp_path: Path, name: str = "copy") -> Path:
    return Path(shutil.copytree(folder, tmp_path / name))


LOAD_CASES = {
    "sharing kv on headwise": ({"sharing": "kv"}, r"sharing='kv' \(the checkpoint has 'headwise'\)"),
    "k 4 on k 8": ({"projected_length": 4}, r"projected_length=4 \(the checkpoint has 8\)"),
    "projection mean on linear": (
        {"projection": "mean"},
        r"projection='mean' \(the checkpoint has 'linear'\)",
    ),
    "full attention on k 8": ({"projected_length": None}, r"projected_length=None \(the checkpoint has 8\)"),
}


@pytest.mark.parametrize("case", LOAD_CASES)
@pytest.mark.parametrize("loader", [LinformerForMaskedLM, AutoModelForMaskedLM], ids=["class", "auto"])
def test_from_pretrained_with_other_linformer_options(linformer_dir: Path, case: str, loader) -> None:
    kwargs, match = LOAD_CASES[case]
    check_raises(
        lambda: loader.from_pretrained(linformer_dir, **kwargs), ValueError, match, watch=[linformer_dir]
    )


def test_from_pretrained_weights_of_another_model(tmp_path: Path) -> None:
    """config.json says linformer, the weights are a RoBERTa's: every encoder weight would be random."""
    folder = tmp_path / "mixed"
    tiny_source("roberta", "ForMaskedLM").save_pretrained(folder)
    tiny_linformer_config().save_pretrained(folder)  # overwrites config.json only
    check_raises(
        lambda: LinformerForMaskedLM.from_pretrained(folder), ValueError, r"do not fit.*randomly initialised"
    )


def test_from_pretrained_truncated_weights(linformer_dir: Path, tmp_path: Path) -> None:
    folder = _copy(linformer_dir, tmp_path)
    weights = folder / "model.safetensors"
    os.truncate(weights, weights.stat().st_size // 2)
    check_raises(
        lambda: LinformerForMaskedLM.from_pretrained(folder), ValueError, r"copy.*truncated or corrupt"
    )


def test_from_pretrained_pickled_weights_only(linformer_dir: Path, tmp_path: Path) -> None:
    folder = _copy(linformer_dir, tmp_path)
    torch.save(LinformerForMaskedLM.from_pretrained(folder).state_dict(), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    check_raises(
        lambda: LinformerForMaskedLM.from_pretrained(folder), ValueError, r"no \.safetensors weights"
    )


def test_from_pretrained_without_safetensors_is_refused(linformer_dir: Path) -> None:
    call = lambda: LinformerForMaskedLM.from_pretrained(linformer_dir, use_safetensors=False)  # noqa: E731
    check_raises(call, ValueError, r"use_safetensors=False")


def test_from_pretrained_new_head_is_allowed(linformer_dir: Path) -> None:
    from transformers import AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_pretrained(linformer_dir, num_labels=3)
    assert model.config.num_labels == 3  # a new classifier on an MLM checkpoint is what finetuning does


# --- linformer convert ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def roberta_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_source(tmp_path_factory.mktemp("roberta"))


@pytest.fixture
def src(roberta_dir: Path, tmp_path: Path) -> Path:
    """A private copy of the tiny RoBERTa (a case may try to destroy it)."""
    return _copy(roberta_dir, tmp_path, "src")


def _convert(src: Path, dst: Path, *extra: object) -> list:
    return ["convert", src, dst, "--projected-length", "8", *extra]


def test_convert_into_its_own_source(src: Path, capsys) -> None:
    check_cli(["convert", src, src, "--projected-length", "8"], r"source directory", capsys, watch=[src])


def test_convert_into_its_own_source_with_overwrite(src: Path, capsys) -> None:
    check_cli(_convert(src, src, "--overwrite"), r"source directory", capsys, watch=[src])


def test_convert_into_the_folder_holding_the_source(src: Path, tmp_path: Path, capsys) -> None:
    check_cli(_convert(src, tmp_path, "--overwrite"), r"contains\) the source", capsys, watch=[tmp_path])


def test_convert_into_an_existing_file(src: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    check_cli(_convert(src, tmp_path / "notes.txt"), r"notes\.txt.*existing file", capsys, watch=[tmp_path])


def test_convert_below_a_file(src: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    check_cli(
        _convert(src, tmp_path / "notes.txt" / "out"), r"notes\.txt.*is a file", capsys, watch=[tmp_path]
    )


def test_convert_into_a_model_directory(src: Path, tmp_path: Path, capsys) -> None:
    other = save_tiny_source(tmp_path / "other", "bert", "Model")
    (other / "metrics.json").write_text("{}")
    check_cli(_convert(src, other), r"other.*not empty.*--overwrite", capsys, watch=[tmp_path])


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_convert_into_a_read_only_folder(src: Path, tmp_path: Path, capsys) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        check_cli(_convert(src, locked / "out"), r"locked.*permission denied", capsys, watch=[tmp_path])
    finally:
        locked.chmod(0o700)


def test_convert_overwrite_replaces_the_whole_directory(src: Path, tmp_path: Path, capsys) -> None:
    old = save_tiny_source(tmp_path / "dst", "bert", "Model")
    (old / "checkpoint-5").mkdir()
    code = check_cli_success(_convert(src, old, "--overwrite"), capsys)
    names = sorted(p.name for p in old.iterdir())
    config = json.loads((old / "config.json").read_text())
    ok = code == 0 and "checkpoint-5" not in names and config["model_type"] == "linformer"
    check_handled(ok, f"--overwrite left {names} (exit {code})", kind="leftover")
    assert not list(tmp_path.glob(".dst.*")), "staging folders left behind"


def check_cli_success(argv: list, capsys) -> int:
    code, escaped, _ = run_cli(argv, capsys)
    assert escaped is None, escaped
    return code


def test_convert_failure_leaves_no_half_written_directory(
    src: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copy2", disk_full)  # after model.safetensors, while copying the tokenizer
    config = ConvertConfig(source=str(src), output_dir=str(tmp_path / "dst"), projected_length=8)
    with pytest.raises(OSError, match="No space left"):
        convert_checkpoint(config)
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "src")
    check_handled(left == [], f"a failed conversion left {left}", kind="leftover")


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path.parent


SOURCE_CASES = {
    "missing": (lambda src: src.parent / "nope", r"no such directory.*nope"),
    "a file": (lambda src: src / "config.json", r"config\.json.*is a file"),
    "no config.json": (lambda src: (src / "config.json").unlink() or src, r"no config\.json"),
    "config.json not JSON": (
        lambda src: _write(src / "config.json", '{"model_type": "roberta", '),
        r"cannot read .*config\.json",
    ),
    "truncated weights": (
        lambda src: os.truncate(src / "model.safetensors", 1000) or src,
        r"src.*truncated or corrupt",
    ),
    "gpt2 model": (lambda src: _write(src / "config.json", json.dumps({"model_type": "gpt2"})), r"'gpt2'"),
    "pickled weights only": (
        lambda src: (src / "model.safetensors").rename(src / "pytorch_model.bin").parent,
        r"no \.safetensors weights",
    ),
}


@pytest.mark.parametrize("case", SOURCE_CASES)
def test_convert_bad_source(case: str, src: Path, tmp_path: Path, capsys) -> None:
    make, match = SOURCE_CASES[case]
    source = make(src)
    check_cli(_convert(source, tmp_path / "dst"), match, capsys, watch=[tmp_path])


def test_convert_source_whose_config_disagrees_with_its_weights(src: Path, tmp_path: Path, capsys) -> None:
    """config.json says roberta, the weights are a BERT's: the converted model would be random."""
    bert = tiny_source("bert", "ForMaskedLM")
    (src / "model.safetensors").unlink()
    save_file({k: v.clone() for k, v in bert.state_dict().items()}, src / "model.safetensors")
    check_cli(_convert(src, tmp_path / "dst"), r"do not fit.*randomly initialised", capsys, watch=[tmp_path])


K_CASES = {
    "0": (["--projected-length", "0"], r"k=0"),
    "-1": (["--projected-length", "-1"], r"k=-1"),
    "above n": (["--projected-length", str(N + 1)], rf"k={N + 1}"),
    "three for two layers": (["--projected-length", "8,8,8"], r"3 entries.*num_hidden_layers=2"),
    "not a number": (["--projected-length", "abc"], r"'abc'"),
    "mean, k not dividing n": (["--projected-length", "5", "--projection", "mean"], r"k=5 must divide"),
    "layerwise, two ks": (["--projected-length", "8,4", "--sharing", "layerwise"], r"layerwise.*single k"),
    "sharing E": (["--sharing", "E"], r"'E'"),
    "projection-init E": (["--projection-init", "E"], r"'E'"),
}


@pytest.mark.parametrize("case", K_CASES)
def test_convert_bad_option(case: str, src: Path, tmp_path: Path, capsys) -> None:
    extra, match = K_CASES[case]
    check_cli(["convert", src, tmp_path / "dst", *extra], match, capsys, watch=[tmp_path])


def test_source_is_byte_identical_after_every_convert(src: Path, tmp_path: Path, capsys) -> None:
    before = snapshot([src])
    check_cli_success(_convert(src, tmp_path / "dst"), capsys)
    assert snapshot([src]) == before
    assert (
        TINY["num_hidden_layers"]
        == LinformerForMaskedLM.from_pretrained(tmp_path / "dst").config.num_hidden_layers
    )


def test_convert_into_a_link_to_its_source(src: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "link").symlink_to(src, target_is_directory=True)
    check_cli(_convert(src, tmp_path / "link", "--overwrite"), r"source directory", capsys, watch=[src])
