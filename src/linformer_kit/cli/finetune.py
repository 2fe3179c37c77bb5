"""`linformer finetune`: sequence classification (single sentences or pairs) from a model directory.

    linformer finetune --model runs/mlm --train sst2/train.tsv --validation sst2/dev.tsv --output-dir runs/sst2

The flags are the fields of `FinetuneConfig`: ours (model, data, columns) and every
`TrainingArguments` field under the Trainer's name (`--learning_rate`, `--save_steps`, `--bf16`, ...).
"""

from __future__ import annotations

import os

from transformers import HfArgumentParser

from linformer_kit.cli.arguments import config_parser, parse_config


def build_parser() -> HfArgumentParser:
    from linformer_kit.train.finetune import FinetuneConfig

    return config_parser(
        FinetuneConfig,
        prog="linformer finetune",
        usage="linformer finetune --model DIR --output-dir DIR (--train FILE --validation FILE | --dataset NAME "
        "| --glue-task TASK) [--config FILE] [--OPTION VALUE ...]",
        description="Sequence classification with the Hugging Face Trainer; reports dev accuracy (and F1). "
        "Every Trainer option is a flag.",
    )


def main(argv: list[str]) -> int:
    from linformer_kit.train.finetune import finetune

    result = finetune(parse_config(build_parser(), argv))
    if os.environ.get("RANK", "0") != "0":  # under torchrun / accelerate, one summary line
        return 0
    speed = f"{result.tokens_per_second:,.0f} tokens/s" if result.tokens_per_second else "tokens/s n/a"
    print(
        f"finetune done: {result.steps} steps, train loss {result.train_loss:.3f}, "
        f"{result.metrics_text()} ({result.eval_examples} examples), {speed}; "
        f"model saved to {result.output_dir}"
    )
    return 0
