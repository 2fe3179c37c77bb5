"""`linformer distill`: a Linformer made from a pretrained encoder, distilled from it (train/distill.py).

    linformer distill --teacher all-MiniLM-L6-v2/ --train reviews.jsonl.gz --output-dir runs/minilm-k128 \
        --projected-length 128 --local-window 16 --global-tokens 1

The flags are the fields of `DistillConfig`: ours (teacher, data, Linformer options, stages) and every
`TrainingArguments` field under the Trainer's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from transformers import HfArgumentParser

from linformer_kit.cli.arguments import config_parser, run_training_verb

if TYPE_CHECKING:
    from linformer_kit.train.distill import DistillResult


def build_parser() -> HfArgumentParser:
    from linformer_kit.train.distill import DistillConfig

    return config_parser(
        DistillConfig,
        prog="linformer distill",
        usage="linformer distill --teacher DIR --train PATH [PATH ...] --output-dir DIR [--OPTION VALUE ...]",
        description="Convert a pretrained encoder to a Linformer and distil it from the original (attention "
        "transfer, then end to end) with the Hugging Face Trainer; every Trainer option is a flag.",
    )


def main(argv: list[str]) -> int:
    from linformer_kit.train.distill import distill

    return run_training_verb(build_parser(), distill, summary, argv)


def summary(result: DistillResult) -> str:
    stages = ", ".join(f"{stage} {score:.4f}" for stage, score in result.fidelity.items())
    return (
        f"distill done: fidelity (mean cosine to the teacher's embeddings, {result.eval_documents} held-out "
        f"documents) {stages}; two different documents under the teacher: {result.different_documents:.4f}; "
        f"model saved to {result.output_dir}"
    )
