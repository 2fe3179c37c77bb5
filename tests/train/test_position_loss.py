"""Masked-LM loss by position range (train/position_loss.py) against a slow reference: every logit of
every block, per-position cross-entropy, averaged range by range in a Python loop; and the ranges
together give the whole block's loss (the token-weighted mean)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from torch.nn import functional as F
from transformers import AutoTokenizer

from linformer_kit.models import LinformerForMaskedLM
from linformer_kit.train.position_loss import loss_by_position, position_ranges
from linformer_kit.train.pretrain import ResumableMaskingCollator


def test_ranges_are_quarter_quarter_half() -> None:
    assert position_ranges(2048) == [(0, 512), (512, 1024), (1024, 2048)]
    assert position_ranges(30) == [(0, 7), (7, 15), (15, 30)]
    assert position_ranges(3) == [(0, 3)]  # too short to split


@pytest.fixture
def setup(tiny_model_dir: Path) -> tuple[LinformerForMaskedLM, ResumableMaskingCollator, Dataset]:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = LinformerForMaskedLM.from_pretrained(tiny_model_dir).eval()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(len(tokenizer.all_special_ids), len(tokenizer), (10, 32), generator=generator)
    blocks = Dataset.from_dict({"input_ids": ids.tolist()})
    return model, ResumableMaskingCollator(tokenizer, mlm_probability=0.15, seed=3), blocks


def test_loss_by_position_matches_a_per_position_reference(setup) -> None:
    model, collator, blocks = setup
    ranges = position_ranges(32)  # (0, 8), (8, 16), (16, 32)
    fast = loss_by_position(model, collator, blocks, batch_size=4, ranges=ranges)

    sums, counts = [0.0] * len(ranges), [0] * len(ranges)
    whole, scored = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(blocks), 4):  # the same batches: the collator's masks are per batch
            batch = collator([blocks[i] for i in range(start, min(start + 4, len(blocks)))])
            out = model(input_ids=batch["input_ids"], labels=batch["labels"])  # logits (b, n, V)
            m = int(batch["labels"].ne(-100).sum())
            whole, scored = whole + out.loss.item() * m, scored + m
            for b, t in batch["labels"].ne(-100).nonzero().tolist():
                loss = F.cross_entropy(out.logits[b, t][None], batch["labels"][b, t][None]).item()
                i = next(i for i, (lo, hi) in enumerate(ranges) if lo <= t < hi)
                sums[i], counts[i] = sums[i] + loss, counts[i] + 1
    assert [count for _, count in fast.values()] == counts
    torch.testing.assert_close([loss for loss, _ in fast.values()], [s / c for s, c in zip(sums, counts)])
    weighted = sum(loss * count for loss, count in fast.values()) / sum(counts)
    assert sum(counts) == scored
    assert math.isclose(weighted, whole / scored, rel_tol=1e-5)


def test_a_range_nothing_was_scored_in_is_nan(setup) -> None:
    model, collator, blocks = setup
    result = loss_by_position(model, collator, blocks, batch_size=5, ranges=[(0, 32), (32, 40)])
    assert result["0-31"][1] > 0
    loss, count = result["32-39"]
    assert count == 0
    assert math.isnan(loss)
