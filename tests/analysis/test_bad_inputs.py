"""Bad input to `linformer spectrum` (issue-13 sweep): a clear error, before the model loads when it can be.

Cases marked `before_load` fail if the model is loaded at all: options, text and output directory are
checked by `SpectrumConfig` before any weight is read.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

import linformer_kit.analysis.spectrum as spectrum_module
from tests.bad_input_checks import WorkStarted, check_cli, check_handled, run_cli
from tests.fixtures.tokenizers import build_tiny_tokenizer


def _argv(model: Path, text: Path, out: Path, *extra: object) -> list:
    return ["spectrum", model, "--text", text, "--output-dir", out, "--seq-len", "16", "--max-inputs", "2",
            "--index", "4", *extra]  # fmt: skip


@pytest.fixture
def before_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading the model is a failure: the error had to come first."""

    def loaded(*args, **kwargs):
        raise WorkStarted("the model was loaded before the bad input was reported")

    monkeypatch.setattr(spectrum_module, "load_encoder", loaded)


OPTIONS = {
    "keep 0": (["--keep", "0"], r"keep.*\b0"),
    "keep negative": (["--keep", "-0.5"], r"keep.*-0\.5"),
    "keep above 1": (["--keep", "1.5"], r"keep.*1\.5"),
    "keep nan": (["--keep", "nan"], r"keep.*nan"),
    "index 0": (["--index", "0"], r"index.*\b0\b"),
    "index -1": (["--index", "-1"], r"index.*-1"),
    "index above the curve": (["--index", "99"], r"index=99.*16"),
    "seq-len 0": (["--seq-len", "0"], r"seq_len.*\b0\b"),
    "seq-len 1": (["--seq-len", "1"], r"seq_len.*\b1\b"),
    "seq-len above the model's": (["--seq-len", "999"], r"seq_len=999.*32"),
    "max-inputs 0": (["--max-inputs", "0"], r"max_inputs.*\b0\b"),
    "batch-size 0": (["--batch-size", "0"], r"batch_size.*\b0\b"),
    "rank 0": (["--method", "randomized", "--rank", "0"], r"rank.*\b0\b"),
    "rank -1": (["--method", "randomized", "--rank", "-1"], r"rank.*-1"),
    "threshold 0": (["--thresholds", "0"], r"threshold.*\b0"),
    "threshold 1.5": (["--thresholds", "0.9", "1.5"], r"threshold.*1\.5"),
    "threshold nan": (["--thresholds", "nan"], r"threshold.*nan"),
    "device banana": (["--device", "banana"], r"device.*'banana'"),
    "method svd": (["--method", "svd"], r"'svd'"),
}


