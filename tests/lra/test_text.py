"""LRA Text: IMDB reviews as one-line TSV cells of at most max_bytes UTF-8 bytes, cut between characters."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from linformer_kit.lra import TextConfig, prepare_text
from linformer_kit.lra.text import clean, truncate_utf8

TRAIN = [
    {"text": "Great film.\tWould watch\nagain.\r\nReally.", "label": 1},
    {"text": "Caf\u00e9 " * 4, "label": 0},  # 'é' is 2 bytes: a cut after "Caf" + 1 byte falls inside it
    {"text": "\u20ac" * 5, "label": 0},  # '€' is 3 bytes
    {"text": "Bad <br /><br />acting \U0001f600.", "label": 0},  # the emoji is 4 bytes
]
TEST = [
    {"text": "ok", "label": 1},
    {"text": "x" * 40, "label": 1},
    {"text": "\U0001f600" * 3, "label": 0},
]


def write_jsonl_gz(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for number, record in enumerate(records):
            f.write(json.dumps({"id": f"{path.stem}_{number}", **record}) + "\n")


@pytest.fixture
def imdb(tmp_path: Path) -> Path:
    folder = tmp_path / "imdb"
    folder.mkdir()
    write_jsonl_gz(folder / "train.jsonl.gz", TRAIN)
    write_jsonl_gz(folder / "test.jsonl.gz", TEST)
    return folder


def read_rows(path: Path) -> list[tuple[str, int]]:
    lines = path.read_bytes().decode("utf-8").split("\n")  # strict: a broken character raises here
    assert lines[0] == "Source\tTarget"
    assert lines[-1] == ""
    rows = [line.split("\t") for line in lines[1:-1]]
    assert all(len(row) == 2 for row in rows)
    return [(source, int(target)) for source, target in rows]


@pytest.mark.parametrize(
    ("text", "max_bytes", "expected"),
    [
        ("abc", 3, "abc"),
        ("abc", 2, "ab"),
        ("a\u00e9", 2, "a"),  # 'é' = 2 bytes: does not fit whole
        ("a\u00e9", 3, "a\u00e9"),
        ("\u20ac\u20ac", 5, "\u20ac"),  # '€' = 3 bytes
        ("\u20ac\u20ac", 6, "\u20ac\u20ac"),
        ("x\U0001f600", 4, "x"),  # emoji = 4 bytes
        ("\U0001f600", 3, ""),
    ],
)
def test_truncation_keeps_whole_characters(text: str, max_bytes: int, expected: str) -> None:
    assert truncate_utf8(text, max_bytes) == expected


def test_tabs_and_line_breaks_become_spaces() -> None:
    assert clean("a\tb\nc\r\nd", 100) == "a b c  d"


def test_prepare_writes_one_line_per_review(imdb: Path, tmp_path: Path) -> None:
    out = tmp_path / "text"
    result = prepare_text(TextConfig(imdb=str(imdb), output_dir=str(out), max_bytes=12))
    assert result.files == {"train": out / "train.tsv", "test": out / "test.tsv"}
    train, test = read_rows(out / "train.tsv"), read_rows(out / "test.tsv")
    assert [label for _, label in train] == [r["label"] for r in TRAIN]
    assert [label for _, label in test] == [r["label"] for r in TEST]
    assert [source for source, _ in train] == [
        "Great film. ",
        "Caf\u00e9 Caf\u00e9 ",
        "\u20ac" * 4,
        "Bad <br /><b",
    ]
    assert [source for source, _ in test] == ["ok", "x" * 12, "\U0001f600" * 3]
    for (source, _), record in zip(train + test, TRAIN + TEST):
        assert len(source.encode("utf-8")) <= 12
        assert source == clean(record["text"], 12)
    assert sorted(p.name for p in out.iterdir()) == ["label_balance.json", "test.tsv", "train.tsv"]


def test_a_cut_inside_a_multibyte_character_drops_it(imdb: Path, tmp_path: Path) -> None:
    out = tmp_path / "text"
    prepare_text(TextConfig(imdb=str(imdb), output_dir=str(out), max_bytes=4))
    train, test = read_rows(out / "train.tsv"), read_rows(out / "test.tsv")
    assert [source for source, _ in train] == ["Grea", "Caf", "\u20ac", "Bad "]  # 'é' is bytes 4-5, '€' 4-6
    assert [source for source, _ in test] == ["ok", "xxxx", "\U0001f600"]  # the emoji fits exactly


def test_label_balance(imdb: Path, tmp_path: Path) -> None:
    out = tmp_path / "text"
    result = prepare_text(TextConfig(imdb=str(imdb), output_dir=str(out)))
    balance = json.loads((out / "label_balance.json").read_text())
    assert balance == result.balance
    assert balance["majority_class"] == 0
    assert balance["splits"]["train"] == {"rows": 4, "counts": {"0": 3, "1": 1}, "majority_accuracy": 0.75}
    assert balance["splits"]["test"]["majority_accuracy"] == pytest.approx(1 / 3)


# --- the config ------------------------------------------------------------------------------------------


def test_missing_imdb_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"imdb: '.*nowhere' is not a directory"):
        TextConfig(imdb=str(tmp_path / "nowhere"), output_dir=str(tmp_path / "out"))


def test_imdb_folder_without_the_test_file(imdb: Path, tmp_path: Path) -> None:
    (imdb / "test.jsonl.gz").unlink()
    with pytest.raises(ValueError, match=r"holds no test.jsonl.gz"):
        TextConfig(imdb=str(imdb), output_dir=str(tmp_path / "out"))


def test_imdb_file_without_labels(imdb: Path, tmp_path: Path) -> None:
    write_jsonl_gz(imdb / "train.jsonl.gz", [{"text": "no label"}])
    with pytest.raises(ValueError, match=r"train.jsonl.gz', line 1: has no field \['label'\]"):
        TextConfig(imdb=str(imdb), output_dir=str(tmp_path / "out"))


def test_a_bad_label_further_in_is_named_by_its_line(imdb: Path, tmp_path: Path) -> None:
    config = TextConfig(imdb=str(imdb), output_dir=str(tmp_path / "out"))
    write_jsonl_gz(imdb / "test.jsonl.gz", [*TEST, {"text": "unlabeled", "label": -1}])
    with pytest.raises(ValueError, match=r"test.jsonl.gz', line 4: 'label' must be 0 or 1, got -1"):
        prepare_text(config)
    assert not (tmp_path / "out" / "train.tsv").exists()  # nothing half-written stays
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("max_bytes", [0, -1, 2.5, True])
def test_bad_max_bytes(max_bytes: object, imdb: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rf"max_bytes must be an int >= 1, got {max_bytes!r}"):
        TextConfig(imdb=str(imdb), output_dir=str(tmp_path / "out"), max_bytes=max_bytes)  # type: ignore[arg-type]


def test_output_dir_inside_the_input(imdb: Path) -> None:
    with pytest.raises(ValueError, match="is inside the imdb folder"):
        TextConfig(imdb=str(imdb), output_dir=str(imdb / "lra"))
    with pytest.raises(ValueError, match="is inside the imdb folder"):
        TextConfig(imdb=str(imdb), output_dir=str(imdb))
