"""Local data files: cheap checks before any work, errors that name the file and the line, and text.

Standard library only, so `linformer spectrum` (no `datasets` installed) reads the same files as
`linformer pretrain`: `read_texts` gives the documents of a .txt, .jsonl, .json file (each may be .gz).

`check_data_file` runs when a config is built. It reads the first 64 KiB of each file (and the rest
of the line they end in), so a
folder of books costs little: empty files, binary files, text that is not UTF-8, a gzip suffix on
a plain file, a broken JSON line or a missing column are errors before a tokenizer or a model is
built. A bad line further into a big file still makes a `datasets` loader fail; `explain_failure`
then scans the files once to name the first bad line, instead of a generic "An error occurred
while generating the dataset". `line_of_row` turns the index of a bad row (an empty label cell)
into the line a user can open in an editor.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path

HEAD_BYTES = 1 << 16


def has_suffix(path: str | Path, suffixes: Sequence[str]) -> bool:
    return str(path).lower().endswith(tuple(suffixes))


def is_local(source: str, suffixes: Sequence[str] = ()) -> bool:
    """A local path rather than a Hub name: the one rule for models and datasets alike.

    Local when it exists, or is written like a path (starts with '.', '/' or '~', has a backslash,
    more than one '/', or one of `suffixes`, e.g. '.jsonl'); otherwise a Hub name ('roberta-base',
    'org/name', 'name:config'), which is then loaded from the Hub, not silently created.
    """
    return (
        os.path.exists(source)
        or source.startswith((".", "/", "~"))
        or "\\" in source
        or source.count("/") > 1
        or has_suffix(source, suffixes)
    )


def file_format(path: str | Path) -> str:
    """The format the suffix names (.gz allowed): jsonl, json, tsv, csv or text."""
    name = str(path).lower().removesuffix(".gz")
    for suffix in ("jsonl", "json", "tsv", "csv"):
        if name.endswith(f".{suffix}"):
            return suffix
    return "text"


def check_data_file(path: str | Path, what: str, columns: Sequence[str] = (), hint: str = "") -> None:
    """ValueError naming `path` (and the line) if its start shows it cannot be read as its suffix says.

    `columns`: fields every JSON record / columns the CSV or TSV header must hold; `hint` is added to
    a message about them (which option names them).
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise ValueError(f"{what}: {str(path)!r} is empty (0 bytes)")
    head = _head(path, what)
    if len(head) == HEAD_BYTES:  # whole lines only
        head = head[: head.rfind(b"\n") + 1] or head
    problem = _first_problem(lambda: _numbered_lines(head), file_format(path), columns, hint)
    if problem is not None:
        raise ValueError(f"{what}: {str(path)!r}, {problem}")


def has_examples(path: str | Path) -> bool:
    """Whether a CSV / TSV file holds a row after its header (other files: whether it holds a line)."""
    kind = file_format(path)
    with _open_text(Path(path)) as f:
        if kind in ("csv", "tsv"):
            rows = csv.reader(f, delimiter="\t" if kind == "tsv" else ",", **_quoting(kind))
            next(rows, None)
            return any(any(cell.strip() for cell in row) for row in rows)
        return any(line.strip() for line in f)


def explain_failure(paths: Sequence[str | Path], what: str, error: BaseException) -> ValueError:
    """A ValueError naming the first bad line of `paths`, for a loader that failed on them."""
    for path in map(Path, paths):
        try:
            problem = _first_problem(partial(_numbered_lines_of, path), file_format(path), ())
        except (OSError, EOFError, zlib.error) as err:
            problem = f"cannot be read: {err}"
        if problem is not None:
            return ValueError(f"{what}: {str(path)!r}, {problem}")
    cause = error.__cause__ or error.__context__ or error
    names = ", ".join(repr(str(p)) for p in paths)
    return ValueError(
        f"{what}: cannot load {names}: {type(cause).__name__}: {str(cause).splitlines()[0][:300]}"
    )


def peek_columns(path: str | Path) -> list[str] | None:
    """The header of a CSV / TSV file, or the fields of the first JSON record; None if unknown."""
    kind = file_format(path)
    with _open_text(Path(path)) as f:
        if kind in ("csv", "tsv"):
            header = next(csv.reader(f, delimiter="\t" if kind == "tsv" else ",", **_quoting(kind)), [])
            return [name.lstrip("\ufeff") for name in header]
        first = next((line for line in f if line.strip()), "")
    try:
        record = json.loads(first)
    except json.JSONDecodeError:
        return None  # a .json file holding one document: the loader will tell
    return sorted(record) if isinstance(record, dict) else None


def line_of_row(path: str | Path, row: int) -> int:
    """1-based line where data row `row` (0-based, header excluded) of a CSV / TSV / JSON-lines file starts."""
    kind = file_format(path)
    if kind in ("json", "jsonl"):
        records = (number for number, line in _numbered_lines_of(Path(path)) if line.strip())
        return next((n for i, n in enumerate(records) if i == row), -1)
    with _open_text(Path(path)) as f:
        reader = csv.reader(f, delimiter="\t" if kind == "tsv" else ",", **_quoting(kind))
        start = 1
        for index, _ in enumerate(reader):  # line_num counts lines read so far: the row started after them
            if index == row + 1:
                return start
            start = reader.line_num + 1
    return -1


