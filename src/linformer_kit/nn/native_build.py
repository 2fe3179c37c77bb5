"""The native kernel's build (nn/local_native.py): once a cache, never a wait without bound.

torch.utils.cpp_extension.load guards its build folder with a `lock` file it creates and deletes (FileBaton).
A process killed during a build (Ctrl-C, `timeout`, the OOM killer, a torchrun teardown) leaves the file,
and every later load waits on it forever, in the first forward that can take the kernel. So a build here first
takes an advisory lock of the operating system (`fcntl.flock` on `<name>.flock` beside the folder), which
the kernel drops when its holder ends, however it ends. While we hold it no process of ours builds that
folder, so a `lock` file there is a dead build's: it goes before the load, which then never waits on it.

A second process waits for the first one's build (10-20 s) at most `BUILD_WAIT` seconds; past that, where the
cache cannot be written, or where there is no `fcntl` (Windows), `build` raises and the caller runs the split
core with one warning. Torch-only (and the standard library).
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

# seconds a process waits for another's build of the same kernel: 6x the slowest build measured (20 s)
BUILD_WAIT = 120.0


def build(
    name: str,
    sources: list[str],
    cflags: list[str],
    wait: float | None = None,
    ldflags: list[str] | None = None,
) -> None:
    """Build (or load the cached build of) the extension `name`, as cpp_extension.load with
    is_python_module=False, under the flock; TimeoutError after `wait` s (default `BUILD_WAIT`) of another's
    build, OSError where the cache cannot be written, the compiler's error where the build fails."""
    wait = BUILD_WAIT if wait is None else wait
    from torch.utils import cpp_extension  # (imports setuptools: only when a build is asked for)

    folder = Path(cpp_extension._get_build_directory(name, verbose=False))  # made here; OSError if it cannot
    with _flock(folder.parent / f"{name}.flock", wait):
        stale = folder / "lock"
        if stale.exists():  # no live build of ours holds it: a killed one left it
            warnings.warn(
                f"native kernel: removing {stale}, left by a build that did not finish", stacklevel=3
            )
            stale.unlink(missing_ok=True)
        cpp_extension.load(
            name=name,
            sources=sources,
            # copies: load appends torch's own link flags to the list it is given, and a caller's list grown
            # that way would hash as another build on its next call (a second library, one op name: abort)
            extra_cflags=list(cflags),
            extra_ldflags=list(ldflags or []),
            is_python_module=False,
            build_directory=str(folder),
        )


@contextlib.contextmanager
def _flock(path: Path, wait: float) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created), polling for it at most `wait` s."""
    import fcntl  # (not on Windows: the ImportError is a failed build there)

    with open(path, "a") as handle:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"another process has built the kernel for {wait:.0f} s (it holds {path})"
                    ) from None
                time.sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


__all__ = ["BUILD_WAIT", "build"]
