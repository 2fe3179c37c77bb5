"""`linformer pretrain`: masked-LM pretraining of a Linformer (or the full-attention baseline).

    linformer pretrain --train books/ --output-dir runs/mlm --preset small --seq-len 512 --projected-length 128
    linformer pretrain --config run.yaml --bf16          # options from a YAML / JSON file, flags on top
    torchrun --nproc_per_node 2 -m linformer_kit.cli.main pretrain --train books/ --output-dir runs/mlm

The flags are the fields of `PretrainConfig`: ours (data, model, tokenizer) and every
`TrainingArguments` field under the Trainer's name (`--learning_rate`, `--bf16`, `--report_to`, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from linformer_kit.cli.arguments import tokens_per_second, train_loss_text, training_verb

if TYPE_CHECKING:
    from linformer_kit.train.pretrain import PretrainResult


def summary(result: PretrainResult) -> str:
    loss = f"{train_loss_text(result)}, " if result.train_loss is not None else ""
    return (
        f"pretrain done: {result.steps} steps, {loss}validation loss {result.eval_loss:.3f}, "
        f"perplexity {result.perplexity:.2f} (no-context floor {result.no_context_perplexity:.2f}"
        f"{'' if result.learned_context else ': no context learned yet'}), {by_position(result)}"
        f"{tokens_per_second(result)}; model saved to {result.output_dir}"
    )


def by_position(result: PretrainResult) -> str:
    """'by position 0-511 80.1 / 512-1023 85.3 / 1024-2047 90.2, ' (one range: nothing)."""
    ranges = result.perplexity_by_position
    if len(ranges) < 2:
        return ""
    return "by position " + " / ".join(f"{name} {value:.2f}" for name, value in ranges.items()) + ", "


build_parser, main = training_verb("pretrain", summary)  # its flags, usage and help: TRAINING_VERBS
