"""The suite's data folder made from Hugging Face datasets (`linformer longdocs --data hub`).

Each file the tasks read (sources.TASK_FILES) is made from a public dataset on the Hub holding that text:

    imdb/train.jsonl.gz, imdb/test.jsonl.gz   stanfordnlp/imdb, train / test: {"text", "label"} records
    gutenberg/valid.jsonl.gz, test.jsonl.gz   emozilla/pg19 (PG-19, Project Gutenberg books before 1919, as
                                              parquet), validation / test: the first 5 books of each, streamed
                                              (the train split is 11 GB and is never read)
    wikitext/wikitext-2-raw/wiki.test.raw     Salesforce/wikitext, wikitext-2-raw-v1, test: one line a row
    sst2/dev.tsv                              stanfordnlp/sst2, validation: sentence, tab, label

`hub_folder` writes the files the tasks read into a cache folder laid out as the repository's data folder, once
(`--data hub` is the Hub; a folder named hub is `--data ./hub`);
the suite then reads it as any data folder (sources.py). Each file is written whole under a temporary name and
then renamed, so a download cut short leaves nothing a later run would read. Offline, or where a dataset is
gone, `load_hub_dataset` names it, before any model loads.

The books differ from `../shared/data`'s (PG-19's held-out books, not a Gutenberg sample's), and IMDB and SST-2
are the same text: the numbers of a --data hub run compare with each other, not with the repository's tables.
"""

from __future__ import annotations

import gzip
import itertools
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

HUB = "hub"  # the --data value that reads the Hub
BOOKS_A_SPLIT = 5  # as the repository's folder: 5 validation and 5 test books


def _json_lines(fields: tuple[str, ...]) -> Callable[[Iterable[dict]], bytes]:
    def write(rows: Iterable[dict]) -> bytes:
        lines = "".join(json.dumps({f: row[f] for f in fields}, ensure_ascii=False) + "\n" for row in rows)
        return gzip.compress(lines.encode("utf-8"))

    return write


def _raw_lines(rows: Iterable[dict]) -> bytes:
    # WikiText's rows are the raw file's lines, each with its newline (blank lines as "")
    return ("\n".join(row["text"].rstrip("\n") for row in rows) + "\n").encode("utf-8")


def _tsv(rows: Iterable[dict]) -> bytes:
    return ("sentence\tlabel\n" + "".join(f"{r['sentence'].strip()}\t{r['label']}\n" for r in rows)).encode(
        "utf-8"
    )


@dataclass(frozen=True)
class HubFile:
    """A data file made from a Hub dataset: its name (NAME[:CONFIG]), split, how many records (None: all,
    else streamed) and how its records are written."""

    dataset: str
    split: str
    write: Callable[[Iterable[dict]], bytes]
    records: int | None = None


HUB_FILES: dict[str, HubFile] = {
    "imdb/train.jsonl.gz": HubFile("stanfordnlp/imdb", "train", _json_lines(("text", "label"))),
    "imdb/test.jsonl.gz": HubFile("stanfordnlp/imdb", "test", _json_lines(("text", "label"))),
    "gutenberg/valid.jsonl.gz": HubFile("emozilla/pg19", "validation", _json_lines(("text",)), BOOKS_A_SPLIT),
    "gutenberg/test.jsonl.gz": HubFile("emozilla/pg19", "test", _json_lines(("text",)), BOOKS_A_SPLIT),
    "wikitext/wikitext-2-raw/wiki.test.raw": HubFile(
        "Salesforce/wikitext:wikitext-2-raw-v1", "test", _raw_lines
    ),
    "sst2/dev.tsv": HubFile("stanfordnlp/sst2", "validation", _tsv),
}


def hub_cache() -> Path:
    """Where the made files live: beside the datasets' own cache."""
    import datasets

    return Path(datasets.config.HF_DATASETS_CACHE) / "linformer-kit-longdocs"


def hub_folder(files: Iterable[str], folder: Path | None = None) -> Path:
    """A data folder holding `files` (paths of sources.TASK_FILES), each made from its Hub dataset unless
    already there; ValueError names a dataset that cannot be read (offline, gone)."""
    from linformer_kit.train.data import load_hub_dataset

    folder = folder or hub_cache()
    for name in sorted(set(files)):
        target = folder / name
        if target.is_file():
            continue
        made = HUB_FILES[name]
        streamed = made.records is not None
        what = f"data {HUB} ({name})"
        rows = load_hub_dataset(made.dataset, what, split=made.split, streaming=streamed)
        try:  # a stream fails while it is read, after load_hub_dataset's own check
            content = made.write(itertools.islice(rows, made.records) if streamed else rows)
        except (OSError, ValueError) as error:  # ConnectionError is an OSError
            raise ValueError(
                f"{what}: reading {made.dataset!r} failed: {type(error).__name__}: {error}"
            ) from error
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
        try:
            partial.write_bytes(content)
            partial.replace(target)  # whole or absent
        finally:
            partial.unlink(missing_ok=True)
    return folder
