"""Checks shared by the bad-input suites (issue 13): a clear error, naming the bad value, losing nothing.

Every check sorts what happened into the classes issue 13 counts, and fails naming the class:

    clear       the expected error (CLI: a non-zero exit) whose message names the bad value
    traceback   an exception of another type, or one raised from inside a library (torch,
                transformers, datasets) rather than by linformer-kit's own checks (CLI: any
                exception escaped `main`, or a traceback was printed)
    silent      no error at all
    misleading  the right kind of error, but its message does not name the bad value
    data loss   a file that existed before the call was changed or removed
    leftover    a clear error, but the failed call left new files behind (half-written output)

Set BAD_INPUT_REPORT=/some/file.jsonl to append one line per check (test id and class): the sweep's
totals come from that file (the suite then also runs on code that fails it, e.g. an older commit).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from linformer_kit.cli.main import main

PathLike = str | Path


class WorkStarted(Exception):
    """Raised by a test's stand-in for the real work (loading a model, measuring): the bad input was
    accepted, so the case counts as `silent`, whatever would have happened later."""


def snapshot(roots: Iterable[PathLike]) -> dict[Path, str]:
    """sha256 of every file under `roots` (files or folders; missing roots hold nothing)."""
    digests = {}
    for root in map(Path, roots):
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            digests[path] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def file_changes(before: dict[Path, str], roots: Iterable[PathLike]) -> tuple[list[Path], list[Path]]:
    """(files changed or removed, files created) since `before`."""
    after = snapshot(roots)
    changed = [path for path, digest in before.items() if after.get(path) != digest]
    created = [path for path in after if path not in before]
    return changed, created


def record(kind: str, detail: str) -> None:
    """Append the class to $BAD_INPUT_REPORT, then fail unless it is `clear`."""
    report = os.environ.get("BAD_INPUT_REPORT")
    if report:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
        with open(report, "a") as f:
            f.write(json.dumps({"test": test, "kind": kind}) + "\n")
    if kind != "clear":
        pytest.fail(f"bad input handled as {kind}: {detail}", pytrace=False)


def _classify_files(
    kind: str, detail: str, before: dict[Path, str], watch: Iterable[PathLike]
) -> tuple[str, str]:
    changed, created = file_changes(before, watch)
    if changed:
        return "data loss", f"changed or removed {[str(p) for p in changed]} ({detail})"
    if kind == "clear" and created:
        return "leftover", f"the failed call left {[str(p) for p in created]} behind ({detail})"
    return kind, detail


def run_cli(argv: list[str], capsys: pytest.CaptureFixture) -> tuple[int | None, BaseException | None, str]:
    """`linformer ARGV` in process: (exit code, escaped exception, stdout + stderr)."""
    code: int | None
    escaped = None
    try:
        code = main([str(arg) for arg in argv])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # an escaped exception is what the user sees as a traceback
        code, escaped = None, error
    captured = capsys.readouterr()
    return code, escaped, captured.out + captured.err


def check_cli(
    argv: list[PathLike], match: str, capsys: pytest.CaptureFixture, watch: Iterable[PathLike] = ()
) -> str:
    """`linformer ARGV` must exit non-zero printing `match` (a regex), no traceback, files unchanged.

    `watch`: files / folders whose content must not change and where no file may appear (sources,
    data, the output directory). Returns the printed output.
    """
    watch = list(watch)
    before = snapshot(watch)
    code, escaped, output = run_cli([str(a) for a in argv], capsys)
    if isinstance(escaped, WorkStarted):
        kind, detail = "silent", f"accepted: {escaped}"
    elif escaped is not None:
        kind, detail = "traceback", f"{type(escaped).__name__}: {str(escaped)[:300]}"
    elif "Traceback (most recent call last)" in output:
        kind, detail = "traceback", output[-300:]
    elif code == 0:
        kind, detail = "silent", f"exit 0: {output[-300:]!r}"
    elif not re.search(match, output):
        kind, detail = "misleading", f"exit {code}, {match!r} not in {output[-400:]!r}"
    else:
        kind, detail = "clear", output[-200:]
    record(*_classify_files(kind, detail, before, watch))
    return output


def check_raises(
    call: Callable[[], object],
    error: type[BaseException] | tuple[type[BaseException], ...],
    match: str,
    watch: Iterable[PathLike] = (),
) -> BaseException:
    """`call()` must raise `error` whose message matches `match`, changing no watched file."""
    watch = list(watch)
    before = snapshot(watch)
    caught: BaseException | None = None
    try:
        call()
    except Exception as exception:
        caught = exception
    if caught is None:
        kind, detail = "silent", "no exception"
    elif not isinstance(caught, error) or not _raised_by_us(caught):
        where = traceback.extract_tb(caught.__traceback__)[-1].filename
        kind, detail = "traceback", f"{type(caught).__name__} from {where}: {str(caught)[:300]}"
    elif not re.search(match, str(caught)):
        kind, detail = "misleading", f"{type(caught).__name__}: {match!r} not in {str(caught)[:400]!r}"
    else:
        kind, detail = "clear", str(caught)[:200]
    record(*_classify_files(kind, detail, before, watch))
    assert caught is not None
    return caught


def _raised_by_us(error: BaseException) -> bool:
    """Whether the innermost frame of the traceback is linformer-kit's (a check), not a library's."""
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and f"{os.sep}linformer_kit{os.sep}" in frames[-1].filename


def check_handled(ok: bool, detail: str, kind: str = "silent") -> None:
    """For bad input that must be *handled* (a right result, not an error): record `kind` unless ok."""
    record("clear" if ok else kind, detail)
