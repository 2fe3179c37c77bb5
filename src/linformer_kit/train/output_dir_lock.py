"""One run per output directory: `output_dir/.lock`, so a double submit refuses at start.

A guard of a long run (train/guards.py) with a state of its own, a file on disk, and no Trainer
inside: the lock names its owner (host, pid, since); a lock whose process is gone (same host) or
that has not been refreshed for STALE_AFTER seconds (another host: the owner touches it at every
step, `LockHeartbeat`) is a killed run's and is taken over.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from transformers import TrainerCallback

LOCK_FILE = ".lock"
STALE_AFTER = 15 * 60  # seconds without a step before another host's lock counts as abandoned


@contextlib.contextmanager
def output_dir_lock(output_dir: str | os.PathLike, enabled: bool = True) -> Iterator[None]:
    """Hold output_dir/.lock for the run (module docstring); ValueError if a live run holds it."""
    if not enabled:
        yield
        return
    path = Path(output_dir) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    owner = {"host": socket.gethostname(), "pid": os.getpid(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}
    for _ in range(2):  # a second try after taking over an abandoned lock
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            held = _lock_owner(path)
            if held is not None and not _abandoned(path, held):
                raise ValueError(
                    f"output_dir {str(output_dir)!r} is in use by another run (pid {held.get('pid')} on "
                    f"{held.get('host')}, since {held.get('since')}): wait for it to end, or choose "
                    f"another --output-dir (if that run is gone, delete {str(path)!r})"
                ) from None
            path.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as f:
            json.dump(owner, f)
        break
    else:
        raise ValueError(
            f"output_dir {str(output_dir)!r}: could not take {str(path)!r}; another run is starting"
        )
    try:
        yield
    finally:
        if _lock_owner(path) == owner:
            path.unlink(missing_ok=True)


class LockHeartbeat(TrainerCallback):
    """Touches output_dir/.lock at most once a minute, so another host can tell a live run from a dead one."""

    def __init__(self) -> None:
        self.last = 0.0

    def on_step_end(self, args, state, control, **kwargs):
        now = time.time()
        if now - self.last > 60:
            self.last = now
            with contextlib.suppress(OSError):
                os.utime(Path(args.output_dir) / LOCK_FILE)


def _lock_owner(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # gone, or cut off while being written: treat as abandoned


def _abandoned(path: Path, owner: dict) -> bool:
    if owner.get("host") == socket.gethostname():
        return not _alive(int(owner.get("pid", -1)))
    try:
        return time.time() - path.stat().st_mtime > STALE_AFTER
    except OSError:
        return True


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True
