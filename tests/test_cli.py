"""`linformer`: `--version`, and every error on stderr with exit code 2 as `linformer <verb>: error: ...`."""

from __future__ import annotations

from pathlib import Path

import pytest

import linformer_kit
from linformer_kit.cli.main import main


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"linformer-kit {linformer_kit.__version__} (torch ")


def test_unknown_verb(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["pretrian", "--train", "x"])
    assert exit_info.value.code == 2
    assert "linformer: error: argument VERB: invalid choice: 'pretrian'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["pretrain", "--sharing", "diagonal"],
            "linformer pretrain: error: argument --sharing: invalid choice",
        ),
        (
            ["pretrain", "--full-attention"],
            "linformer pretrain: error: unrecognized arguments: --full-attention",
        ),
        (["finetune", "--max-steps", "ten"], "linformer finetune: error: argument --max_steps/--max-steps"),
        (["convert", "src-only"], "linformer convert: error: the following arguments are required: DST"),
        (["benchmark", "--dtype", "float64"], "linformer benchmark: error: argument --dtype: invalid choice"),
        (["spectrum", "model"], "linformer spectrum: error: the following arguments are required: --text"),
    ],
)
def test_usage_errors_go_to_stderr_with_code_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""
    if argv[0] in ("pretrain", "finetune"):  # generated parsers: a one-line usage, not every Trainer option
        assert len(captured.err.splitlines()) == 2


@pytest.mark.parametrize(
    ("verb", "argv", "message"),
    [
        ("pretrain", ["--train", "{tmp}/missing.txt", "--output-dir", "{tmp}/out"], "train: no such file or folder"),
        ("finetune", ["--model", "{tmp}", "--dataset", "glue:sst2", "--output-dir", "{tmp}/out"],
         "model: '{tmp}' is not a model directory"),
        ("spectrum", ["{tmp}", "--text", "{tmp}/t.txt", "--output-dir", "{tmp}/out", "--keep", "2"], "keep=2.0"),
        ("benchmark", ["--seq-lens", "0", "--output-dir", "{tmp}/out"], "seq_lens must be a non-empty list"),
    ],
)  # fmt: skip
def test_bad_values_go_to_stderr_with_code_2(
    verb: str, argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    assert main([verb, *argv]) == 2
    captured = capsys.readouterr()
    assert f"linformer {verb}: error: {message.format(tmp=tmp_path)}" in captured.err
    assert captured.out == ""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["pretrain", "--projected-lenght", "64"], "(--projected-lenght: did you mean --projected-length?)"),
        (["pretrain", "--seq_lne", "64"], "(--seq_lne: did you mean --seq_len?)"),  # the spelling given
        (["pretrain", "--batch-sise", "4"], "did you mean --batch-size?"),  # an alias
        (["finetune", "--modle", "x"], "(--modle: did you mean --model?)"),
        (["convert", "a", "b", "--shareing", "kv"], "(--shareing: did you mean --sharing?)"),
        (["benchmark", "--seq-len", "512", "--output-dir", "x"], "(--seq-len: did you mean --seq-lens?)"),
        (["spectrum", "m", "--txt", "t.txt"], "(--txt: did you mean --text?)"),
        (["reproduce", "r.yaml", "--dry-rn"], "(--dry-rn: did you mean --dry-run?)"),
        (["lra", "prepare", "listops", "--output-dir", "x", "--sede", "1"], "(--sede: did you mean --seed?)"),
    ],
)
def test_a_misspelled_flag_gets_a_suggestion(
    argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"linformer {argv[0]}: error: unrecognized arguments: " in err
    assert suggestion in err


def test_a_flag_with_nothing_near_gets_no_suggestion(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["pretrain", "--xyzzy", "1"])
    assert capsys.readouterr().err.rstrip().endswith("unrecognized arguments: --xyzzy 1")
