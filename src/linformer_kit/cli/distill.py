"""`linformer distill`: a Linformer made from a pretrained encoder, distilled from it (train/distill/run.py).

    linformer distill --teacher all-MiniLM-L6-v2/ --train reviews.jsonl.gz --output-dir runs/minilm-k128 \
        --projected-length 128 --local-window 64 --global-tokens 1

(window 64 and [CLS] global: fidelity 0.976 on all-MiniLM-L6-v2 after 150 steps; docs/distill.md).

The flags are the fields of `DistillConfig`: ours (teacher, data, Linformer options, stages) and every
`TrainingArguments` field under the Trainer's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from linformer_kit.cli.arguments import training_verb

if TYPE_CHECKING:
    from linformer_kit.train.distill import DistillResult


def summary(result: DistillResult) -> str:
    stages = ", ".join(f"{stage} {score:.4f}" for stage, score in result.fidelity.items())
    source, lowest = result.lowest()
    return (
        f"distill done: lowest fidelity {lowest:.4f} ({source}); fidelity (mean cosine to the teacher's embeddings, {result.eval_documents} held-out "
        f"documents) {stages}; two different documents under the teacher: {result.different_documents:.4f}; "
        f"model saved to {result.output_dir}"
    )


build_parser, main = training_verb("distill", summary)  # its flags, usage and help: TRAINING_VERBS
