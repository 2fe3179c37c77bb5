"""The held-out text the suite reads, from a data folder laid out as `../shared/data` (README there).

    IMDB       imdb/train.jsonl.gz (the probe's pool) and imdb/test.jsonl.gz: {"text", "label"} records
    books      gutenberg/valid.jsonl.gz + gutenberg/test.jsonl.gz: 10 whole books no distill run reads
    wikitext   wikitext/wikitext-2-raw/wiki.test.raw: articles split at their " = Title = " headings
    paragraphs the same file's paragraphs (its lines that are not headings), each read whole
    fidelity   passages of the books, the articles and the IMDB test reviews, and SST-2's dev sentences
    documents  the user's own (`--documents`): JSON lines (a `text` a record) or text files (a file each)

Nothing here is trained on: `distill`'s long stage reads Gutenberg train and IMDB unsup only.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import zlib
from pathlib import Path

# the files each task needs, relative to the data folder (checked before any model loads)
TASK_FILES: dict[str, tuple[str, ...]] = {
    "passkey": (),
    "access-code": (),
    "documents": (),  # --documents, checked apart (`check_documents`)
    "needle": ("gutenberg/test.jsonl.gz",),
    "imdb": ("imdb/train.jsonl.gz", "imdb/test.jsonl.gz"),
    "books": ("gutenberg/valid.jsonl.gz", "gutenberg/test.jsonl.gz"),
    "wikitext": ("wikitext/wikitext-2-raw/wiki.test.raw",),
    "paragraphs": ("wikitext/wikitext-2-raw/wiki.test.raw",),
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


def wikitext_paragraphs(data: Path) -> list[str]:
    """WikiText-2's test paragraphs: every line of the articles that is not a heading."""
    return [
        line
        for article in wikitext_articles(data)
        for line in article.splitlines()[1:]
        if not line.startswith("=")
    ]


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
        if len(tokenizer(record["text"], verbose=False)["input_ids"]) > above:  # a size, not an input
            texts.append(record["text"])
            labels.append(int(record["label"]))
            if len(texts) == count:
                break
    return texts, labels


DOCUMENT_SUFFIXES = (".jsonl", ".jsonl.gz", ".txt")


def user_documents(paths: tuple[str, ...] | list[str]) -> list[str]:
    """The documents of `--documents`: each record's "text" of a .jsonl / .jsonl.gz file, each .txt file whole,
    a folder's such files in name order; ValueError names a path that is none of these."""
    documents: list[str] = []
    for name in paths:
        path = Path(name)
        files = (
            sorted(p for p in path.iterdir() if p.name.endswith(DOCUMENT_SUFFIXES))
            if path.is_dir()
            else [path]
        )
        if not path.exists() or not files:
            raise ValueError(
                f"documents: {name!r} is not a file or a folder holding {', '.join(DOCUMENT_SUFFIXES)} files"
            )
        for file in files:
            if file.name.endswith(".txt"):
                documents.append(_text(file))
            elif file.name.endswith((".jsonl", ".jsonl.gz")):
                documents += _record_texts(file)
            else:
                raise ValueError(f"documents: {file} is none of {', '.join(DOCUMENT_SUFFIXES)}")
    return documents


def _text(file: Path) -> str:
    """The whole of a text file, gunzipped where its name ends .gz; ValueError names the file and what it is
    not (gzip's own BadGzipFile is an OSError, a traceback, and Python's decode error names no file)."""
    opener = gzip.open if file.name.endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8") as f:
            return f.read()
    except (gzip.BadGzipFile, EOFError, zlib.error) as error:  # not gzip, cut short, corrupt
        raise ValueError(f"documents: {file} is not a gzip file, as its name ends .gz ({error})") from None
    except UnicodeDecodeError as error:
        raise ValueError(
            f"documents: {file} is not UTF-8 text (byte {error.start}: {error.reason})"
        ) from None


def _record_texts(file: Path) -> list[str]:
    """The "text" of each record of a .jsonl / .jsonl.gz file; ValueError names the file, the line and what
    it is not (a gzip file, UTF-8, a JSON object with a "text" string)."""
    texts_: list[str] = []
    for number, line in enumerate(_text(file).splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise ValueError(f"documents: line {number} of {file} is not JSON ({error.msg})") from None
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            raise ValueError(f"documents: line {number} of {file} is not a JSON object with a 'text' string")
        texts_.append(record["text"])
    return texts_


def check_documents(documents: list[str], tokenizer, lengths: tuple[int, ...], pairs: int) -> None:
    """Every length's halves task can be drawn from `documents`: `pairs` non-overlapping spans of 2 (L - 2)
    tokens (models/halves.py `draw`); ValueError names the length, what the documents hold and the way out."""
    if len(documents) < 2:
        raise ValueError(f"documents: {len(documents)} document(s); the halves task needs at least 2")
    sizes = [len(ids) for ids in tokenizer(documents, add_special_tokens=False, verbose=False)["input_ids"]]
    for length in lengths:
        held = sum(size // (2 * (length - 2)) for size in sizes)
        if held == 0:
            raise ValueError(
                f"documents: none is long enough for length {length} (2 halves of {length - 2} tokens; the longest "
                f"holds {max(sizes)} tokens); leave {length} out of --lengths"
            )
        if held < pairs:
            raise ValueError(
                f"documents: they hold {held} pair(s) of halves at length {length}, fewer than pairs={pairs}; "
                f"lower --pairs or leave {length} out of --lengths"
            )
