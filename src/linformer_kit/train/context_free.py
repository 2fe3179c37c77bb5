"""The no-context floor: what a masked LM scores without looking at any other token.

BERT/RoBERTa masking scores 15% of the tokens; of those, a share p_m is shown as `<mask>`, p_r as a
random token (uniform over the V ids of the tokenizer) and p_k = 1 - p_m - p_r as itself (80/10/10).
A model that ignores every other position still learns two things: the unigram u(y) of the labels,
and that a visible token at a scored position is the label with some probability. With the joint
law of (input x, label y) at a scored position,

    P(x = <mask>, y) = p_m u(y)        P(x, y) = p_k u(x) [x = y] + p_r u(y) / V      (x visible)

the best prediction from x alone is q(y | x) = P(x, y) / P(x):

    q(y | <mask>) = u(y)
    q(y | x)      = (p_k u(x) [y = x] + p_r u(y) / V) / (p_k u(x) + p_r / V)

and its loss, the mean of -ln q(label | input) over the scored positions, is the **no-context
floor**. An encoder whose validation loss sits at it uses no context at all; only the distance
below it is learned language. Under 80/10/10 (p_k = p_r) a visible x at a scored position is the
label with probability u(x) / (u(x) + 1/V). With every token as rare as a random draw (u = 1/V)
that is a coin flip and the floor is 0.9 H + 0.2 ln 2 (H the unigram cross-entropy); frequent
tokens make the kept case cheaper, while random replacements (uniform over V, so mostly rare ids)
still cost about H + ln 2 each.

`no_context_loss` evaluates it on real masked batches (the pretraining collator, so the same masks
as the evaluation where the batching is the same), with u the add-one-smoothed unigram of the
*training* labels: the floor of a model that learned the training counts. Checked by
tests/train/test_context_free.py (all-`<mask>` masking gives exactly the unigram cross-entropy; the
80/10/10 value matches the closed form above).
"""

from __future__ import annotations

import numpy as np
import torch
from datasets import Dataset
from transformers import DataCollatorForLanguageModeling, PreTrainedTokenizerBase


def label_unigram(
    blocks: Dataset, tokenizer: PreTrainedTokenizerBase, max_tokens: int = 10_000_000
) -> torch.Tensor:
    """(V,) add-one-smoothed frequencies of the tokens masking can score (no special tokens) in blocks.

    Counts at most the first `max_tokens` tokens (rows of blocks): enough for a unigram, bounded time.
    """
    vocab = len(tokenizer)
    rows = max(1, max_tokens // max(1, len(blocks[0]["input_ids"])))
    ids = np.asarray(blocks.select(range(min(rows, len(blocks)))).with_format("numpy")["input_ids"])
    counts = np.bincount(ids.reshape(-1), minlength=vocab).astype(np.float64)[:vocab] + 1.0
    counts[tokenizer.all_special_ids] = 0.0  # never scored (masking skips them)
    return torch.from_numpy(counts / counts.sum())


def no_context_loss(
    collator: DataCollatorForLanguageModeling,
    blocks: Dataset,
    unigram: torch.Tensor,
    batch_size: int,
) -> float:
    """Mean -ln q(label | input at that position) over the scored positions of blocks (module docstring)."""
    vocab = len(unigram)
    p_random = collator.random_replace_prob if collator.mask_replace_prob < 1 else 0.0
    p_kept = 1.0 - collator.mask_replace_prob - p_random
    mask_id = collator.tokenizer.mask_token_id
    total, scored = 0.0, 0
    for start in range(0, len(blocks), batch_size):
        batch = collator([blocks[i] for i in range(start, min(start + batch_size, len(blocks)))])
        labelled = batch["labels"] != -100
        x, y = batch["input_ids"][labelled], batch["labels"][labelled]  # (m,), (m,)
        u_x, u_y = unigram[x], unigram[y]  # special tokens (<mask> among them) have u = 0
        mixed = (p_kept * u_x * (x == y) + p_random * u_y / vocab) / (p_kept * u_x + p_random / vocab)
        q = torch.where(x == mask_id, u_y, mixed)  # (m,)
        total += float(-torch.log(q).sum())
        scored += int(labelled.sum())
    if scored == 0:
        raise ValueError("no_context_loss: the collator scored no position of these blocks")
    return total / scored
