"""The options only scope "student" reads, and their checks (bench/config.py's validation calls them).

    STUDENT_FIELDS   the fields only scope "student" reads (the config refuses them outside it)
    check_student    the values of scope "student": alone, forward, CPU, its runtimes, lengths and names
    named_students   name -> folder of the `--student` values (NAME=DIR or DIR)

They are the values' checks; the folders and files are checked when the run starts: bench/student_config.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Protocol

from linformer_kit.bench.option_checks import is_int


class StudentOptions(Protocol):
    """What `check_student` reads of a config (bench/config.py's BenchmarkConfig has them): a protocol, so
    this module imports no config and the config imports it (no import cycle)."""

    @property
    def scopes(self) -> Sequence[str]: ...
    @property
    def passes(self) -> Sequence[str]: ...
    @property
    def device(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def runtimes(self) -> Sequence[str]: ...
    @property
    def seq_lens(self) -> Sequence[int]: ...
    @property
    def students(self) -> Sequence[str]: ...
    @property
    def original(self) -> str | None: ...
    @property
    def chunk_length(self) -> int: ...
    @property
    def tokens_per_batch(self) -> int | None: ...
    @property
    def encode_texts(self) -> int: ...


# the fields only scope "student" reads (chunk_length and encode_texts have defaults, so they are not among them)
STUDENT_FIELDS = ("students", "original", "tokens_per_batch", "text_file")


def check_student(c: StudentOptions) -> None:
    """The values of scope "student" (its folders and files are checked when it runs: bench/student_config.py)."""
    if c.scopes != ("student",):
        raise ValueError(
            f"scopes 'student' measures saved models, not the synthetic layer / encoder: give it alone, "
            f"got scopes {c.scopes}"
        )
    if c.passes != ("forward",):
        raise ValueError(
            f"scopes ('student',) times encoding (passes ('forward',)) only, got passes {c.passes}"
        )
    if c.device != "cpu":
        raise ValueError(f"scopes ('student',) measures on the CPU (device 'cpu'), got device {c.device!r}")
    if "onnxruntime" in c.runtimes and c.dtype != "float32":
        raise ValueError(f"runtimes 'onnxruntime' runs the float32 export: dtype 'float32', got {c.dtype!r}")
    if len(set(c.runtimes)) != len(c.runtimes):
        raise ValueError(f"runtimes must not repeat, got {c.runtimes}")
    short = [n for n in c.seq_lens if is_int(n) and n < 2]
    if short:
        raise ValueError(f"seq_lens of scope 'student' must be >= 2 ([CLS] and [SEP] at least), got {short}")
    if not is_int(c.chunk_length) or c.chunk_length < 2:
        raise ValueError(
            f"chunk_length must be an int >= 2 ([CLS] and [SEP] at least), got {c.chunk_length!r}"
        )
    if c.tokens_per_batch is not None and (not is_int(c.tokens_per_batch) or c.tokens_per_batch < 1):
        raise ValueError(f"tokens_per_batch must be an int >= 1 or None, got {c.tokens_per_batch!r}")
    if not is_int(c.encode_texts) or c.encode_texts < 0:
        raise ValueError(
            f"encode_texts must be an int >= 0 (0: the encode case is not timed), got {c.encode_texts!r}"
        )
    if c.original is not None and not c.original:
        raise ValueError("original: an empty path; give the encoder the students replace (--original DIR)")
    named_students(c.students)  # names unique, none empty


def named_students(students: Sequence[str]) -> dict[str, str]:
    """name -> folder of `--student` values: `NAME=DIR` (NAME without a `/`), or `DIR` named by its last part.

    ValueError names an empty value, a name used twice (give NAME=DIR) and the reserved name 'original'.
    """
    named: dict[str, str] = {}
    for spec in students:
        name, sep, path = str(spec).partition("=")
        if not sep or not name or "/" in name or "\\" in name:
            name, path = PurePath(str(spec)).name, str(spec)
        if not path or not name:
            raise ValueError(f"students: {spec!r} names no folder; give DIR or NAME=DIR")
        if name == "original":
            raise ValueError(f"students: {spec!r}: the name 'original' is the original's; give NAME=DIR")
        if name in named:
            raise ValueError(
                f"students: two are named {name!r} ({named[name]!r} and {path!r}); give each NAME=DIR"
            )
        named[name] = path
    return named