@pytest.mark.parametrize("case", OPTIONS)
def test_spectrum_option(
    case: str, before_load: None, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    extra, match = OPTIONS[case]
    argv = _argv(tiny_roberta_dir, text_file, tmp_path / "out", *extra)
    check_cli(argv, match, capsys, watch=[tmp_path, tiny_roberta_dir, text_file])


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is there")
def test_spectrum_cuda_without_cuda(
    before_load: None, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    argv = _argv(tiny_roberta_dir, text_file, tmp_path / "out", "--device", "cuda")
    check_cli(argv, r"device.*'cuda'.*not available", capsys, watch=[tmp_path])


TEXTS = {
    "missing": (None, r"text.*nope\.txt"),
    "zero-byte": (b"", r"text.*empty"),
    "whitespace only": (b"\n\n   \n", r"text.*no text"),
    "not UTF-8": ("the cat\n\ncaf\xe9 au lait\n".encode("latin-1"), r"text.*line 3.*not UTF-8"),
    "binary": (b"\x7fELF\x02\x01\x00\x00" + bytes(range(256)), r"text.*binary"),
}


JSON_TEXTS = {
    "a table": ('text,label\n"hello",1\n', r"text_file.*is a table; spectrum reads text"),
    "broken JSON line": ('{"text": "a"}\n{"text": \n', r"text_file.*line 2.*not valid JSON"),
    "no text field": ('{"body": "a"}\n', r"text_file.*line 1.*no field \['text'\]"),
}


@pytest.mark.parametrize("case", JSON_TEXTS)
def test_spectrum_bad_json_records(
    case: str, before_load: None, tiny_roberta_dir: Path, tmp_path: Path, capsys
) -> None:
    content, match = JSON_TEXTS[case]
    text = tmp_path / ("docs.csv" if case == "a table" else "docs.jsonl")
    text.write_text(content)
    check_cli(_argv(tiny_roberta_dir, text, tmp_path / "out"), match, capsys, watch=[tmp_path])


@pytest.mark.parametrize("case", TEXTS)
def test_spectrum_bad_text(
    case: str, before_load: None, tiny_roberta_dir: Path, tmp_path: Path, capsys
) -> None:
    content, match = TEXTS[case]
    text = tmp_path / "nope.txt"
    if content is not None:
        text.write_bytes(content)
    check_cli(_argv(tiny_roberta_dir, text, tmp_path / "out"), match, capsys, watch=[tmp_path])


def test_spectrum_text_is_a_directory(
    before_load: None, tiny_roberta_dir: Path, tmp_path: Path, capsys
) -> None:
    check_cli(
        _argv(tiny_roberta_dir, tmp_path, tmp_path / "out"), r"text.*directory", capsys, watch=[tmp_path]
    )


def test_spectrum_output_dir_is_a_file(
    before_load: None, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    check_cli(
        _argv(tiny_roberta_dir, text_file, target), r"notes\.txt.*existing file", capsys, watch=[tmp_path]
    )


def test_spectrum_output_dir_below_a_file(
    before_load: None, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    argv = _argv(tiny_roberta_dir, text_file, tmp_path / "notes.txt" / "out")
    check_cli(argv, r"notes\.txt.*is a file", capsys, watch=[tmp_path])


# --- the model ------------------------------------------------------------------------------------------


def _model_copy(model: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(model, tmp_path / "model"))


def _linformer_with_k(tmp_path: Path) -> Path:
    from tests.fixtures.models import save_tiny_linformer

    return save_tiny_linformer(tmp_path / "model", build_tiny_tokenizer(max_length=32))  # k = 8


def _edit(model: Path, tmp_path: Path, action: str) -> Path:
    folder = _model_copy(model, tmp_path)
    if action == "no config":
        (folder / "config.json").unlink()
    elif action == "no tokenizer":
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (folder / name).unlink()
    elif action == "pickled":
        from safetensors.torch import load_file

        torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
        (folder / "model.safetensors").unlink()
    elif action == "truncated":
        os.truncate(folder / "model.safetensors", 600)
    elif action == "gpt2 config":
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    return folder


MODELS = {
    "missing": (lambda m, t: t / "nope", r"model.*nope", True),
    "a file": (lambda m, t: m / "config.json", r"model.*is a file", True),
    "no config.json": (lambda m, t: _edit(m, t, "no config"), r"model.*no config\.json", True),
    "no tokenizer": (lambda m, t: _edit(m, t, "no tokenizer"), r"model.*no tokenizer files", True),
    "a Linformer with k": (lambda m, t: _linformer_with_k(t), r"projected_length=8.*full", True),
    "pickled weights only": (lambda m, t: _edit(m, t, "pickled"), r"model.*no \.safetensors weights", True),
    "truncated weights": (lambda m, t: _edit(m, t, "truncated"), r"model.*truncated or corrupt", False),
    "config.json of another type": (lambda m, t: _edit(m, t, "gpt2 config"), r"do not fit", False),
}


@pytest.mark.parametrize("case", MODELS)
def test_spectrum_bad_model(
    case: str, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys, request: pytest.FixtureRequest
) -> None:
    make, match, config_error = MODELS[case]
    model = make(tiny_roberta_dir, tmp_path)
    if config_error:
        request.getfixturevalue("before_load")
    check_cli(_argv(model, text_file, tmp_path / "out"), match, capsys, watch=[tmp_path, tiny_roberta_dir])


def test_spectrum_default_index_fits_a_short_model(
    tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    """The paper's index 128 does not exist on a 16-token curve: the default must still work."""
    argv = ["spectrum", tiny_roberta_dir, "--text", text_file, "--output-dir", tmp_path / "out", "--seq-len", "16",
            "--max-inputs", "2"]  # fmt: skip
    code, escaped, output = run_cli(argv, capsys)
    ok = escaped is None and code == 0
    if ok:
        index = json.loads((tmp_path / "out" / "spectrum.json").read_text())["at_index"]["index"]
        ok = 1 <= index < 16
    check_handled(
        ok, f"default --index on 16 tokens: exit {code}, {escaped!r}, {output[-300:]}", kind="traceback"
    )
