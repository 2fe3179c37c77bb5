"""Masked-LM validation loss by position range: does a long model read its far positions well?

A model extended from L to N positions (`linformer pretrain --init-from DIR --seq-len N`) can score
well on average while its new positions lag. Split the validation loss by where the scored token
sits in its block:

    loss(a, b) = mean of -ln p(label_t | block) over the scored positions t with a <= t < b

over the ranges `position_ranges(n)` (the first quarter, the second quarter, the second half: 0-511,
512-1023, 1024-2047 at n = 2 048; at an extension from 512 to 2 048 the first range is what the short
model was trained on). The masks are the pretraining collator's (a function of the block: the same
masks in every model evaluated on the same blocks), so the token-weighted mean of the ranges is the
validation loss of the whole block, `Trainer.evaluate()`'s eval_loss on the same blocks
(tests/train/test_position_loss.py).
"""

from __future__ import annotations

import torch
from datasets import Dataset
from torch.nn import functional as F
from transformers import DataCollatorForLanguageModeling, PreTrainedModel


def position_ranges(seq_len: int) -> list[tuple[int, int]]:
    """[(0, n/4), (n/4, n/2), (n/2, n)]: the first quarter, the second quarter, the second half."""
    quarter, half = seq_len // 4, seq_len // 2
    return [(0, quarter), (quarter, half), (half, seq_len)] if quarter > 0 else [(0, seq_len)]


def range_name(start: int, stop: int) -> str:
    return f"{start}-{stop - 1}"


@torch.no_grad()
def loss_by_position(
    model: PreTrainedModel,
    collator: DataCollatorForLanguageModeling,
    blocks: Dataset,
    batch_size: int,
    ranges: list[tuple[int, int]],
) -> dict[str, tuple[float, int]]:
    """{"a-b": (mean loss over the scored positions in [a, b), how many were scored)} over `blocks`.

    A range that no masked token fell in gets (nan, 0).
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    totals = torch.zeros(len(ranges), dtype=torch.float64)
    counts = torch.zeros(len(ranges), dtype=torch.int64)
    bounds = torch.tensor([start for start, _ in ranges] + [ranges[-1][1]])  # (r + 1,)
    for start in range(0, len(blocks), batch_size):
        batch = collator([blocks[i] for i in range(start, min(start + batch_size, len(blocks)))])
        labels = batch["labels"].to(device)  # (b, n), -100 where not scored
        logits = model(
            input_ids=batch["input_ids"].to(device),
            attention_mask=batch["attention_mask"].to(device) if "attention_mask" in batch else None,
            labels=labels,
            logits_for="labelled",
        ).logits  # (m, V) at the scored positions, in row-major order
        scored = labels.ne(-100)
        losses = F.cross_entropy(logits.float(), labels[scored], reduction="none").double().cpu()  # (m,)
        where = scored.nonzero()[:, 1].cpu()  # (m,) the position of each scored token
        bucket = torch.bucketize(where, bounds, right=True) - 1  # (m,) index of its range
        inside = (bucket >= 0) & (bucket < len(ranges))
        totals.index_add_(0, bucket[inside], losses[inside])
        counts.index_add_(0, bucket[inside], torch.ones_like(bucket[inside]))
    model.train(was_training)
    return {
        range_name(a, b): ((totals[i] / counts[i]).item() if counts[i] else float("nan"), int(counts[i]))
        for i, (a, b) in enumerate(ranges)
    }