def read_texts(path: str | Path, column: str = "text") -> Iterator[str]:
    """The documents of a text file (the whole file is one), or the `column` field of each JSON record.

    A .jsonl file holds one record per line; a .json file either the same or one JSON array of
    records (the two layouts `datasets`' json loader reads). Run `check_data_file` first for errors
    that name the line.
    """
    path = Path(path)
    kind = file_format(path)
    with _open_text(path) as f:
        if kind == "text":
            yield f.read()
            return
        text = f.read()
    try:
        records = json.loads(text) if kind == "json" else None
    except json.JSONDecodeError:
        records = None  # JSON lines in a .json file
    if not isinstance(records, list):
        # JSON Lines ends records at "\n" only: str.splitlines() would also cut at U+0085 / U+2028 inside a
        # record's string (IMDB reviews hold U+0085), which JSON allows unescaped
        records = [json.loads(line) for line in text.split("\n") if line.strip()]
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict) or column not in record:
            raise ValueError(f"{str(path)!r}: record {number} has no field {column!r}")
        yield str(record[column])


# --- reading --------------------------------------------------------------------------------------------


def _open_binary(path: Path) -> gzip.GzipFile | io.BufferedReader:
    return gzip.open(path, "rb") if has_suffix(path, (".gz",)) else open(path, "rb")


def _open_text(path: Path) -> io.TextIOBase:
    return io.TextIOWrapper(_open_binary(path), encoding="utf-8", newline="")


def _head(path: Path, what: str) -> bytes:
    try:
        with _open_binary(path) as f:
            head = f.read(HEAD_BYTES)
            if len(head) == HEAD_BYTES and not head.endswith(b"\n"):
                head += f.readline()  # finish the cut line (a book is one JSON line): cut is not broken
            return head
    except (OSError, EOFError, zlib.error) as err:  # gzip.BadGzipFile is an OSError
        raise ValueError(f"{what}: {str(path)!r} is not a readable gzip file ({err})") from None


def _numbered_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    yield from enumerate(io.BytesIO(data), start=1)  # split as a file is: at b"\n" only


def _numbered_lines_of(path: Path) -> Iterator[tuple[int, bytes]]:
    with _open_binary(path) as f:
        yield from enumerate(f, start=1)


def _quoting(kind: str) -> dict:
    return {"quoting": csv.QUOTE_NONE} if kind == "tsv" else {}  # GLUE TSVs quote nothing


def _first_problem(
    lines: Callable[[], Iterator[tuple[int, bytes]]], kind: str, columns: Sequence[str], hint: str = ""
) -> str | None:
    """'line N: what is wrong' for the first bad line, or None. `lines()` restarts the file; `hint`
    follows a missing column."""
    problem = _text_problem(lines())
    if problem is not None or kind == "text":
        return problem
    suffix = f"; {hint}" if hint else ""
    if kind in ("csv", "tsv"):
        return _table_problem(lines(), kind, columns, suffix)
    return _json_lines_problem(lines(), columns, suffix, strict=kind == "jsonl")


def _text_problem(lines: Iterator[tuple[int, bytes]]) -> str | None:
    """A NUL byte anywhere (binary data) first, else the first line that is not UTF-8."""
    not_utf8 = None
    for number, raw in lines:
        if b"\x00" in raw:
            return f"line {number}: looks binary (a NUL byte), not text"
        if not_utf8 is None:
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as err:
                not_utf8 = (
                    f"line {number}: is not UTF-8 text (byte {raw[err.start]:#04x}); re-encode it as UTF-8"
                )
    return not_utf8


def _table_problem(
    lines: Iterator[tuple[int, bytes]], kind: str, columns: Sequence[str], hint: str
) -> str | None:
    text = (raw.decode("utf-8-sig" if number == 1 else "utf-8") for number, raw in lines)
    reader = csv.reader(text, delimiter="\t" if kind == "tsv" else ",", **_quoting(kind))
    header = next(reader, None)
    if header is None:
        return None
    missing = [c for c in columns if c not in header]
    if missing:
        return f"line 1: has no column {missing} (header: {header}){hint}"
    for fields in reader:  # too many fields is an error of the loader; too few leaves empty cells
        if len(fields) > len(header):
            return f"line {reader.line_num}: {len(fields)} fields, but the header has {len(header)}"
    return None


def _json_lines_problem(
    lines: Iterator[tuple[int, bytes]], columns: Sequence[str], hint: str, strict: bool
) -> str | None:
    """Every non-blank line one JSON object. A .json file (`strict=False`) may instead hold one JSON
    document over many lines: then the loader decides."""
    for number, raw in lines:
        line = raw.decode("utf-8")
        if not line.strip():
            continue
        try:
            record = json.loads(line.rstrip("\r\n"))
        except json.JSONDecodeError as err:
            if not strict:
                return None
            return f"line {number}: is not valid JSON ({err.msg} at column {err.colno})"
        if not isinstance(record, dict):
            return (
                f"line {number}: is a JSON {type(record).__name__}, not an object with named fields"
                if strict
                else None
            )
        missing = [c for c in columns if c not in record]
        if missing:
            return f"line {number}: has no field {missing} (fields: {sorted(record)}){hint}"
        strict = True  # the first line was a record: JSON lines
    return None
