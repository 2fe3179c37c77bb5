"""The held-out text the suite reads, from a data folder laid out as `../shared/data` (README there).

    IMDB       imdb/train.jsonl.gz (the probe's pool) and imdb/test.jsonl.gz: {"text", "label"} records
    books      gutenberg/valid.jsonl.gz + gutenberg/test.jsonl.gz: 10 whole books no distill run reads
    wikitext   wikitext/wikitext-2-raw/wiki.test.raw: articles split at their " = Title = " headings
    fidelity   passages of the books, the articles and the IMDB test reviews, and SST-2's dev sentences

Nothing here is trained on: `distill`'s long stage reads Gutenberg train and IMDB unsup only.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from pathlib import Path

# the files each task needs, relative to the data folder (checked before any model loads)
TASK_FILES: dict[str, tuple[str, ...]] = {
    "passkey": (),
    "needle": ("gutenberg/test.jsonl.gz",),
    "imdb": ("imdb/train.jsonl.gz", "imdb/test.jsonl.gz"),
    "books": ("gutenberg/valid.jsonl.gz", "gutenberg/test.jsonl.gz"),
    "wikitext": ("wikitext/wikitext-2-raw/wiki.test.raw",),
    "fidelity": ("gutenberg/valid.jsonl.gz", "gutenberg/test.jsonl.gz", "wikitext/wikitext-2-raw/wiki.test.raw",
                 "imdb/test.jsonl.gz", "sst2/dev.tsv"),
}  # fmt: skip
HEADING = re.compile(r"^ = [^=].* = $")  # a level-1 heading of WikiText (an article's title)


def read_jsonl(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def books(data: Path) -> list[str]:
    """The held-out Gutenberg books (valid, then test), whole."""
    return [
        r["text"] for split in ("valid", "test") for r in read_jsonl(data / "gutenberg" / f"{split}.jsonl.gz")
    ]


def wikitext_articles(data: Path) -> list[str]:
    """WikiText-2's test articles (raw), each from its title line to the next."""
    articles: list[list[str]] = []
    for line in (
        (data / "wikitext" / "wikitext-2-raw" / "wiki.test.raw").read_text(encoding="utf-8").splitlines()
    ):
        if HEADING.match(line):
            articles.append([])
        if articles and line.strip():
            articles[-1].append(line.strip())
    return ["\n".join(lines) for lines in articles]


def sentences(data: Path) -> list[str]:
    """SST-2's dev sentences (sst2/dev.tsv: sentence, tab, label)."""
    lines = (data / "sst2" / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]
    return [line.split("\t")[0].strip() for line in lines if line.strip()]


def reviews(data: Path) -> list[str]:
    """IMDB's test reviews."""
    return [r["text"] for r in read_jsonl(data / "imdb" / "test.jsonl.gz")]


def long_reviews(path: Path, tokenizer, count: int, above: int, seed: int = 0) -> tuple[list[str], list[int]]:
    """`count` reviews longer than `above` tokens (special tokens included), drawn with `seed` from both
    labels (the files are sorted by label), with their labels."""
    records = read_jsonl(path)
    random.Random(seed).shuffle(records)
    texts, labels = [], []
    for record in records:
        if len(tokenizer(record["text"])["input_ids"]) > above:
            texts.append(record["text"])
            labels.append(int(record["label"]))
            if len(texts) == count:
                break
    return texts, labels
