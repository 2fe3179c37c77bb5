"""Pretraining and finetuning on the Hugging Face stack (Trainer, datasets, tokenizers).

    from linformer_kit.train import PretrainConfig, pretrain, FinetuneConfig, finetune
    result = pretrain(PretrainConfig(train=["books/"], output_dir="runs/mlm", preset="small", max_steps=300))

Each function takes one validated config dataclass and returns a result dataclass; it also writes
`output_dir/metrics.json` next to the saved model. The configs are `TrainingArguments` subclasses
(`LinformerTrainingArguments`): every Trainer option is a field under its own name. The same calls run under `torchrun` and
`accelerate launch` (DDP / FSDP come from `Trainer`).
"""

from linformer_kit.train.finetune import GLUE_TASKS, FinetuneConfig, FinetuneResult, finetune
from linformer_kit.train.pretrain import PRESETS, PretrainConfig, PretrainResult, pretrain
from linformer_kit.train.training_arguments import LinformerTrainingArguments

__all__ = [
    "GLUE_TASKS",
    "PRESETS",
    "FinetuneConfig",
    "FinetuneResult",
    "LinformerTrainingArguments",
    "PretrainConfig",
    "PretrainResult",
    "finetune",
    "pretrain",
]
