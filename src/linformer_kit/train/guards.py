"""What a long run survives: preemption, a non-finite loss, a full disk, a second run in its directory.

SIGTERM / SIGUSR1     (SLURM and Kubernetes send SIGTERM, then SIGKILL a grace period later; SLURM
                      can be told to send SIGUSR1 earlier): the current optimizer step finishes, a
                      complete checkpoint is saved, and the run stops with `Preempted` (exit status
                      75, EX_TEMPFAIL); `--resume` continues bit-exactly.
a non-finite loss     (too high a learning rate, an overflow): `NonFiniteLoss` (exit status 65)
                      names the step and the learning rate, raised after the backward pass and
                      before the optimizer applies that step: no non-finite weight is ever saved,
                      and the last checkpoint stays resumable.
a full disk           (ENOSPC while saving): `DiskFull` (exit status 74) names the directory; the
                      checkpoint cut off while being written is skipped by `--resume`, which takes
                      the one before it (train/checkpoints.py), and no older one is rotated away.
two runs, one output_dir  (a double submit): the second refuses at start. `output_dir/.lock`
                      names the owner (host, pid); a killed run's lock is taken over
                      (train/output_dir_lock.py).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, NamedTuple

import torch
from transformers import PreTrainedModel, Trainer, TrainerCallback
from transformers.trainer_utils import get_last_checkpoint

from linformer_kit.stopped import DiskFull, NonFiniteLoss, Preempted
from linformer_kit.train.output_dir_lock import LockHeartbeat, output_dir_lock
from linformer_kit.train.progress import label_progress, no_save_bars

PREEMPTION_SIGNALS = ("SIGTERM", "SIGUSR1")
SignalHandler = (
    Callable[[int, FrameType | None], Any] | int | signal.Handlers | None
)  # what signal.signal takes


def output_dir_of(trainer: Trainer) -> str:
    """`trainer.args.output_dir`: optional to transformers' types, but always set once the arguments are
    built (`TrainingArguments` makes None "trainer_output"; our configs require it)."""
    output_dir = trainer.args.output_dir
    assert output_dir is not None
    return output_dir


def trained_model(trainer: Trainer) -> PreTrainedModel:
    """`trainer.model` of a pretrain / finetune run: a transformers model (the Trainer's type is wider)."""
    model = trainer.model
    assert isinstance(model, PreTrainedModel), type(model)
    return model


# --- preemption --------------------------------------------------------------------------------------


class PreemptionCallback(TrainerCallback):
    """On SIGTERM / SIGUSR1: finish the step, save a checkpoint, stop training (`requested` names the signal)."""

    def __init__(self) -> None:
        self.requested: str | None = None
        self._previous: dict[int, SignalHandler] = {}

    def on_train_begin(self, args, state, control, **kwargs):
        if not _in_main_thread():
            return  # signal handlers can only be set from the main thread (a notebook's worker: none)
        for name in PREEMPTION_SIGNALS:
            number = getattr(signal, name, None)
            if number is not None:
                self._previous[number] = signal.signal(number, self._request)

    def _request(self, number, frame) -> None:
        self.requested = signal.Signals(number).name

    def on_step_end(self, args, state, control, **kwargs):
        if _any_rank(self.requested is not None, args.device):  # every rank stops at the same step
            self.requested = self.requested or "a signal on another process"
            control.should_save = True
            control.should_training_stop = True

    def on_train_end(self, args, state, control, **kwargs):
        self.restore()

    def restore(self) -> None:
        """The signal handlers from before training (also when training ends by an exception)."""
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()


def _in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _any_rank(flag: bool, device: torch.device) -> bool:
    """`flag` or-ed over every process of a distributed run (itself without one)."""
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return flag
    value = torch.tensor([int(flag)], device=device)
    torch.distributed.all_reduce(value, op=torch.distributed.ReduceOp.MAX)
    return bool(value.item())


# --- the Trainer both verbs use ------------------------------------------------------------------------


class GuardedTrainer(Trainer):
    """`Trainer` with the guards of a long run (module docstring), for `pretrain` and `finetune` alike.

    - `train()` stops a preempted run after its checkpoint (`Preempted`) and names a full disk (`DiskFull`);
    - `save_model()` (the final save and every checkpoint's weights) names a full disk;
    - `training_step()` stops at the first non-finite loss, before the optimizer applies it
      (`NonFiniteLoss`). That check costs one device synchronisation per step, which the Trainer already
      pays when `logging_nan_inf_filter` (default True) inspects every step's loss.
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.preemption = PreemptionCallback()
        self.add_callback(self.preemption)
        self.add_callback(LockHeartbeat())
        label_progress(self)  # "train (steps)" / "evaluate (batches)" instead of bare bars

    resumed_from_step = (
        0  # set by train(): the checkpoint's step when resuming (training_loss covers the rest)
    )

    def train(self, *args, **kwargs):
        resume = kwargs.get("resume_from_checkpoint", args[0] if args else None)
        self.resumed_from_step = checkpoint_step(resume, output_dir_of(self))
        try:
            with disk_full_is_named(output_dir_of(self)):
                output = super().train(*args, **kwargs)
        finally:  # a crash or KeyboardInterrupt must not leave our handler in the process
            self.preemption.restore()
        if self.preemption.requested is not None:
            step = self.state.global_step
            raise Preempted(
                f"{self.preemption.requested} received: stopped after step {step} and saved "
                f"{Path(output_dir_of(self)) / f'checkpoint-{step}'}; run the same command with --resume to "
                "continue"
            )
        return output

    def _issue_warnings_after_load(self, load_result: Any) -> None:
        """transformers' "missing keys in the checkpoint" warning, less the tied copies a checkpoint never holds.

        A tied weight (the MLM decoder = the word embeddings, its bias = `lm_head.bias`) is saved once,
        under its source's name, and loaded through it; its own name is then "missing" but not absent.
        Only those names are dropped: a real missing key, tied or not, is still reported.
        """
        assert self.model is not None  # loading a checkpoint into it
        tied = tied_copies(self.model, load_result.missing_keys)
        missing = [key for key in load_result.missing_keys if key not in tied]
        super()._issue_warnings_after_load(_LoadResult(missing, list(load_result.unexpected_keys)))

    def save_model(self, *args, **kwargs) -> None:
        with disk_full_is_named(output_dir_of(self)), no_save_bars():
            super().save_model(*args, **kwargs)

    def training_step(self, model, inputs, num_items_in_batch=None):
        return self.finite(super().training_step(model, inputs, num_items_in_batch))

    def finite(self, loss: torch.Tensor) -> torch.Tensor:
        """`loss`, or `NonFiniteLoss` before the optimizer applies it (a subclass's own step calls this too)."""
        if not torch.isfinite(loss).all():
            step = self.state.global_step + 1
            checkpoint = _last_checkpoint_name(output_dir_of(self))
            raise NonFiniteLoss(
                f"the training loss of step {step} is {loss.item()} (learning rate "
                f"{self._get_learning_rate():.3g}): the run stopped before that step changed a weight. "
                f"Lower --learning-rate (or raise --warmup-steps; with --fp16 try --bf16) and "
                + (f"--resume from {checkpoint}, whose weights are finite" if checkpoint else "start again")
            )
        return loss


class _LoadResult(NamedTuple):  # what `Trainer._issue_warnings_after_load` reads
    missing_keys: list[str]
    unexpected_keys: list[str]


def tied_copies(model: torch.nn.Module, keys: Iterable[str]) -> set[str]:
    """The `keys` whose tensor is the very tensor of a state-dict entry outside `keys` (a tied weight
    loaded through the other name); a key whose every name is among `keys` really is missing."""
    state = model.state_dict(keep_vars=True)
    names_of: dict[int, list[str]] = {}
    for name, tensor in state.items():
        names_of.setdefault(id(tensor), []).append(name)
    keys = set(keys)
    return {
        key for key in keys if key in state and any(other not in keys for other in names_of[id(state[key])])
    }


def checkpoint_step(resume: object, output_dir: str) -> int:
    """The global step of the checkpoint a run resumes from (a folder, or True: the newest), else 0."""
    if resume is True:
        resume = get_last_checkpoint(output_dir)
    if not isinstance(resume, (str, os.PathLike)):
        return 0
    try:
        return int(json.loads((Path(resume) / "trainer_state.json").read_text())["global_step"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0  # the Trainer itself names an unreadable checkpoint


def guarded_run(config, result_class: type, run: Callable[[], Any]) -> Any:
    """What `pretrain` and `finetune` do around their work: the config's file checks (`preflight`), then a
    finished run's saved result (resume of a finished run changes nothing), or `run()` while holding
    output_dir/.lock, after setting aside the cut-off checkpoints a resume found. `config` is a
    `LinformerTrainingArguments`."""
    config.preflight()  # before the lock: a bad path leaves nothing behind
    finished = config.finished_result(result_class)
    if finished is not None:
        return finished
    with output_dir_lock(config.output_dir, enabled=config.process_index == 0):
        if config.process_index == 0:
            config.set_aside_incomplete_checkpoints()  # --resume of a run killed in its first save
        return run()


def _last_checkpoint_name(output_dir: str) -> str | None:
    from linformer_kit.train.checkpoints import last_complete_checkpoint

    checkpoint, _ = last_complete_checkpoint(output_dir)
    return str(checkpoint) if checkpoint is not None else None


# --- full disk ---------------------------------------------------------------------------------------


@contextlib.contextmanager
def disk_full_is_named(output_dir: str) -> Iterator[None]:
    """Turn ENOSPC inside the block into `DiskFull` naming `output_dir` and what is left to resume from."""
    try:
        yield
    except OSError as error:
        if error.errno != errno.ENOSPC:
            raise
        checkpoint = _last_checkpoint_name(output_dir)
        resume = (
            f"{checkpoint} is complete: free space and rerun with --resume"
            if checkpoint
            else ("no complete checkpoint was written: free space and start again")
        )
        raise DiskFull(f"no space left on the device of {output_dir!r} while writing it: {resume}") from error
