"""A long student's late spans through sentence-transformers, and Chamfer: the multi-vector reading a user
stores per document.

`SentenceTransformer.encode` gives one vector a text. On held-out books at 4 096 tokens a long student's one
vector trails the original's best 512-token chunk, while its late spans scored by Chamfer lead the strongest
chunking on MRR (docs/reproduction/long-minilm/heldout/README.md): what a user stores is then a few rows a
document, as ColBERT and BGE-M3's multi-vector mode store token or span rows.

    rows = late_rows(model, documents)          # each document: (m_i, D) unit rows, one a span of 510 tokens
    queries = late_rows(model, questions)       # a short query is one span: one row
    scores = chamfer(queries, rows)             # (Q, N): each query row's best document row, averaged

One pass of the model a text (`encode(..., output_value="token_embeddings")`, its batches and padding as
the user's `encode`), then `readings.late_spans`: the text-token states mean-pooled over spans of `span`
tokens, normalised, so a span's row is the model's sentence embedding pipeline (mean, Normalize) over that
span's states, read in the context of the whole text. 510 text tokens a span are one 512-token chunk of the
original's: the span the held-out study read (scripts/cpu/heldout_readings.py, `late-510-chamfer`); the suite's
`late-chamfer-512` pools spans of 512 text tokens, two more. Torch only: `model` is anything with
sentence-transformers' `encode`.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from linformer_kit.models.readings import late_spans
from linformer_kit.models.retrieval import retrieval_scores

SPAN = 510  # text tokens a span: the 512-token chunk of the original, less its two special tokens


def late_rows(model, texts: Sequence[str], span: int = SPAN, batch_size: int = 32) -> list[torch.Tensor]:
    """Each text's late-span rows (m_i, D), unit vectors, from one pass of `model` (a SentenceTransformer)
    over it; `span` text tokens a row (the last span holds the rest)."""
    if not isinstance(span, int) or span < 1:
        raise ValueError(f"span={span!r}: expected a whole number of tokens >= 1")
    if isinstance(texts, str):  # (a str is a sequence of characters: each would be a text)
        raise ValueError(f"texts={texts[:40]!r}: expected a list of texts, got one str; pass [text]")
    states = model.encode(
        list(texts), output_value="token_embeddings", convert_to_numpy=False, batch_size=batch_size
    )  # each (n_i, D): the text's real tokens, its special tokens first and last
    return [late_spans(s.float().cpu(), span) for s in states]


def chamfer(queries: list[torch.Tensor], documents: list[torch.Tensor]) -> torch.Tensor:
    """(Q, N): query i's score of document j, the mean over i's rows of each one's best cosine with j's rows
    (`readings.retrieval_scores`, chamfer=True)."""
    return retrieval_scores(queries, documents, chamfer=True)


__all__ = ["SPAN", "chamfer", "late_rows"]
