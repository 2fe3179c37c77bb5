"""LRA Text: IMDB sentiment read byte by byte, binary classification of documents of up to 4,000 bytes.

The byte-level text classification task of the Long Range Arena (Tay et al., "Long Range Arena: A
Benchmark for Efficient Transformers", ICLR 2021): the IMDB reviews (Maas et al., ACL 2011), 25,000
for training and 25,000 for testing, each cut to its first 4,000 bytes; a model reads bytes, not
words, so the sequences are long and the words must be composed from characters.

`prepare_text` reads `train.jsonl.gz` and `test.jsonl.gz` from an IMDB folder (JSON lines with a
`text` and a `label`, 0 = negative, 1 = positive, as in `shared/data/imdb/`) and writes `train.tsv`
and `test.tsv` (header `Source<TAB>Target`, one review a line, in the order of the input: the Trainer
shuffles) and `label_balance.json`. Each review:

- has every tab, carriage return and newline replaced by a space: the TSV quotes nothing, so these
  would split a cell or a row. The rest is kept as it is, `<br />` tags included (LRA keeps them too);
- is cut to at most `max_bytes` UTF-8 bytes (default 4,000, LRA's length), at a character boundary:
  a multi-byte character that does not fit whole is left out, never cut in half.

Padding to the length is the tokenizer's job, not the file's. A user who has LRA's own text data
converted to this format (`Source<TAB>Target`) points training at it instead.

Standard library only.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from linformer_kit.data_files import check_data_file
from linformer_kit.lra.output import BALANCE_FILE, PreparedSplits, check_not_written, write_splits
from linformer_kit.output_dir import is_same_or_inside

logger = logging.getLogger(__name__)

SPLITS = ("train", "test")
INPUTS = {split: f"{split}.jsonl.gz" for split in SPLITS}
FILES = {split: f"{split}.tsv" for split in SPLITS}
NUM_CLASSES = 2
# the TSV quotes nothing: a tab would split the cell, a line break the row
SEPARATORS = str.maketrans({"\t": " ", "\r": " ", "\n": " "})


@dataclass(frozen=True)
class TextConfig:
    """`linformer lra prepare text`: the IMDB folder, where the files go, and the length of a review."""

    imdb: str = field(
        metadata={"help": "folder holding train.jsonl.gz and test.jsonl.gz (text, label)", "metavar": "DIR"}
    )
    output_dir: str = field(
        metadata={"help": "where train.tsv, test.tsv and label_balance.json go", "metavar": "DIR"}
    )
    max_bytes: int = field(
        default=4000, metadata={"help": "UTF-8 bytes kept of each review (LRA: 4000)", "metavar": "N"}
    )
    overwrite: bool = field(
        default=False, metadata={"help": "replace the files of an earlier run that output_dir holds"}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.max_bytes, int) or isinstance(self.max_bytes, bool) or self.max_bytes < 1:
            raise ValueError(f"max_bytes must be an int >= 1, got {self.max_bytes!r}")
        folder = Path(self.imdb).expanduser()
        if not self.imdb or not folder.is_dir():  # '' would be the current folder
            raise ValueError(f"imdb: {self.imdb!r} is not a directory")
        for name in INPUTS.values():
            if not (folder / name).is_file():
                raise ValueError(f"imdb: {self.imdb!r} holds no {name}")
            check_data_file(folder / name, "imdb", columns=("text", "label"))
        if is_same_or_inside(self.output_dir, folder):
            raise ValueError(f"output_dir {self.output_dir!r} is inside the imdb folder {self.imdb!r}")
        check_not_written(self.output_dir, [*FILES.values(), BALANCE_FILE], self.overwrite)


def truncate_utf8(text: str, max_bytes: int) -> str:
    """The longest prefix of `text` of at most `max_bytes` UTF-8 bytes (whole characters only)."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    # the input is valid UTF-8, so the only broken sequence is the cut character at the end
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def clean(text: str, max_bytes: int) -> str:
    """One TSV cell: tabs and line breaks as spaces, then at most `max_bytes` bytes."""
    return truncate_utf8(text.translate(SEPARATORS), max_bytes)


def read_reviews(path: Path) -> Iterator[tuple[str, int]]:
    """(text, label) of each line of an IMDB .jsonl.gz; ValueError naming the line of a bad record."""
    number = 0
    try:
        with gzip.open(path, "rt", encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if line.strip():
                    yield _review(line, f"imdb: {str(path)!r}, line {number}")
    except (OSError, EOFError, UnicodeDecodeError) as error:  # a damaged file: the check saw its start only
        raise ValueError(f"imdb: {str(path)!r}, after line {number}: cannot be read ({error})") from None


def _review(line: str, where: str) -> tuple[str, int]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: not JSON ({error})") from None
    if not isinstance(record, dict):
        raise ValueError(
            f"{where}: a JSON object with 'text' and 'label' expected, got {type(record).__name__}"
        )
    text, label = record.get("text"), record.get("label")
    if not isinstance(text, str):
        raise ValueError(f"{where}: 'text' must be a string, got {text!r:.40}")
    if type(label) is not int or label not in (0, 1):  # not True, not 1.0: the file holds 0 and 1
        raise ValueError(f"{where}: 'label' must be 0 or 1, got {label!r}")
    return text, label


TextResult = PreparedSplits


def prepare_text(config: TextConfig) -> TextResult:
    """Write train.tsv and test.tsv (every review, cleaned and cut) and label_balance.json."""
    folder = Path(config.imdb).expanduser()
    logger.info(
        f"reading {', '.join(INPUTS.values())} in {folder}; each review cut to {config.max_bytes} bytes"
    )
    splits = {
        split: (
            (clean(text, config.max_bytes), label) for text, label in read_reviews(folder / INPUTS[split])
        )
        for split in SPLITS
    }
    return write_splits(config.output_dir, FILES, splits, NUM_CLASSES)
