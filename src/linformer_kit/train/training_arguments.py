"""`TrainingArguments` as the base of every training config: the Trainer's own fields, our defaults.

`PretrainConfig` and `FinetuneConfig` subclass `LinformerTrainingArguments`, so each is the Trainer's
arguments object itself (`Trainer(args=config)`), every Trainer option (`bf16`, `report_to`,
`warmup_steps`, `save_total_limit`, ...) is a field under the Trainer's name, and `HfArgumentParser`
builds the command line of `linformer pretrain` / `finetune` from the class. One source per field:

    a Trainer field whose default suits us   inherited untouched (learning rates aside, most of them)
    a Trainer field with another default     re-declared once below or in the verb's config (`trainer_default`)
    a field of ours (data, model, resume)     declared in the verb's config

Values are checked once, in `__post_init__`: ours first, then the Trainer's. The checks that read the
file system (output_dir, the data and model folders, the checkpoints a resume continues) are the
`preflight`, which `guarded_run` (train/guards.py) calls at the start of the run, before any work: a
config is built without touching a file, and a bad path is still named before anything starts.
"""

from __future__ import annotations

import dataclasses
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import TrainingArguments

from linformer_kit.output_dir import check_output_dir, saved_files
from linformer_kit.train.checkpoints import checkpoint_folders, last_complete_checkpoint


def trainer_default(name: str, default: Any) -> Any:
    """The `TrainingArguments` field `name`, help text included, with another default."""
    return dataclasses.field(default=default, metadata=TrainingArguments.__dataclass_fields__[name].metadata)


def post_init_field(help_text: str) -> Any:
    """A field None by default that `__post_init__` fills in, or names when still missing (a clearer error
    than the constructor's): typed as the value it holds from then on. Its flag stays optional."""
    return dataclasses.field(default=None, metadata={"help": help_text})


def check_number(
    name: str,
    value: object,
    minimum: float,
    *,
    integer: bool = False,
    exclusive: bool = False,
    below: float | None = None,
    optional: bool = False,
    why: str = "",
) -> None:
    """ValueError naming `name`, its value and the limit unless minimum <= value (< below); NaN fails."""
    if value is None and optional:
        return
    number = value if isinstance(value, int if integer else (int, float)) else None
    if not (
        isinstance(number, (int, float))
        and not isinstance(number, bool)
        and math.isfinite(number)
        and (number > minimum if exclusive else number >= minimum)
        and (below is None or number < below)
    ):
        lower = f"> {minimum}" if exclusive else f">= {minimum}"
        limit = lower if below is None else f"{lower} and < {below}"
        what = "an int" if integer else "a number"
        raise ValueError(f"{name}={value!r} must be {what} {limit}" + (f" ({why})" if why else ""))


def check_seed(seed: object) -> None:
    check_number("seed", seed, 0, integer=True, below=2**32, why="numpy seeds are unsigned 32-bit")


def has_accelerator() -> bool:
    """A CUDA / XPU / MPS / ... device torch can train on (`torch.accelerator` is torch >= 2.6)."""
    accelerator = getattr(torch, "accelerator", None)
    return accelerator.is_available() if accelerator is not None else torch.cuda.is_available()


# /proc/cpuinfo flags of CPUs whose bf16 / fp16 matrix products run in hardware (AVX512-bf16, AMX, ...)
NATIVE_HALF_FLAGS = {
    "bf16": ("avx512_bf16", "amx_bf16"),
    "fp16": ("avx512_fp16", "amx_fp16"),
}


