"""A bank of negatives for the long stage's halves term (b): second halves of earlier steps, kept detached.

The halves term (long_losses.py `halves_loss`) tells each span's first half a_i its own second half p_i
among the batch's: at the default batch of 4 spans, 3 negatives a half. The held-out test it stands for tells a
first half from hundreds of second halves (docs/reproduction/long-minilm/heldout). Cross-batch memory (XBM,
Wang et al. 2020, "Cross-Batch Memory for Embedding Learning") keeps the embeddings of earlier batches as
further negatives at no batch cost: they are stale (read by the weights of their own step), which XBM finds
harmless once the embedding drifts slowly, as a student that starts from the distilled 512 reading does at a
learning rate of 2e-5. With M banked rows m_j (unit, no gradient):

    L_mnr = CE(scale · [cos(a_i, p_1..p_b), cos(a_i, m_1..m_M)], i)

A bank holds the newest `size` second halves (first in, first out) and starts empty; a resumed stage starts it
empty again (it is not saved: it refills in size / batch steps). Each process banks its own halves (no
all-gather across ranks, unlike XBM). Measured on the held-out books (docs/reproduction/long-minilm/heldout,
"A bank of negatives"): M = 128 lowered the student's own readings at 4 096 by 15-20 points. The long
stage's spans then came from 8-15 books, so a bank held passages of those same few books only, often several of
the query's own: a likely reason, not tested apart from the bank's size and staleness. Hence
`long_spans_per_document`, and the default M = 0.
"""

from __future__ import annotations

import torch


class NegativesBank:
    """The newest `size` (>= 1) rows pushed, detached, as one (M, D) tensor (M <= size; `rows` is None while
    empty)."""

    def __init__(self, size: int) -> None:
        assert size >= 1, size  # DistillConfig's negatives_bank is the option's one validation
        self.size = size
        self.rows: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.rows is None else len(self.rows)

    def push(self, rows: torch.Tensor) -> None:
        """Keep `rows` (b, D) after those held, the oldest dropped past `size`."""
        rows = rows.detach()
        held = rows if self.rows is None else torch.cat([self.rows, rows])
        self.rows = held[-self.size :].clone()  # a copy: no view keeps a step's whole batch alive
