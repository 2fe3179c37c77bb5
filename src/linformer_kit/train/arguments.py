"""`TrainingArguments` as the base of every training config: the Trainer's own fields, our defaults.

`PretrainConfig` and `FinetuneConfig` subclass `LinformerTrainingArguments`, so each is the Trainer's
arguments object itself (`Trainer(args=config)`), every Trainer option (`bf16`, `report_to`,
`warmup_steps`, `save_total_limit`, ...) is a field under the Trainer's name, and `HfArgumentParser`
builds the command line of `linformer pretrain` / `finetune` from the class. One source per field:

    a Trainer field whose default suits us   inherited untouched (learning rates aside, most of them)
    a Trainer field with another default     re-declared once below or in the verb's config (`trainer_default`)
    a field of ours (data, model, resume)     declared in the verb's config

Validation happens once, in `__post_init__`: ours first (a bad value is named before anything
starts), then the Trainer's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import torch
from transformers import TrainingArguments
from transformers.trainer_utils import get_last_checkpoint


def trainer_default(name: str, default: Any) -> Any:
    """The `TrainingArguments` field `name`, help text included, with another default."""
    return dataclasses.field(default=default, metadata=TrainingArguments.__dataclass_fields__[name].metadata)


def has_accelerator() -> bool:
    """A CUDA / XPU / MPS / ... device torch can train on (`torch.accelerator` is torch >= 2.6)."""
    accelerator = getattr(torch, "accelerator", None)
    return accelerator.is_available() if accelerator is not None else torch.cuda.is_available()


@dataclass
class LinformerTrainingArguments(TrainingArguments):
    """`TrainingArguments` with the defaults both verbs share, `resume`, and CPU-only machines handled.

    On a machine without an accelerator `use_cpu` is set: the Trainer runs on the CPU anyway, and
    saying so makes `bf16=True` mean CPU autocast (the Trainer refuses it otherwise) and turns off
    pinned memory (CUDA-only).
    """

    # Trainer fields with our defaults (RoBERTa's recipe: decay 0.01, 6 % warm-up)
    per_device_eval_batch_size: int | None = dataclasses.field(
        default=None,
        metadata={"help": "Batch size per device for evaluation; if absent, per_device_train_batch_size."},
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
            "help": "Continue from the last checkpoint-* in output_dir (weights, optimizer, data position)."
        },
    )

    def __post_init__(self) -> None:
        if self.output_dir is None:
            raise ValueError("output_dir: missing; give the directory to write the model to (--output-dir)")
        self._check_checkpoints()
        if self.per_device_eval_batch_size is None:
            self.per_device_eval_batch_size = self.per_device_train_batch_size
        if self.data_seed is None:
            self.data_seed = self.seed  # data order from --seed unless --data_seed says otherwise
        if not has_accelerator():
            self.use_cpu = True
        super().__post_init__()

    def _check_checkpoints(self) -> None:
        """`resume` -> `resume_from_checkpoint` = the last checkpoint; never train over checkpoints silently."""
        last = get_last_checkpoint(self.output_dir) if Path(self.output_dir).is_dir() else None
        if self.resume:
            if last is None:
                raise ValueError(f"resume: {self.output_dir!r} holds no checkpoint-* folder to resume from")
            self.resume_from_checkpoint = self.resume_from_checkpoint or last
        if self.resume_from_checkpoint is not None and not Path(self.resume_from_checkpoint).is_dir():
            raise ValueError(
                f"resume_from_checkpoint: no such checkpoint folder: {self.resume_from_checkpoint!r}"
            )
        if last is not None and self.resume_from_checkpoint is None:
            raise ValueError(
                f"{self.output_dir!r} already holds checkpoints: pass --resume to continue that run, "
                f"or choose another --output-dir"
            )