def cpu_flags(cpuinfo: str = "/proc/cpuinfo") -> set[str] | None:
    """The CPU's feature flags (Linux), or None where they cannot be read."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        return None
    return None


def warn_if_no_native_half_matmul(precision: str, flags: set[str] | None = None) -> bool:
    """Warn (and return True) when --bf16 / --fp16 autocast would run on a CPU without hardware for it.

    Without AVX512-bf16 / AMX, torch emulates half-precision matrix products: measured on an AVX2-only
    EPYC, a 2048³ bf16 GEMM ran at 0.2 GFLOP/s against 43 in fp32, so a `--bf16` run is ~200x slower,
    not faster. It still computes the right thing, so this is a warning, not an error.
    """
    flags = cpu_flags() if flags is None else flags
    if flags is None or any(flag in flags for flag in NATIVE_HALF_FLAGS[precision]):
        return False
    warnings.warn(
        f"--{precision} on a CPU without native {precision} matrix products (none of "
        f"{', '.join(NATIVE_HALF_FLAGS[precision])} in /proc/cpuinfo): autocast will emulate them and "
        f"train far slower than float32; drop --{precision} on this machine",
        stacklevel=3,
    )
    return True


@dataclass
class LinformerTrainingArguments(TrainingArguments):
    """`TrainingArguments` with the defaults both verbs share, `resume`, and CPU-only machines handled.

    On a machine without an accelerator `use_cpu` is set: the Trainer runs on the CPU anyway, and
    saying so makes `bf16=True` mean CPU autocast (the Trainer refuses it otherwise) and turns off
    pinned memory (CUDA-only).
    """

    # required: __post_init__ names it when missing (the Trainer's field is optional)
    output_dir: str = trainer_default("output_dir", None)
    # Trainer fields with our defaults (RoBERTa's recipe: decay 0.01, 6 % warm-up)
    per_device_eval_batch_size: int = post_init_field(
        "Batch size per device for evaluation; if absent, per_device_train_batch_size."
    )
    weight_decay: float = trainer_default("weight_decay", 0.01)
    warmup_steps: float = trainer_default("warmup_steps", 0.06)
    logging_steps: float = trainer_default("logging_steps", 50)
    save_total_limit: int | None = trainer_default("save_total_limit", 2)
    # the tokens/s of ThroughputCallback; a Literal (not the Trainer's `str | bool`) so the CLI takes the words
    include_num_input_tokens_seen: Literal["all", "non_padding", "no"] = trainer_default(
        "include_num_input_tokens_seen", "non_padding"
    )
    # ours
    resume: bool = dataclasses.field(
        default=False,
        metadata={
            "help": "Continue from the last complete checkpoint-* in output_dir (weights, optimizer, data "
            "position); if every checkpoint was cut off while being written, set them aside and start again."
        },
    )
    # set by the resume check: {checkpoint folder name: what is wrong with it} when none is complete
    incomplete_checkpoints: dict[str, str] = dataclasses.field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.output_dir is None:
            raise ValueError("output_dir: missing; give the directory to write the model to (--output-dir)")
        self._check_trainer_numbers()
        self._check_fields()
        if self.per_device_eval_batch_size is None:
            self.per_device_eval_batch_size = self.per_device_train_batch_size
        if self.data_seed is None:
            self.data_seed = self.seed  # data order from --seed unless --data_seed says otherwise
        if not has_accelerator():
            self.use_cpu = True
            if self.bf16 or self.fp16:
                warn_if_no_native_half_matmul("bf16" if self.bf16 else "fp16")
        super().__post_init__()  # the Trainer's own checks, after ours

    def _check_fields(self) -> None:
        """The verb's own fields (data, model), their values only; each config overrides this."""

    def preflight(self) -> None:
        """Every check that reads the file system, before any work (ValueError names the path and what is
        wrong): output_dir can be written, the verb's input files (`_check_inputs`), then the checkpoints
        (`resume` sets `resume_from_checkpoint` to the newest complete one)."""
        check_output_dir(self.output_dir)  # a file, a path below a file, no write permission
        self._check_inputs()
        self._check_checkpoints()

    def _check_inputs(self) -> None:
        """The verb's data files and model folders (read, not loaded); each config overrides this."""

    def _check_trainer_numbers(self) -> None:
        """The Trainer fields both verbs use: a clear error naming the value before the Trainer sees it."""
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps"):
            check_number(name, getattr(self, name), 1, integer=True)
        check_number("per_device_eval_batch_size", self.per_device_eval_batch_size, 1, integer=True,
                     optional=True)  # fmt: skip
        check_number("save_total_limit", self.save_total_limit, 1, integer=True, optional=True)
        # save / logging steps: an int >= 1 is steps, a float in (0, 1) a fraction of the run (the Trainer's rule)
        for name in ("save_steps", "logging_steps"):
            check_number(name, getattr(self, name), 0, exclusive=True)
        check_number("num_train_epochs", self.num_train_epochs, 0, exclusive=True)
        check_number("learning_rate", self.learning_rate, 0, exclusive=True)
        check_number("weight_decay", self.weight_decay, 0)
        check_number("warmup_steps", self.warmup_steps, 0, why="a float < 1 is a fraction of the steps")
        check_seed(self.seed)

    def _check_checkpoints(self) -> None:
        """`resume` -> `resume_from_checkpoint` = the newest *complete* checkpoint; never train over a run.

        Without a resume, output_dir must hold no checkpoint and no saved model (they would mix with
        this run's files); with `resume`, a checkpoint whose writing was cut off (a kill mid-save)
        is skipped for the one before it.
        """
        out = Path(self.output_dir)
        checkpoints = checkpoint_folders(out)
        if self.resume:
            if not checkpoints:
                raise ValueError(f"resume: {self.output_dir!r} holds no checkpoint-* folder to resume from")
            latest, broken = last_complete_checkpoint(out)
            if latest is None and self.resume_from_checkpoint is None:
                # killed while writing its first checkpoint: the run starts again from step 0, and
                # `set_aside_incomplete_checkpoints` moves the cut-off folders out of the way (kept, renamed)
                self.incomplete_checkpoints = broken
                return
            self.resume_from_checkpoint = self.resume_from_checkpoint or str(latest)
        if self.resume_from_checkpoint is not None:
            if not Path(self.resume_from_checkpoint).is_dir():
                raise ValueError(
                    f"resume_from_checkpoint: no such checkpoint folder: {self.resume_from_checkpoint!r}"
                )
            return
        if checkpoints:
            raise ValueError(
                f"{self.output_dir!r} already holds checkpoints: pass --resume to continue that run (one "
                "whose checkpoints were all cut off while being written then starts again from step 0), "
                "or choose another --output-dir"
            )
        if saved_files(out):
            raise ValueError(
                f"output_dir {self.output_dir!r} already holds {', '.join(saved_files(out))} "
                f"({self._what_output_dir_holds()}): choose another --output-dir"
            )

    def finished_result(self, result_class: type) -> Any | None:
        """With `resume`: the saved result of a run that already finished here (metrics.json and its
        model, as many steps or epochs as this config asks), as a `result_class`; None otherwise.
        Resuming a finished run changes nothing; asking for more steps continues it."""
        out = Path(self.output_dir)
        weights = any(
            (out / name).is_file() for name in ("model.safetensors", "model.safetensors.index.json")
        )
        if not (self.resume and (out / "metrics.json").is_file() and weights):
            return None
        saved = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
        if self.max_steps > 0 and saved.get("steps", 0) < self.max_steps:
            return None  # a finished run continued to a larger --max-steps: train on
        if self.max_steps < 0 and saved.get("config", {}).get("num_train_epochs", 0) < self.num_train_epochs:
            return None
        names = {field.name for field in dataclasses.fields(result_class)}
        warnings.warn(
            f"resume: {self.output_dir!r} holds a finished run ({saved.get('steps')} steps, metrics.json and "
            "the model): nothing to do, nothing changed; to train further, start a new run with --init-from",
            stacklevel=3,
        )
        return result_class(**{key: value for key, value in saved.items() if key in names})

    def set_aside_incomplete_checkpoints(self) -> list[Path]:
        """Rename the cut-off checkpoints a resume found (checkpoint-N -> incomplete-checkpoint-N[-2...]).

        Kept, not deleted (they may hold something a user wants to inspect), but out of the names a
        resume or the Trainer's rotation reads. Returns the new paths; a UserWarning says what happened.
        """
        moved = []
        for name, problem in self.incomplete_checkpoints.items():
            source = Path(self.output_dir) / name
            target = source.with_name(f"incomplete-{name}")
            suffix = 2
            while target.exists():
                target, suffix = source.with_name(f"incomplete-{name}-{suffix}"), suffix + 1
            source.rename(target)
            moved.append(target)
            warnings.warn(
                f"resume: {source} was cut off while being written ({problem}); moved to {target.name} "
                "and starting again from step 0",
                stacklevel=2,
            )
        self.incomplete_checkpoints = {}
        return moved

    def _what_output_dir_holds(self) -> str:
        """How the message names the files already in output_dir."""
        return "another model"
