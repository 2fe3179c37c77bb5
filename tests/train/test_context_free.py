"""The no-context floor (train/context_free.py) against its definition and its closed form."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from transformers import DataCollatorForLanguageModeling

from linformer_kit.train.context_free import label_unigram, no_context_loss
from linformer_kit.train.pretrain import ResumableMaskingCollator
from tests.fixtures.tokenizers import corpus_tokenizer


@pytest.fixture(scope="module")
def tokenizer(corpus: Path):
    return corpus_tokenizer(corpus)


def uniform_blocks(tokenizer, rows: int, seed: int) -> Dataset:
    """Blocks of 256 ids drawn uniformly from the tokens masking can score, framed by <s> ... </s>."""
    special = set(tokenizer.all_special_ids)
    words = torch.tensor([i for i in range(len(tokenizer)) if i not in special])
    draws = words[torch.randint(len(words), (rows, 254), generator=torch.Generator().manual_seed(seed))]
    frame = [[tokenizer.bos_token_id, *row, tokenizer.eos_token_id] for row in draws.tolist()]
    return Dataset.from_dict({"input_ids": frame})


def test_all_mask_floor_is_the_unigram_cross_entropy(tokenizer) -> None:
    train, valid = uniform_blocks(tokenizer, 64, seed=0), uniform_blocks(tokenizer, 16, seed=1)
    unigram = label_unigram(train, tokenizer)
    collator = DataCollatorForLanguageModeling(
        tokenizer, mask_replace_prob=1.0, random_replace_prob=0.0, seed=3
    )
    got = no_context_loss(collator, valid, unigram, batch_size=8)

    reference = DataCollatorForLanguageModeling(
        tokenizer, mask_replace_prob=1.0, random_replace_prob=0.0, seed=3
    )
    labels = torch.cat([reference([valid[i] for i in range(s, s + 8)])["labels"] for s in range(0, 16, 8)])
    labels = labels[labels != -100]
    assert torch.all(unigram[list(tokenizer.all_special_ids)] == 0)
    torch.testing.assert_close(got, float(-unigram[labels].log().mean()), rtol=1e-9, atol=0)


def test_80_10_10_floor_matches_the_closed_form(tokenizer) -> None:
    """Uniform labels over W scorable ids of V: the floor's expectation, case by case (module docstring)."""
    train, valid = uniform_blocks(tokenizer, 800, seed=0), uniform_blocks(tokenizer, 600, seed=1)
    collator = ResumableMaskingCollator(tokenizer, mlm_probability=0.15, seed=42)  # 80/10/10
    got = no_context_loss(collator, valid, label_unigram(train, tokenizer), batch_size=64)

    v = len(tokenizer)
    w = v - len(set(tokenizer.all_special_ids))
    u, p_mask, p_random, p_kept = 1 / w, 0.8, 0.1, 0.1
    shown_is_label = -math.log((p_kept * u + p_random * u / v) / (p_kept * u + p_random / v))
    shown_is_other = -math.log((p_random * u / v) / (p_kept * u + p_random / v))
    random_case = (v - w) / v * -math.log(u) + w / v * (u * shown_is_label + (1 - u) * shown_is_other)
    expected = p_mask * -math.log(u) + p_kept * shown_is_label + p_random * random_case
    assert got == pytest.approx(expected, rel=1e-2)  # ~23 000 scored positions: sampling error ~0.3%
    assert got < -math.log(u) - 0.05  # a visible token is worth something without any context


def test_no_scored_position_is_an_error(tokenizer) -> None:
    blocks = Dataset.from_dict({"input_ids": [[tokenizer.bos_token_id, tokenizer.eos_token_id]]})
    collator = DataCollatorForLanguageModeling(tokenizer, seed=0)
    with pytest.raises(ValueError, match="scored no position"):
        no_context_loss(collator, blocks, torch.full((len(tokenizer),), 1 / len(tokenizer)), batch_size=1)
