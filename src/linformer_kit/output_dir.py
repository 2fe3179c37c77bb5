"""Output directories: checked before any work starts, filled so that a failure leaves nothing behind.

Every verb writes into an `output_dir`. Its config checks the directory first (`check_output_dir`):
an existing file, a path below a file, or a folder we may not write into is an error before a
model loads or a benchmark runs, not a traceback after the work is done. A verb that writes its
whole result at the end (`linformer convert`) writes into a hidden sibling folder and renames it
into place (`staged_output_dir`), so a crash leaves no half-written model behind.

Standard library only: the configs of every subpackage use it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# What a saved model, tokenizer or training run leaves in a folder: writing another one there mixes them.
SAVED_FILES = (
    "config.json",
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "vocab.json",
    "metrics.json",
)


def check_output_dir(path: str | os.PathLike, what: str = "output_dir") -> Path:
    """`path` as a Path if a directory can be created or written there; ValueError naming it if not.

    Creates nothing: the first existing ancestor must be a writable folder.
    """
    out = Path(path).expanduser()
    if str(path) == "":
        raise ValueError(f"{what}: an output directory is required, got ''")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{what}: {str(path)!r} is an existing file, not a directory")
    existing = out
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing != out and not existing.is_dir():
        raise ValueError(f"{what}: cannot create {str(path)!r}: {str(existing)!r} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{what}: cannot write into {str(existing)!r} (permission denied)")
    return out


def saved_files(path: str | os.PathLike) -> list[str]:
    """Names of the model / tokenizer / run files (and checkpoint-* folders) in the folder `path`."""
    folder = Path(path)
    if not folder.is_dir():
        return []
    found = [name for name in SAVED_FILES if (folder / name).exists()]
    return found + sorted(p.name for p in folder.glob("checkpoint-*") if p.is_dir())


def is_same_or_inside(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether `path` is `folder` or lies inside it (symlinks resolved)."""
    path, folder = Path(path).expanduser().resolve(), Path(folder).expanduser().resolve()
    return path == folder or folder in path.parents


@contextmanager
def staged_output_dir(path: str | os.PathLike, *, replace: bool = False) -> Iterator[Path]:
    """Yield an empty hidden folder next to `path`; on success it becomes `path`, on failure it goes.

    `replace=True` swaps out an existing `path` (the old folder is deleted only after the new one is
    complete); otherwise `path` must be absent or an empty folder.
    """
    final = Path(path).expanduser()
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if replace and final.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.old-", dir=final.parent))
        final.rename(old / final.name)
        staging.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    else:  # onto nothing or an empty folder; a folder that filled up meanwhile raises: never merge
        staging.rename(final)
