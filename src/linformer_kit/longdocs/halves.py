"""The halves task: the first half of a span of prose finds its own second half among every second half.

One definition, read by the long-document suite (`books`, `wikitext` and the user's `documents`:
longdocs/suite.py) and by the verdict `distill` gives on a long student (train/distill/verdict.py), so
the two report the same measure on the same kind of text.

Up to `pairs` spans of 2 (L - 2) tokens are drawn without overlap (`texts.halves`); each half, at most L
tokens with its special tokens, is read by every method (longdocs/methods.py). A first half is a query
(the normalised mean of its rows), its second half the target among the second halves of every pair,
each scored by its best row: accuracy@1. With P pairs a hit is 100 / P points, and a chance reading
scores 100 / P.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch

from linformer_kit.longdocs import texts
from linformer_kit.longdocs.methods import Method, retrieval_hits

# texts -> {method: (each text's rows, seconds per text)}: `methods.encode` with its readers and methods bound
Encode = Callable[[list[str]], dict[Method, tuple[list[torch.Tensor], float]]]


def halves_hits(
    encode: Encode, tokenizer, length: int, pairs: int, corpus: list[str], rng: random.Random
) -> dict[Method, tuple[torch.Tensor, float]]:
    """{method: ((P,) bool, seconds per document)}: whether each of P <= `pairs` first halves of `corpus` at
    `length` tokens finds its own second half, and the time of reading the second halves. Each method's pass
    reads the second halves once and the first halves once (`methods.encode`). `TooShort` when the corpus holds
    fewer than 2 pairs."""
    firsts, seconds = texts.halves(tokenizer, length, pairs, corpus, rng)
    read_documents, read_queries = encode(seconds), encode(firsts)
    targets = list(range(len(firsts)))
    return {
        method: (retrieval_hits(read_queries[method][0], rows, targets), per_document)
        for method, (rows, per_document) in read_documents.items()
    }
