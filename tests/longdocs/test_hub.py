"""`longdocs --data hub` (longdocs/hub.py): the data folder made from Hub datasets, and its refusal offline."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import datasets
import huggingface_hub.constants
import pytest

from linformer_kit.longdocs import hub, sources
from linformer_kit.longdocs.config import LongDocsConfig

# what each Hub dataset holds, in its own columns (a few rows)
ROWS = {
    ("stanfordnlp/imdb", "test"): [{"text": "A fine film.", "label": 1}, {"text": "Dull.", "label": 0}],
    ("stanfordnlp/imdb", "train"): [{"text": "Good.", "label": 1}],
    ("emozilla/pg19", "validation"): [
        {"text": f"Book {i}.", "short_book_title": "t", "url": "u"} for i in range(7)
    ],
    ("emozilla/pg19", "test"): [
        {"text": f"Test book {i}.", "short_book_title": "t", "url": "u"} for i in range(7)
    ],
    ("Salesforce/wikitext:wikitext-2-raw-v1", "test"): [
        {"text": ""},
        {"text": " = First = \n"},
        {"text": ""},
        {"text": " One paragraph . \n"},
        {"text": " = = Part = = \n"},
        {"text": " Two . \n"},
        {"text": " = Second = \n"},
        {"text": " Three . \n"},
    ],
    ("stanfordnlp/sst2", "validation"): [{"idx": 0, "sentence": "it 's good . ", "label": 1}],
}


def _fake_load(calls: list):
    def load(source: str, what: str, split: str, streaming: bool):
        calls.append((source, split, streaming))
        return iter(ROWS[source, split]) if streaming else ROWS[source, split]

    return load


def test_each_file_is_made_from_its_dataset_once_and_reads_as_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list = []
    monkeypatch.setattr("linformer_kit.train.data.load_hub_dataset", _fake_load(calls))
    folder = hub.hub_folder(hub.HUB_FILES, tmp_path / "cache")
    assert set(hub.HUB_FILES) == {f for files in sources.TASK_FILES.values() for f in files}
    assert sources.reviews(folder) == ["A fine film.", "Dull."]
    assert sources.books(folder) == [f"Book {i}." for i in range(5)] + [f"Test book {i}." for i in range(5)]
    assert ("emozilla/pg19", "test", True) in calls  # streamed: the 11 GB train split is never read
    assert sources.wikitext_articles(folder) == [
        "= First =\nOne paragraph .\n= = Part = =\nTwo .",
        "= Second =\nThree .",
    ]
    assert sources.sentences(folder) == ["it 's good ."]
    with gzip.open(folder / "imdb/train.jsonl.gz", "rt") as f:
        assert [json.loads(line) for line in f] == [{"text": "Good.", "label": 1}]
    made = len(calls)
    hub.hub_folder(hub.HUB_FILES, tmp_path / "cache")
    assert len(calls) == made  # already there: nothing read again
    assert not list((tmp_path / "cache").rglob("*.partial"))


def test_a_download_cut_short_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(source: str, what: str, split: str, streaming: bool):
        def rows():
            yield {"text": "Book 0."}
            raise ConnectionError("cut")

        return rows()

    monkeypatch.setattr("linformer_kit.train.data.load_hub_dataset", broken)
    with pytest.raises(
        ValueError,
        match=r"data hub \(gutenberg/test.jsonl.gz\): reading 'emozilla/pg19' failed: ConnectionError: cut",
    ):
        hub.hub_folder(["gutenberg/test.jsonl.gz"], tmp_path)
    assert list(tmp_path.rglob("*")) == []


def test_offline_the_dataset_is_named_before_any_model_loads(
    tmp_path: Path, tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "cache")
    config = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "out"), chunk_length=32,
                            data="hub", tasks=("imdb",))  # fmt: skip
    with pytest.raises(
        ValueError, match=r"data hub \(imdb/test.jsonl.gz\): cannot load 'stanfordnlp/imdb'.*Couldn't reach"
    ):
        config.check_files()
    assert not (tmp_path / "out" / "longdocs.json").exists()
