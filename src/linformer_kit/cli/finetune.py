"""`linformer finetune`: sequence classification (sentences or pairs) of a model directory, or from scratch.

    linformer finetune --model runs/mlm --train sst2/train.tsv --validation sst2/dev.tsv --output-dir runs/sst2
    linformer finetune --preset tiny --tokenizer bytes --train t.tsv --validation d.tsv --output-dir runs/clf

The flags are the fields of `FinetuneConfig`: ours (model, data, columns) and every
`TrainingArguments` field under the Trainer's name (`--learning_rate`, `--save_steps`, `--bf16`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from transformers import HfArgumentParser

from linformer_kit.cli.arguments import config_parser, run_training_verb, tokens_per_second, train_loss_text

if TYPE_CHECKING:
    from linformer_kit.train.finetune import FinetuneResult


def build_parser() -> HfArgumentParser:
    from linformer_kit.train.finetune import FinetuneConfig

    return config_parser(
        FinetuneConfig,
        prog="linformer finetune",
        usage="linformer finetune (--model DIR | --preset NAME --tokenizer bytes|word|DIR) --output-dir DIR "
        "(--train FILE --validation FILE | --dataset NAME | --glue-task TASK) [--config FILE] "
        "[--OPTION VALUE ...]",
        description="Sequence classification with the Hugging Face Trainer, of a pretrained model or of a "
        "new one trained from scratch; reports dev accuracy (and F1). Every Trainer option is a flag.",
    )


def main(argv: list[str]) -> int:
    from linformer_kit.train.finetune import finetune

    return run_training_verb(build_parser(), finetune, summary, argv)


def summary(result: FinetuneResult) -> str:
    return (
        f"finetune done: {result.steps} steps, {train_loss_text(result)}, "
        f"{result.metrics_text()} ({result.eval_examples} examples), {tokens_per_second(result)}; "
        f"model saved to {result.output_dir}"
    )
