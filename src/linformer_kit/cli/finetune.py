"""`linformer finetune`: sequence classification (sentences or pairs) of a model directory, or from scratch.

    linformer finetune --model runs/mlm --train sst2/train.tsv --validation sst2/dev.tsv --output-dir runs/sst2
    linformer finetune --preset tiny --tokenizer bytes --train t.tsv --validation d.tsv --output-dir runs/clf

The flags are the fields of `FinetuneConfig`: ours (model, data, columns) and every
`TrainingArguments` field under the Trainer's name (`--learning_rate`, `--save_steps`, `--bf16`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from linformer_kit.cli.arguments import tokens_per_second, train_loss_text, training_verb

if TYPE_CHECKING:
    from linformer_kit.train.finetune import FinetuneResult


def summary(result: FinetuneResult) -> str:
    return (
        f"finetune done: {result.steps} steps, {train_loss_text(result)}, "
        f"{result.metrics_text()} ({result.eval_examples} examples), {tokens_per_second(result)}; "
        f"model saved to {result.output_dir}"
    )


build_parser, main = training_verb("finetune", summary)  # its flags, usage and help: TRAINING_VERBS
