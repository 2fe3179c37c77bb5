"""Why a run stopped on its own, and the exit status `linformer` gives each reason.

Raised by the training guards (`linformer_kit.train.guards`); kept apart from them, with no import,
so the command line can catch them without loading torch or transformers first.
"""

from __future__ import annotations


class RunStopped(Exception):
    """A run that stopped for a reason the command line reports with its own exit status."""

    exit_status = 1


class Preempted(RunStopped):
    """SIGTERM / SIGUSR1: the step finished and a checkpoint was saved; rerun with --resume."""

    exit_status = 75  # EX_TEMPFAIL: try again later


class NonFiniteLoss(RunStopped):
    """A non-finite training loss, stopped before the optimizer applied it."""

    exit_status = 65  # EX_DATAERR


class DiskFull(RunStopped):
    """ENOSPC while writing the output directory; the last complete checkpoint is intact."""

    exit_status = 74  # EX_IOERR
