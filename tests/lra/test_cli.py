"""`linformer lra prepare listops | text`: generated from the configs, end to end, errors with status 2."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest
from transformers import HfArgumentParser

from linformer_kit.cli.arguments import parse_config
from linformer_kit.cli.lra import build_parser
from linformer_kit.cli.main import main
from linformer_kit.lra import ListOpsConfig, TextConfig

LISTOPS = ["lra", "prepare", "listops", "--train-size", "3", "--val-size", "2", "--test-size", "2"]


@pytest.fixture
def imdb(tmp_path: Path) -> Path:
    folder = tmp_path / "imdb"
    folder.mkdir()
    for split, labels in (("train", (0, 1, 1)), ("test", (1, 0))):
        with gzip.open(folder / f"{split}.jsonl.gz", "wt", encoding="utf-8") as f:
            for label in labels:
                f.write(
                    json.dumps({"text": f"review\t{split} {label} \u00e9\u00e9\u00e9", "label": label}) + "\n"
                )
    return folder


@pytest.mark.parametrize(("task", "config_class"), [("listops", ListOpsConfig), ("text", TextConfig)])
def test_every_field_is_a_flag_of_the_task(task: str, config_class: type) -> None:
    parser = build_parser(task)
    assert isinstance(parser, HfArgumentParser)
    assert parser.dataclass_types == [config_class]
    for field in dataclasses.fields(config_class):
        assert f"--{field.name}" in parser._option_string_actions
        assert f"--{field.name.replace('_', '-')}" in parser._option_string_actions


def test_both_spellings_and_the_defaults(tmp_path: Path) -> None:
    config = parse_config(build_parser("listops"), ["--output_dir", str(tmp_path), "--train_size", "7"])
    assert config == ListOpsConfig(output_dir=str(tmp_path), train_size=7)
    assert (config.seed, config.val_size, config.test_size) == (0, 2000, 2000)


def test_listops_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "listops"
    assert main([*LISTOPS, "--output-dir", str(out), "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    for name, rows in (("basic_train.tsv", 3), ("basic_val.tsv", 2), ("basic_test.tsv", 2)):
        lines = (out / name).read_text().splitlines()
        assert lines[0] == "Source\tTarget"
        assert len(lines) == 1 + rows
        assert f"wrote {out / name}" in printed
    assert "train: 3 rows, labels 0:" in printed
    assert json.loads((out / "label_balance.json").read_text())["splits"]["val"]["rows"] == 2


def test_text_end_to_end(imdb: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "text"
    assert (
        main(["lra", "prepare", "text", "--imdb", str(imdb), "--output-dir", str(out), "--max-bytes", "14"])
        == 0
    )
    lines = (out / "train.tsv").read_text(encoding="utf-8").splitlines()
    assert lines == ["Source\tTarget", "review train 0\t0", "review train 1\t1", "review train 1\t1"]
    assert (out / "test.tsv").read_text(encoding="utf-8").splitlines()[1:] == [
        "review test 1 \t1",
        "review test 0 \t0",
    ]
    assert f"wrote {out / 'label_balance.json'}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--train-size", "0"], "train_size must be an int >= 1, got 0"),
        (["--seed", "1", "--val-size", "-2"], "val_size must be an int >= 1, got -2"),
    ],
)
def test_bad_value_is_status_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lra", "prepare", "listops", "--output-dir", str(tmp_path), *argv]) == 2
    assert f"linformer lra: error: {message}" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # refused before any work


def test_missing_imdb_folder_is_status_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "lra",
        "prepare",
        "text",
        "--imdb",
        str(tmp_path / "nowhere"),
        "--output-dir",
        str(tmp_path / "o"),
    ]
    assert main(argv) == 2
    assert "linformer lra: error: imdb: " in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["lra"], "the following arguments are required: COMMAND, TASK"),
        (["lra", "prepare", "images"], "argument TASK: invalid choice: 'images'"),
        (["lra", "make", "listops"], "argument COMMAND: invalid choice: 'make'"),
        (["lra", "prepare", "listops"], "the following arguments are required: --output_dir/--output-dir"),
        (["lra", "prepare", "text", "--output-dir", "o"], "the following arguments are required: --imdb"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_help_of_a_task(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["lra", "prepare", "text", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "usage: linformer lra prepare text --imdb DIR --output-dir DIR [--max-bytes 4000]" in text
    assert "UTF-8 bytes kept of each review (LRA: 4000) (default: 4000)" in text
