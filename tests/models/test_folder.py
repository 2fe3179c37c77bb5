"""The one model-folder writer (models/folder.py) and the rules it applies (models/config_rules.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import transformers
from tests.fixtures.models import N, tiny_linformer_config
from tests.fixtures.tokenizers import write_tokenizer

import linformer_kit.models.folder as folder
from linformer_kit.models import LinformerForMaskedLM, LinformerModel
from linformer_kit.models.config_rules import auto_class_of, head_of, input_limit
from linformer_kit.models.folder import check_target_dir, limit_tokenizer, portable, write_model_dir
from linformer_kit.models.folder_checks import read_config_json

NO_LIMIT = int(1e30)  # a tokenizer without a limit of its own (transformers' VERY_LARGE_INTEGER)


@pytest.mark.parametrize(
    ("architectures", "head"),
    [
        (["BertForMaskedLM"], "ForMaskedLM"),
        (["RobertaForSequenceClassification"], "ForSequenceClassification"),
        (["LinformerForTokenClassification"], "ForTokenClassification"),
        (["RobertaPreLayerNormModel"], "Model"),
        (["BertForPreTraining"], "Model"),  # a head no reader has: the encoder
        (["BertForPreTraining", "BertForMaskedLM"], "ForMaskedLM"),  # the first that names one
        ([], "Model"),
        (None, "Model"),
    ],
)
def test_head_of_reads_the_architectures(architectures, head) -> None:
    assert head_of({"model_type": "bert", "architectures": architectures}) == head
    config = transformers.BertConfig(architectures=architectures)
    assert head_of(config) == head  # a config object reads the same
    auto = "AutoModel" if head == "Model" else f"AutoModel{head}"
    assert auto_class_of(config) is getattr(transformers, auto)


def test_head_of_a_saved_linformer_is_its_class_s(tmp_path: Path) -> None:
    assert head_of(tiny_linformer_config()) == "Model"  # a config not saved from a model names no class
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(tmp_path)
    assert head_of(read_config_json(tmp_path)) == "ForMaskedLM"  # config.json, as save_pretrained wrote it


@pytest.mark.parametrize(
    ("own", "exact", "limit"),
    [
        (NO_LIMIT, False, N),
        (16, False, 16),
        (64, False, N),
        (None, False, N),
        (16, True, N),
        (NO_LIMIT, True, N),
    ],
)
def test_input_limit_caps_a_limit_at_the_longest_input_or_sets_it_exactly(own, exact, limit) -> None:
    assert input_limit(own, N, exact) == limit


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A folder a model was made from: tokenizer files (no limit of their own) and a sentence-transformers pipeline."""
    folder = tmp_path / "source"
    folder.mkdir()
    write_tokenizer(folder)
    (folder / "modules.json").write_text(
        json.dumps([
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        ])
    )  # fmt: skip
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_mean_tokens": True}))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 16}))
    return folder


def _saved_limit(folder: Path) -> int:
    return json.loads((folder / "tokenizer_config.json").read_text())["model_max_length"]


def _max_seq_length(folder: Path) -> int:
    return json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]


def test_a_source_s_tokenizer_files_are_copied_and_limited(source: Path, tmp_path: Path) -> None:
    model = LinformerModel(tiny_linformer_config())
    out = write_model_dir(model, tmp_path / "out", source=source)
    assert out == tmp_path / "out"
    assert {"config.json", "model.safetensors", "vocab.txt", "tokenizer.json", "modules.json"} <= {
        p.name for p in out.iterdir()
    }
    assert (out / "vocab.txt").read_bytes() == (source / "vocab.txt").read_bytes()  # copied as they are
    assert _saved_limit(out) == N  # no limit of its own: the model's longest input
    assert transformers.AutoTokenizer.from_pretrained(out).model_max_length == N
    assert _max_seq_length(out) == 16  # the pipeline's own, below the longest input
    assert (out / "1_Pooling" / "config.json").is_file()
    assert not any((out / name).exists() for name in ("metrics.json", "README.md"))  # none given
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left

    settings = json.loads((source / "tokenizer_config.json").read_text())
    (source / "tokenizer_config.json").write_text(json.dumps({**settings, "model_max_length": 8}))
    kept = write_model_dir(model, tmp_path / "kept", source=source)
    assert _saved_limit(kept) == 8  # its own limit, below the longest input, kept
    exact = write_model_dir(model, tmp_path / "exact", source=source, max_length=N)
    assert (_saved_limit(exact), _max_seq_length(exact)) == (N, N)  # made for a length: exactly it


def test_a_tokenizer_object_a_run_folder_metrics_and_card(source: Path, tmp_path: Path) -> None:
    """distill's way: the tokenizer it read, into its run folder (stage checkpoints kept), with its record."""
    run = tmp_path / "run"
    (run / "end-to-end").mkdir(parents=True)
    (run / "end-to-end" / "stage.json").write_text("{}")
    tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    model = LinformerForMaskedLM(tiny_linformer_config())
    metrics = {"fidelity": {"drop-in": 0.9}, "config": {"teacher": str(source.resolve()), "seed": 42}}
    write_model_dir(
        model, run, source=source, tokenizer=tokenizer, metrics=metrics, card="# card\n", staged=False
    )
    assert (run / "end-to-end" / "stage.json").is_file()  # written into the folder as it is
    assert type(transformers.AutoModelForMaskedLM.from_pretrained(run)) is LinformerForMaskedLM
    assert transformers.AutoTokenizer.from_pretrained(run).model_max_length == N
    assert _max_seq_length(run) == 16  # the pipeline carried
    written = json.loads((run / "metrics.json").read_text())
    assert written == portable(metrics)
    assert not os.path.isabs(written["config"]["teacher"])  # no absolute path of this machine
    assert (run / "README.md").read_text(encoding="utf-8") == "# card\n"


def test_a_failed_write_leaves_nothing(source: Path, tmp_path: Path, monkeypatch) -> None:
    def fail(*args) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(folder, "carry_sentence_transformers_files", fail)
    with pytest.raises(OSError, match="disk full"):
        write_model_dir(LinformerModel(tiny_linformer_config()), tmp_path / "out", source=source)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["source"]  # no output_dir, no staging folder


def test_check_target_dir_refuses_a_full_folder_and_the_source(source: Path, tmp_path: Path) -> None:
    check_target_dir(source, tmp_path / "new", overwrite=False)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "config.json").write_text("{}")
    with pytest.raises(ValueError, match=r"is not empty \(it holds config.json\).*--overwrite"):
        check_target_dir(source, tmp_path / "full", overwrite=False)
    check_target_dir(source, tmp_path / "full", overwrite=True)
    for target in (source, tmp_path):  # the source, or a folder holding it: even with overwrite
        with pytest.raises(ValueError, match="is \\(or contains\\) the source directory"):
            check_target_dir(source, target, overwrite=True)


def test_limit_tokenizer_gives_a_tokenizer_the_model_s_longest_input(source: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    assert tokenizer.model_max_length == NO_LIMIT
    limit_tokenizer(tokenizer, tiny_linformer_config())
    assert tokenizer.model_max_length == N
    tokenizer.model_max_length = 8
    limit_tokenizer(tokenizer, tiny_linformer_config())
    assert tokenizer.model_max_length == 8  # its own, shorter limit kept
    limit_tokenizer(tokenizer, transformers.BertConfig(max_position_embeddings=4))
    assert tokenizer.model_max_length == 8  # not a Linformer (no max_seq_len): its own limit kept
