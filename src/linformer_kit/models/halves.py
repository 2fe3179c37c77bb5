"""The halves task: the first half of a span of prose finds its own second half among every second half.

One definition for the study and the verb that report it: the long-document suite (`books`, `wikitext`
and the user's `documents`: longdocs/suite.py) and the verdict `distill` gives on a long student
(train/distill/verdict.py), so the two report the same measure, in the same records.

Up to `pairs` spans of 2 (L - 2) tokens are drawn without overlap (`draw`); each half, at most L tokens
with its special tokens, is read by every method (models/readings.py). A first half is a query (the
normalised mean of its rows), its second half the target among the second halves of every pair, each
scored by its best row: accuracy@1. With P pairs a hit is 100 / P points and a reading that tells no
half from another scores about 100 / P; pairs are few (a user's documents, held-out books), so each
score carries its binomial standard error (`standard_error`).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from linformer_kit.models.readings import (
    CHAMFER,
    METHODS,
    MODEL_PREFIX,
    PASSES,
    Encode,
    Method,
    Reader,
    label,
    read,
    retrieval,
    retrieval_ranks,
    rows_of,
)
from linformer_kit.token_pieces import Spans, TooShort

# the readings of the original's chunks alone (`chunking_ranks`): averaged, best and by Chamfer
CHUNKINGS: tuple[Method, ...] = tuple(m for m in METHODS if PASSES[m] == ("chunks",))


@dataclass
class Record:
    """One method's score on one task (for the verdict, a source) at one length, as longdocs.json and a long
    student's metrics.json keep it. `queries`: how many the accuracy is over (pairs, asked keys, test
    reviews), its standard error's n; None for a mean cosine (the suite's fidelity). `hits`: each query's
    outcome (1 a hit), in query order, so two methods of one run compare query by query (models/paired.py);
    `ranks`: a retrieval's rank of each query's own document (1 a hit), whose mean reciprocal is the MRR."""

    task: str
    length: int
    method: str
    score: float
    model: str
    seed: int
    seconds_per_document: float
    depth: str | None = None
    queries: int | None = None
    hits: list[int] | None = None
    ranks: list[int] | None = None

    @classmethod
    def of_hits(
        cls, task: str, length: int, method: str, hits: torch.Tensor, model: str, seed: int, seconds: float,
        depth: str | None = None,
    ) -> Record:  # fmt: skip
        """The record of an accuracy: `hits` (Q,) bool, whether each query was answered; the score their mean
        in %, kept with each outcome (the suite and the verdict build their records here)."""
        score = round(100 * float(hits.float().mean()), 2)
        outcomes = hits.int().tolist()
        return cls(
            task, length, method, score, model, seed, round(seconds, 5), depth, len(outcomes), outcomes
        )

    @classmethod
    def of_ranks(
        cls, task: str, length: int, method: str, ranks: torch.Tensor, model: str, seed: int, seconds: float,
        depth: str | None = None,
    ) -> Record:  # fmt: skip
        """The record of a retrieval: `ranks` (Q,) long, each query's own document's rank (`readings.retrieval`);
        its hits are the ranks of 1 (`of_hits`), kept with the ranks."""
        record = cls.of_hits(task, length, method, ranks == 1, model, seed, seconds, depth)
        record.ranks = ranks.tolist()
        return record

    @classmethod
    def of_result(
        cls, task: str, length: int, method: str, result: torch.Tensor, model: str, seed: int, seconds: float,
        depth: str | None = None,
    ) -> Record:  # fmt: skip
        """`of_hits` of bool outcomes (a probe's), `of_ranks` of a retrieval's ranks (integers)."""
        if result.is_floating_point() or result.is_complex():
            raise ValueError(f"result: {result.dtype} outcomes; expected bool hits or integer ranks")
        of = cls.of_hits if result.dtype == torch.bool else cls.of_ranks
        return of(task, length, method, result, model, seed, seconds, depth)


def draw(
    tokenizer, length: int, count: int, texts: list[str], rng: random.Random
) -> tuple[list[str], list[str]]:
    """Up to `count` (first half, second half) pairs, each half at most `length` tokens with special
    tokens, from non-overlapping spans of `texts` (so no pair shares text with another); `TooShort`
    when the texts hold fewer than two."""
    spans = Spans(tokenizer, texts)
    half = length - 2
    windows = [(i, a) for i, o in enumerate(spans.offsets) for a in range(0, len(o) - 2 * half + 1, 2 * half)]
    if len(windows) < 2:
        raise TooShort(f"length={length}: the texts hold {len(windows)} spans of {2 * half} tokens, need 2")
    chosen = rng.sample(windows, min(count, len(windows)))
    return [spans.text(w, half) for w in chosen], [spans.text((w[0], w[1] + half), half) for w in chosen]


def halves_ranks(
    encode: Encode, tokenizer, length: int, pairs: int, corpus: list[str], rng: random.Random
) -> dict[Method, tuple[torch.Tensor, float]]:
    """{method: ((P,) ranks, seconds per document)}: the rank of each of P <= `pairs` first halves of `corpus`
    at `length` tokens' own second half (1: found), and the time of reading the second halves. Each method's pass
    reads the second halves once and the first halves once (`readings.encode`). `TooShort` when the corpus
    holds fewer than 2 pairs."""
    firsts, seconds = draw(tokenizer, length, pairs, corpus, rng)
    return retrieval(encode, seconds, firsts, list(range(len(firsts))))


def chunking_ranks(
    reader: Reader, firsts: list[str], seconds: list[str], chunk: int, stride: int | None, prefix: str = ""
) -> dict[str, tuple[torch.Tensor, float]]:
    """A chunking of the original (`reader`) on the halves `firsts` -> `seconds`: chunks of `chunk` tokens, one
    every `stride` text tokens (None: consecutive), averaged, best and by Chamfer -> {label (`readings.label`):
    (ranks (P,), seconds per second half)}."""
    start = time.perf_counter()
    documents = read("chunks", reader, seconds, chunk, stride)
    per_document = (time.perf_counter() - start) / max(len(seconds), 1)
    queries = read("chunks", reader, firsts, chunk, stride)
    targets = list(range(len(firsts)))
    out = {}
    for method in CHUNKINGS:
        document_rows, query_rows = (rows_of(method, {"chunks": d}) for d in (documents, queries))
        ranks = retrieval_ranks(query_rows, document_rows, targets, chamfer=method in CHAMFER)
        out[prefix + label(method, chunk, stride is not None)] = (ranks, per_document)
    return out


def other_chunkings(
    reader_of: Callable[..., Reader | None], firsts: list[str], seconds: list[str], length: int, config: Any
) -> dict[str, tuple[torch.Tensor, float]]:
    """The chunkings of longdocs/config.py on the suite's pairs `firsts` -> `seconds` at `length` tokens
    -> {label: (ranks, seconds per document)} (`chunking_ranks`):

        config.baselines     the original, chunks of L tokens consecutive (but the methods' own chunk_length,
                             read already) and every (L - 2) / 2 tokens
        config.model_chunks  the model under test, chunks of L consecutive: `model-` labels

    `reader_of(pass, length, chunk)` is the suite's `Suite.reader`: "chunks" the original's, "whole" the model's.
    """
    out = {}
    for chunk in config.baselines:
        reader = reader_of("chunks", length, chunk)
        assert reader is not None  # (a chunk reader always exists)
        for stride in ((None,) if chunk != config.chunk_length else ()) + ((chunk - 2) // 2,):
            out.update(chunking_ranks(reader, firsts, seconds, chunk, stride))
    for chunk in config.model_chunks:
        reader = reader_of("whole", length)  # the model under test, reading up to the longest length
        assert reader is not None
        out.update(chunking_ranks(reader, firsts, seconds, chunk, None, prefix=MODEL_PREFIX))
    return out


def standard_error(score: float, count: int) -> float:
    """The binomial standard error, in points, of an accuracy of `score` % over `count` queries: the plus-four
    estimate (Agresti and Coull), so a score of 0 or 100 on few pairs is not taken as exact."""
    p = (score / 100 * count + 2) / (count + 4)
    return 100 * math.sqrt(p * (1 - p) / (count + 4))


def separation(scores: list[float], count: int) -> tuple[float, float]:
    """(standard error, apart by), in points, for accuracies `scores` over the same `count` queries: the largest
    standard error (at the score nearest 50) and how far apart two of them must be to be told apart at 95 %,
    1.96 sqrt(2) standard errors (the methods taken as independent, which overstates it a little: they read
    the same pairs)."""
    error = max(standard_error(score, count) for score in scores)
    return error, 1.96 * math.sqrt(2) * error
