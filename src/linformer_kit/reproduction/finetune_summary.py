"""Finetuning over seeds and input lengths: accuracy by length bucket, the majority-class line, mean ± std.

A finetuning record (reproduction/results.py) carries its run's accuracy by input-length bucket and
the accuracy of always answering the dev set's most frequent label, both read from the run's
eval_predictions.jsonl; `summarise_finetuning` pools the seeds of each (task, pretrained model) into
results.json's "finetune_summary", which the tables (reproduction/results_tables.py) print. Apart from
the records because it is arithmetic over them, with the buckets it is done in.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

# input length in tokens: 1-16, then powers of two up to 65 536 (every input a model here can read)
LENGTH_BUCKETS = ((1, 16), *((2**i + 1, 2 ** (i + 1)) for i in range(4, 16)))


def majority_share(path: Path) -> float | None:
    """The accuracy of always answering the dev set's most frequent label (the line every result needs)."""
    if not path.is_file():
        return None
    labels = [json.loads(line)["label"] for line in path.read_text().splitlines()]
    return max(labels.count(label) for label in set(labels)) / len(labels) if labels else None


def accuracy_by_length(path: Path) -> list[dict[str, Any]]:
    """Accuracy in each LENGTH_BUCKETS bucket of a run's eval_predictions.jsonl (its tokens, examples)."""
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    buckets = []
    for low, high in LENGTH_BUCKETS:
        inside = [r for r in rows if low <= r["tokens"] <= high]
        if inside:
            correct = sum(r["label"] == r["predicted"] for r in inside)
            buckets.append(
                {"tokens": f"{low}-{high}", "examples": len(inside), "accuracy": correct / len(inside)}
            )
    return buckets


def summarise_finetuning(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± sample std of accuracy over seeds, per (task, pretrained model); every seed listed."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        if r["task"] == "finetune" and r.get("accuracy") is not None:
            groups.setdefault((r["dataset"], r["pretrained"]), []).append(r)
    summary = []
    for (dataset, model), members in groups.items():
        accuracies = [m["accuracy"] for m in members]
        summary.append(
            {
                "dataset": dataset,
                "pretrained": model,
                "seeds": [m["seed"] for m in members],
                "accuracies": accuracies,
                "mean": statistics.mean(accuracies),
                "std": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0,
                # the line to read every accuracy against (the same evaluation examples for every seed)
                "majority_class_accuracy": next(
                    (
                        m["majority_class_accuracy"]
                        for m in members
                        if m.get("majority_class_accuracy") is not None
                    ),
                    None,
                ),
                "accuracy_by_length": _pooled_buckets(members),
            }
        )
    return summary


def _pooled_buckets(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pooled: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for m in members:
        for b in m.get("accuracy_by_length", []):
            pooled.setdefault(b["tokens"], []).append(b["accuracy"])
            counts[b["tokens"]] = b["examples"]
    return [
        {"tokens": t, "examples": counts[t], "mean_accuracy": statistics.mean(a)} for t, a in pooled.items()
    ]
