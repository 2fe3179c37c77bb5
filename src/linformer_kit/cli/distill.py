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
    """The run's last line: the lowest fidelity, or, where the original reads every input the fidelity reads
    (1 by construction), that; the long stage's verdict; the fidelity after each stage; the folder."""
    from linformer_kit.train.distill.verdict import reading_line

    stages = [f"{stage} {score:.4f}" for stage, score in result.fidelity.items()]
    if result.read_by_original is not None:
        first = f"up to {result.read_by_original} tokens read by the original (fidelity 1 by construction)"
        stages[-1] += " (read by the original)"
    else:
        source, lowest = result.lowest()
        first = f"lowest fidelity {lowest:.4f} ({source})"
    reading = result.long_reading
    verdict = f"{reading_line(reading, result.stage_seconds.get('long'))}; " if reading else ""
    return (
        f"distill done: {first}; {verdict}fidelity (mean cosine to the teacher's embeddings, {result.eval_documents} "
        f"held-out documents) {', '.join(stages)}; two different documents under the teacher: "
        f"{result.different_documents:.4f}; model saved to {result.output_dir}"
    )


build_parser, main = training_verb("distill", summary)  # its flags, usage and help: TRAINING_VERBS
