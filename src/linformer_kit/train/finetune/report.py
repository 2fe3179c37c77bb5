"""What a finetuning run says: its result, and each dev example's prediction."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import datasets
import numpy as np


@dataclass
class FinetuneResult:
    output_dir: str
    steps: int
    train_loss: float
    eval_loss: float
    accuracy: float | None  # on the validation (dev) split; None for regression
    f1: float | None  # binary tasks: F1 of label id 1
    tokens_per_second: float | None  # real (non-pad) training tokens per wall-clock second
    num_labels: int  # 1: regression
    train_examples: int
    eval_examples: int
    pearson: float | None = None  # regression: correlation of predictions and dev scores
    spearman: float | None = None
    resumed_from_step: int = 0  # --resume: the checkpoint's step (train_loss covers the steps after it)

    def metrics_text(self) -> str:
        """'dev accuracy 0.9100, F1 0.9000' or, for regression, 'dev Pearson 0.8500, Spearman 0.8400'."""
        if self.accuracy is None:
            return f"dev Pearson {self.pearson:.4f}, Spearman {self.spearman:.4f}"
        return f"dev accuracy {self.accuracy:.4f}" + (f", F1 {self.f1:.4f}" if self.f1 is not None else "")


def write_predictions(output_dir: str, dev: datasets.Dataset, prediction, regression: bool = False) -> None:
    """eval_predictions.jsonl: per dev example its length in tokens, label id and predicted id
    (regression: the dev score and the predicted score).

    What accuracy-by-input-length needs (docs/reproduction.md), without running the model again.
    """
    if regression:
        predicted = np.asarray(prediction.predictions, dtype=np.float64).reshape(-1)
        labels = np.asarray(prediction.label_ids, dtype=np.float64).reshape(-1)
        cast: type[float] | type[int] = float
    else:
        predicted, labels, cast = np.argmax(prediction.predictions, axis=-1), prediction.label_ids, int
    with open(Path(output_dir) / "eval_predictions.jsonl", "w") as f:
        for ids, label, guess in zip(dev["input_ids"], labels, predicted):
            f.write(json.dumps({"tokens": len(ids), "label": cast(label), "predicted": cast(guess)}) + "\n")
