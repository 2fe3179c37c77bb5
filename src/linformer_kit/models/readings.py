"""How a long text becomes vectors: the model reading it whole, and what a 512-token encoder's users do.

Every method turns each text into *rows*: unit vectors, one per piece it kept (m_i × D). A document
is scored by its rows: a classifier reads their normalised mean, retrieval the best row (max cosine),
so "averaged" and "best chunk" are two readings of the same chunk rows.

    whole              the model reads the whole text (up to the longest input it reads); one row
    truncate-512       the original reads the first 512 tokens; one row
    chunks-mean-512    the original reads consecutive 512-token chunks (special tokens included in the
                       512); their mean, normalised: one row
    chunks-best-512    the same chunks, every chunk a row: retrieval keeps the best chunk
    late-chunking-512  the model reads the whole text once; the token states of each 512-token span are
                       mean-pooled (Günther et al. 2024): a row per span
    full-extended      the original with its position table wrapped (row p mod 512) and full attention,
                       reading the whole text: quadratic in n (`encoder_at`)
    contextual-chunks-512
                       the original's chunk rows, each plus the model's row of the same span (its whole
                       reading's token states pooled over the chunk's own tokens), normalised: what a chunk
                       says read alone, plus what the rest of the document adds to it. Two passes (the
                       original's chunks, the model's whole reading), so it costs both; a row per chunk,
                       read as chunks-best-512 is (issue "Long documents on prose", item 3)
    chunks-chamfer-512, late-chamfer-512, contextual-chamfer-512
                       the rows of chunks-best-512, late-chunking-512 and contextual-chunks-512, scored by
                       Chamfer: each of the query's rows against the document's best row, averaged (ColBERT's
                       MaxSim at the chunk level); the others score the query's averaged rows against the
                       document's best row (issue "A long student worth it at 4 096": Chamfer lifts the
                       original's own chunks on held-out books, so the strongest chunking includes it)

Retrieval ranks every document for each query (models/retrieval.py): accuracy@1 is the share of queries whose
own document ranks first, the MRR the mean of 1 / rank (a miss at rank 2 counts half a hit).

A row is sentence-transformers' pipeline (mean of the last hidden states over real tokens, normalised:
`sentence_embedding`). Batches are formed longest first under a token budget, so memory stays bounded
at every length; padding changes nothing (the models' padding is exact), so the rows do not depend on
the batching.

One definition of the readings for the study and the verb that compare them: the long-document suite
(longdocs/, `linformer longdocs`) and the verdict `distill` gives on a long student (train/distill/verdict.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch.nn import functional as F

from linformer_kit.models.embedding import sentence_embedding
from linformer_kit.models.retrieval import retrieval_ranks
from linformer_kit.token_pieces import pieces, with_special_tokens

Method = Literal[
    "whole", "truncate-512", "chunks-mean-512", "chunks-best-512", "late-chunking-512", "full-extended",
    "contextual-chunks-512", "chunks-chamfer-512", "late-chamfer-512", "contextual-chamfer-512",
]  # fmt: skip
METHODS: tuple[Method, ...] = (
    "whole", "truncate-512", "chunks-mean-512", "chunks-best-512", "late-chunking-512", "full-extended",
    "contextual-chunks-512", "chunks-chamfer-512", "late-chamfer-512", "contextual-chamfer-512",
)  # fmt: skip
# the Chamfer readings: each the rows of another method, scored by Chamfer (`retrieval_ranks`)
CHAMFER: dict[Method, Method] = {
    "chunks-chamfer-512": "chunks-best-512", "late-chamfer-512": "late-chunking-512",
    "contextual-chamfer-512": "contextual-chunks-512",
}  # fmt: skip
# the fidelity task's reference: the original's mean cosine of two different texts (a record, not a reading)
DIFFERENT_TEXTS = "two-different-texts"
# the forward passes: "whole" is the model under test's, the others the original's
Pass = Literal["whole", "truncate", "chunks", "full-extended"]
# the passes each method reads: methods that share one are read from one pass, timed once
PASSES: dict[Method, tuple[Pass, ...]] = {
    "whole": ("whole",), "late-chunking-512": ("whole",), "truncate-512": ("truncate",),
    "chunks-mean-512": ("chunks",), "chunks-best-512": ("chunks",), "full-extended": ("full-extended",),
    "contextual-chunks-512": ("chunks", "whole"),
    "chunks-chamfer-512": ("chunks",), "late-chamfer-512": ("whole",),
    "contextual-chamfer-512": ("chunks", "whole"),
}  # fmt: skip
# the methods that read with the model under test (records name it); the others read with the original alone
MODEL_METHODS: tuple[Method, ...] = tuple(m for m in METHODS if "whole" in PASSES[m])
# a chunking read by the model under test (longdocs --model-chunks): model-chunks-mean-2048
MODEL_PREFIX = "model-"
OVERLAP = "-overlap"  # a chunking's label suffix: chunks of L tokens every L / 2 (`read`'s stride)


def label(method: str, chunk: int = 512, overlap: bool = False) -> str:
    """A method's name in records, with the chunk length it ran at: chunks-mean-512 run at 256 is
    `chunks-mean-256`; overlapping chunks (stride L / 2) add `-overlap`."""
    named = method.replace("-512", f"-{chunk}") if method.endswith("-512") else method
    return named + (OVERLAP if overlap else "")


def base(labelled: str) -> str:
    """The method a record's label names (`label`'s inverse): chunks-best-256-overlap -> chunks-best-512."""
    name = labelled.removesuffix(OVERLAP)
    stem, _, tail = name.rpartition("-")
    return f"{stem}-512" if tail.isdigit() and f"{stem}-512" in METHODS else name


def reads_model(labelled: str) -> bool:
    """Whether a record's method read with the model under test (`MODEL_METHODS`, or a `MODEL_PREFIX` chunking),
    whatever its chunk length."""
    return labelled.startswith(MODEL_PREFIX) or base(labelled) in MODEL_METHODS


@dataclass
class Reader:
    """An encoder, its tokenizer and the longest input it reads (special tokens included)."""

    model: torch.nn.Module
    tokenizer: object
    max_length: int
    tokens_per_batch: int = 16384
    bucket: int | None = (
        None  # pad every batch's width up to a multiple of it (a compiled model: one shape a bucket)
    )

    def ids(self, texts: list[str]) -> list[list[int]]:
        """Each text's token ids without special tokens, whole: `read` cuts them to what the model reads, so
        the tokenizer's "longer than the specified maximum" warning is not given (verbose=False)."""
        return self.tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]  # type: ignore[operator]

    def with_specials(self, ids: list[int]) -> list[int]:
        """`ids` between the tokenizer's own special tokens ([CLS] ... [SEP], <s> ... </s>)."""
        return with_special_tokens(self.tokenizer, ids)

    @torch.no_grad()
    def states(self, inputs: list[list[int]]) -> list[torch.Tensor]:
        """The last hidden states (n_i, D) of each input (ids with special tokens), longest first in
        batches of at most `tokens_per_batch` padded tokens."""
        pad = self.tokenizer.pad_token_id  # type: ignore[attr-defined]
        device = next(self.model.parameters()).device
        order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i]))
        out: list[torch.Tensor | None] = [None] * len(inputs)
        start = 0
        while start < len(order):
            width = len(inputs[order[start]])
            if self.bucket:  # padding is exact (the kit's guarantee; BERT's masked softmax): the same states
                width = min(-(-width // self.bucket) * self.bucket, max(self.max_length, width))
            count = max(1, self.tokens_per_batch // max(width, 1))
            chosen = order[start : start + count]
            # a compiled model: every batch of a bucket has its rows (all-pad rows fill the last), one shape
            rows = count if self.bucket else len(chosen)
            ids = torch.full((rows, width), pad, dtype=torch.long)
            mask = torch.zeros((rows, width), dtype=torch.long)
            for row, i in enumerate(chosen):
                ids[row, : len(inputs[i])] = torch.tensor(inputs[i])
                mask[row, : len(inputs[i])] = 1
            hidden = self.model(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
            for row, i in enumerate(chosen):
                out[i] = hidden[row, : len(inputs[i])].float().cpu()
            start += len(chosen)
        return [s for s in out if s is not None]


def rows(method: Method, reader: Reader, texts: list[str], chunk: int = 512) -> list[torch.Tensor]:
    """Each text's rows (m_i, D), unit vectors, as `method` makes them (the module docstring), every pass
    read by `reader` (a method of two passes then reads the model under test as its own original)."""
    return rows_of(method, {p: read(p, reader, texts, chunk) for p in PASSES[method]}, chunk)


def read(
    pass_: Pass, reader: Reader, texts: list[str], chunk: int = 512, stride: int | None = None
) -> list[torch.Tensor]:
    """One forward pass over `texts`: each text's last hidden states (n_i, D) for "whole" / "truncate" /
    "full-extended" (the text up to the reader's longest input, or `chunk` tokens), each text's chunk rows
    (m_i, D) for "chunks": consecutive, or (`stride`) one every `stride` text tokens, overlapping."""
    ids = reader.ids(texts)
    if pass_ != "chunks":
        limit = chunk if pass_ == "truncate" else reader.max_length
        return reader.states([reader.with_specials(x[: limit - 2]) for x in ids])
    cut = [pieces(x, chunk - 2) if stride is None else _strided(x, chunk - 2, stride) for x in ids]
    flat = reader.states([reader.with_specials(p) for doc in cut for p in doc])
    per_doc, at = [], 0
    for doc in cut:
        per_doc.append(torch.cat([_pooled(s) for s in flat[at : at + len(doc)]]))
        at += len(doc)
    return per_doc


def rows_of(method: Method, passes: dict[Pass, list[torch.Tensor]], chunk: int = 512) -> list[torch.Tensor]:
    """`method`'s rows from what its passes (`PASSES[method]`, each `read`) gave."""
    method = CHAMFER.get(method, method)  # a Chamfer reading's rows are another method's
    if method == "contextual-chunks-512":
        return [
            contextual_rows(c, w, chunk - 2) for c, w in zip(passes["chunks"], passes["whole"], strict=True)
        ]
    (passed,) = (passes[p] for p in PASSES[method])
    if method in ("whole", "truncate-512", "full-extended"):
        return [_pooled(s) for s in passed]
    if method == "chunks-best-512":
        return passed
    if method == "chunks-mean-512":
        return [F.normalize(r.mean(0, keepdim=True), dim=-1) for r in passed]
    if method == "late-chunking-512":
        # the special tokens (first and last state) stay out of the spans: each span is text tokens only
        return [late_spans(s, chunk) for s in passed]
    raise ValueError(f"method={method!r}: expected one of {', '.join(METHODS)}")


def encode(
    reader_of: Callable[[Pass], Reader | None], texts: list[str], methods: Sequence[Method], chunk: int = 512
) -> dict[Method, tuple[list[torch.Tensor], float]]:
    """Each method's rows of `texts` and its seconds per text, the sum of its passes' (`PASSES`): methods that
    share a pass read it once (late chunking whole's, the best chunk the averaged chunks'); a method one of
    whose passes has no reader (`reader_of` None: full-extended above its limit) is left out."""
    out: dict[Method, tuple[list[torch.Tensor], float]] = {}
    passes: dict[Pass, tuple[list[torch.Tensor], float]] = {}
    for method in methods:
        readers = {p: reader_of(p) for p in PASSES[method]}
        if any(reader is None for reader in readers.values()):
            continue
        for key, reader in readers.items():
            if key not in passes and reader is not None:
                start = time.perf_counter()
                passed = read(key, reader, texts, chunk)
                passes[key] = (passed, (time.perf_counter() - start) / max(len(texts), 1))
        out[method] = (
            rows_of(method, {key: passes[key][0] for key in readers}, chunk),
            sum(passes[key][1] for key in readers),
        )
    return out


# texts -> {method: (each text's rows, seconds per text)}: `encode` with its readers and methods bound
Encode = Callable[[list[str]], dict[Method, tuple[list[torch.Tensor], float]]]


def retrieval(
    encode: Encode, documents: list[str], queries: list[str], targets: list[int]
) -> dict[Method, tuple[torch.Tensor, float]]:
    """{method: ((Q,) ranks, seconds per document)}: the rank of `targets[i]` among the documents for query i
    (`retrieval_ranks`; rank 1: a hit), every method of `encode`; each pass reads the documents once and the
    queries once."""
    read_documents, read_queries = encode(documents), encode(queries)
    return {
        method: (
            retrieval_ranks(read_queries[method][0], rows, targets, chamfer=method in CHAMFER),
            per_document,
        )
        for method, (rows, per_document) in read_documents.items()
    }


def _pooled(states: torch.Tensor) -> torch.Tensor:
    """(1, D): mean of (n, D) states, normalised (`sentence_embedding` of one unpadded input)."""
    return sentence_embedding(states[None], torch.ones(1, len(states), dtype=torch.long))


def contextual_rows(
    chunk_rows: torch.Tensor, whole: torch.Tensor, size: int, weight: float = 1.0
) -> torch.Tensor:
    """(m, D): chunk row i plus `weight` times the whole reading's text states (`whole` (n, D), its special
    tokens first and last) pooled over chunk i's own `size` tokens, normalised; a chunk beyond what the whole
    reading read (a text longer than the model's longest input) keeps its own row. The method reads weight 1
    (scripts/cpu/contextual_weight.py scores others)."""
    spans = late_spans(whole, size)  # (m', D)
    if len(spans) > len(chunk_rows):
        raise ValueError(
            f"contextual-chunks: the whole reading has {len(spans)} spans of {size} tokens, the chunks "
            f"{len(chunk_rows)}: the model and the original must share one tokenizer"
        )
    context = torch.cat([spans, torch.zeros_like(chunk_rows[len(spans) :])])  # (m, D)
    return F.normalize(chunk_rows + weight * context, dim=-1)


def _strided(ids: list[int], size: int, stride: int) -> list[list[int]]:
    """Pieces of at most `size` ids starting every `stride` ids, the last reaching the end (at least one)."""
    starts = range(0, max(len(ids) - size, 0) + stride, stride)
    return [ids[a : a + size] for a in starts if a == 0 or a + size - stride < len(ids)] or [[]]


def late_spans(states: torch.Tensor, size: int) -> torch.Tensor:
    """(m, D): a whole reading's last hidden states (n, D), its special tokens first and last, as late chunking
    reads them: the text tokens' states mean-pooled over consecutive spans of `size` tokens, normalised (the
    special tokens stay out of the spans; a text of no tokens keeps its one pooled row)."""
    return _spans(states[1:-1], size) if len(states) > 2 else _pooled(states)


def _spans(states: torch.Tensor, size: int) -> torch.Tensor:
    """(m, D): each consecutive span of `size` token states mean-pooled."""
    return torch.cat([_pooled(states[a : a + size]) for a in range(0, len(states), size)])
