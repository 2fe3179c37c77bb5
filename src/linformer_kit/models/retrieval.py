"""How retrieval scores rows: a query's rows against each document's rows, and the rank of its own document.

Each text is a list of unit rows (m, D) (models/readings.py makes them). A document scores its best row against
the query's vector (its rows' normalised mean), or by Chamfer each query row's best document row, averaged;
the rank of a query's own document is 1 + the documents scoring above it + those scoring the same that come
first (argmax's rule), so rank 1 is exactly a hit. Torch only.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F


def retrieval_scores(
    queries: list[torch.Tensor], documents: list[torch.Tensor], chamfer: bool = False
) -> torch.Tensor:
    """(Q, N): query i's score of document j, each a list of unit rows (m, D). By default the max cosine of
    j's rows with i's vector (its rows' normalised mean); `chamfer`: the mean over i's rows of each one's max
    cosine with j's rows (Khattab and Zaharia 2020's MaxSim, summed over query rows, divided by their count)."""
    if chamfer:
        return torch.stack(
            [torch.stack([(q @ d.T).max(-1).values.mean() for d in documents]) for q in queries]
        )
    q = torch.stack([document_vector(r) for r in queries])  # (Q, D)
    return torch.stack([(q @ d.T).max(-1).values for d in documents], dim=1)


def retrieval_ranks(
    queries: list[torch.Tensor], documents: list[torch.Tensor], targets: list[int], chamfer: bool = False
) -> torch.Tensor:
    """(Q,) long: the rank (1 = first) of document `targets[i]` for query i by `retrieval_scores`. A document
    scoring the same as the target ranks before it when it comes first (argmax's rule), so rank 1 is exactly
    `retrieval_hits`."""
    return ranks_of(retrieval_scores(queries, documents, chamfer), targets)


def ranks_of(scores: torch.Tensor, targets: list[int]) -> torch.Tensor:
    """(Q,) long: the rank of document `targets[i]` in row i of `scores` (Q, N), ties as argmax takes them."""
    target = torch.tensor(targets)
    own = scores.gather(1, target[:, None])  # (Q, 1)
    earlier = torch.arange(scores.shape[1])[None, :] < target[:, None]  # (Q, N)
    return 1 + (scores > own).sum(-1) + ((scores == own) & earlier).sum(-1)


def retrieval_hits(
    queries: list[torch.Tensor], documents: list[torch.Tensor], targets: list[int], chamfer: bool = False
) -> torch.Tensor:
    """(Q,) bool: whether query i's best-scoring document (`retrieval_scores`) is `targets[i]`."""
    return retrieval_scores(queries, documents, chamfer).argmax(-1) == torch.tensor(targets)


def document_vector(document_rows: torch.Tensor) -> torch.Tensor:
    """(D,) the normalised mean of a document's rows: what a classifier or a query reads."""
    return F.normalize(document_rows.mean(0), dim=-1)
