"""The long-document suite: every task at every length, every method, every seed, each record as it ends.

    retrieval       passkey, needle (50 queries against 100 documents), books, wikitext (first half ->
                    its second half among every second half): accuracy@1 in %, a document ranked by
                    its best row (max cosine; one row but for chunks-best-512 and late-chunking-512),
                    a query by the normalised mean of its rows (by Chamfer: every query row's best
                    document row, averaged); each query's rank of its own document kept (the MRR)
    classification  imdb: a logistic-regression probe on frozen vectors of long train reviews, one
                    subset per seed (MTEB's protocol), accuracy in % on long test reviews

A record (models/halves.py `Record`): task, length (tokens; IMDB's reviews read whole), method (named with
the chunk length it ran at: chunks-mean-256), score, model, seed, seconds_per_document (this process, one
method after the other; methods of one pass carry its time), depth (passkey and needle: quarters of the
document, where a truncating model finds only shallow keys), queries and per-query hits.
"""

from __future__ import annotations

import functools
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import cast

import torch

from linformer_kit.longdocs import sources, texts
from linformer_kit.longdocs.config import LongDocsConfig
from linformer_kit.models.halves import Record, draw, other_chunkings
from linformer_kit.models.readings import (
    CHAMFER,
    DIFFERENT_TEXTS,
    Method,
    Pass,
    Reader,
    encode,
    label,
    reads_model,
    retrieval,
)
from linformer_kit.models.retrieval import document_vector

logger = logging.getLogger(__name__)
DEPTHS = ((0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0))
# the readings a probe does not read: the same vectors as another method's (their rows' mean), scored otherwise
RETRIEVAL_ONLY = ("chunks-best-512", *CHAMFER)


class Suite:
    """One run of the suite: the readers (loaded once each), the records so far, written as they come."""

    def __init__(self, config: LongDocsConfig, load: Callable[[str, int], torch.nn.Module]) -> None:
        from transformers import AutoTokenizer

        self.config = config
        self.load = load  # (path, longest input) -> the encoder, eval mode (`encoder_at`)
        # the methods cut texts themselves: no length limit (and no warning) when tokenizing a whole text
        self.tokenizer = AutoTokenizer.from_pretrained(config.original_dir, model_max_length=10**9)
        self.model_tokenizer = AutoTokenizer.from_pretrained(config.model, model_max_length=10**9)
        self.records: list[Record] = []
        self._readers: dict[tuple[str, int], Reader] = {}

    def reader(self, pass_: Pass, length: int, chunk: int | None = None) -> Reader | None:
        """The reader of `pass_` for documents of `length` tokens: the model under test for "whole", else the
        original, its chunks `chunk` tokens (default chunk_length; None: full-extended above its limit)."""
        config = self.config
        if pass_ == "whole":
            key, tokenizer = (config.model, max(config.lengths)), self.model_tokenizer
        elif pass_ == "full-extended":
            if length > config.full_extended_max:
                return None
            key, tokenizer = (config.original_dir, max(length, config.chunk_length)), self.tokenizer
        else:
            key, tokenizer = (config.original_dir, chunk or config.chunk_length), self.tokenizer
        if key not in self._readers:
            model = self.load(*key).to(config.device)
            bucket = None
            if config.compile:
                # static shapes, one a width bucket (a symbolic length would change the window core)
                model = cast(torch.nn.Module, torch.compile(model, dynamic=False))
                bucket = chunk or config.chunk_length
            self._readers[key] = Reader(model, tokenizer, key[1], config.tokens_per_batch, bucket)
        return self._readers[key]

    def encode(
        self, length: int, texts_: list[str], methods: Sequence[Method] | None = None
    ) -> dict[Method, tuple[list[torch.Tensor], float]]:
        """Each method's rows of `texts_` and its seconds per text (`methods.encode`)."""
        methods = self.config.methods if methods is None else methods
        return encode(lambda pass_: self.reader(pass_, length), texts_, methods, self.config.chunk_length)

    def add(
        self, task: str, length: int, method: str, result: float | torch.Tensor, seed: int, seconds: float,
        depth=None, labelled: bool = False,
    ) -> None:  # fmt: skip
        """A record of `result`: a score, or hits ((Q,) bool) or ranks ((Q,) long, a retrieval's) whose accuracy in
        % is the score, over Q queries (`Record.of_result`);
        `method` named with chunk_length (`label`) unless `labelled` (a chunking of its own length already)."""
        model = Path(self.config.model if reads_model(method) else self.config.original_dir).name
        method = method if labelled else label(method, self.config.chunk_length)
        self.records.append(
            Record.of_result(task, length, method, result, model, seed, seconds, depth)
            if isinstance(result, torch.Tensor)
            else Record(task, length, method, round(result, 2), model, seed, round(seconds, 5), depth)
        )

    def write(self) -> Path:
        out = Path(self.config.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / "longdocs.json"
        body = {"config": asdict(self.config), "records": [asdict(r) for r in self.records]}
        path.write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
        return path

    # --- tasks ------------------------------------------------------------------------------------

    def keyed(self, task: str, length: int, seed: int) -> None:
        """Passkey or needle at one length: accuracy@1 overall and by key depth."""
        config, rng = self.config, random.Random(f"{task}-{length}-{seed}")
        if task in ("passkey", "access-code"):
            construction = texts.LONGEMBED if task == "passkey" else texts.ACCESS_CODE
            docs = texts.passkey_documents(
                self.tokenizer, length, config.candidates, config.queries, rng, construction
            )
        else:
            docs = texts.needle_documents(
                self.tokenizer, length, config.candidates, config.queries, self.books, rng
            )
        asked = [i for i, d in enumerate(docs) if d.query is not None]
        queries = [docs[i].query or "" for i in asked]
        # a key's query is one chunk: Chamfer is the best row exactly, so its readings are left out here
        methods = [m for m in self.config.methods if m not in CHAMFER]
        encode = functools.partial(self.encode, length, methods=methods)
        scored = retrieval(encode, [d.text for d in docs], queries, asked)
        for method, (hits, seconds) in scored.items():
            self.add(task, length, method, hits, seed, seconds)
            for low, high in DEPTHS:
                chosen = [j for j, i in enumerate(asked) if low <= (docs[i].depth or 0.0) < high]
                if chosen:
                    self.add(task, length, method, hits[chosen], seed, seconds, f"{low:.2f}-{high:.2f}")

    def halves(self, task: str, length: int, seed: int) -> None:
        """Books, wikitext or your documents at one length: a first half finds its second half (models/halves.py)."""
        corpus = getattr(self, {"books": "books", "wikitext": "articles", "documents": "documents"}[task])
        rng = random.Random(f"{task}-{length}-{seed}")  # one draw of the pairs: every reading's
        firsts, seconds_ = draw(self.tokenizer, length, self.config.pairs, corpus, rng)
        scored = retrieval(functools.partial(self.encode, length), seconds_, firsts, list(range(len(firsts))))
        chunkings = other_chunkings(self.reader, firsts, seconds_, length, self.config)
        named = {label(m, self.config.chunk_length): result for m, result in scored.items()}
        for name, (hits, seconds) in [*named.items(), *chunkings.items()]:
            self.add(task, length, name, hits, seed, seconds, labelled=True)

    def paragraphs(self, seed: int) -> None:
        """WikiText paragraph halves: `pairs` paragraphs of 64 tokens to two chunks, each cut at its middle token; a
        first half finds its own second half among every second half (recall@1), each half read whole (under
        the chunk, so the original reads it as `truncate-512`). Where a long stage moved the weights short
        inputs share, this is where a student's reading of ordinary text shows it."""
        config = self.config
        rng = random.Random(f"paragraphs-{seed}")
        spans = texts.Spans(self.tokenizer, sources.wikitext_paragraphs(config.data_dir))
        size = config.chunk_length - 2
        low = min(64, size)  # halves of 32 tokens: a sentence or two (fewer under a tiny chunk)
        long_enough = [i for i, o in enumerate(spans.offsets) if low <= len(o) <= 2 * size]
        if len(long_enough) < 2:
            raise texts.TooShort(f"paragraphs: {len(long_enough)} of {low} to {2 * size} tokens, need 2")
        chosen = rng.sample(long_enough, min(config.pairs, len(long_enough)))
        middles = [len(spans.offsets[i]) // 2 for i in chosen]
        firsts = [spans.text((i, 0), m) for i, m in zip(chosen, middles, strict=True)]
        seconds_ = [spans.text((i, m), m) for i, m in zip(chosen, middles, strict=True)]
        methods = [m for m in config.methods if m in ("whole", "truncate-512")]
        encode = functools.partial(self.encode, config.chunk_length, methods=methods)
        for method, (hits, seconds) in retrieval(encode, seconds_, firsts, list(range(len(firsts)))).items():
            self.add("paragraphs", config.chunk_length, method, hits, seed, seconds)

    def fidelity(self, length: int, seed: int) -> None:
        """Each text source read at `length` tokens (at most the original's chunk): the mean cosine of the
        model's and the original's embeddings of the same texts (`fidelity-SOURCE`, method `whole`, x 100),
        beside the original's cosine of two different texts (method `two-different-texts`): how far a
        student drifted from its original on text of each domain. SST-2's sentences are read whole."""
        if length > self.config.chunk_length:
            return
        rng = random.Random(f"fidelity-{length}-{seed}")
        count = self.config.pairs
        sources_ = {
            "books": self.books,
            "wikitext": self.articles,
            "imdb": sources.reviews(self.config.data_dir),
        }
        pieces = {}
        for name, corpus in sources_.items():
            try:
                pieces[name] = texts.passages(self.tokenizer, length, count, corpus, rng)
            except texts.TooShort as error:
                logger.info(f"longdocs: fidelity on {name} at {length} skipped: {error}")
        if length == min(n for n in self.config.lengths if n <= self.config.chunk_length):
            pieces["sst2"] = rng.sample(sources.sentences(self.config.data_dir), count)
        for name, passages_ in pieces.items():
            encoded = self.encode(length, passages_, ["whole", "truncate-512"])
            model = torch.stack([document_vector(r) for r in encoded["whole"][0]])
            original = torch.stack([document_vector(r) for r in encoded["truncate-512"][0]])
            kept = float((model * original).sum(-1).mean())
            different = float((original[:-1] * original[1:]).sum(-1).mean())
            self.add(f"fidelity-{name}", length, "whole", 100 * kept, seed, encoded["whole"][1])
            self.add(
                f"fidelity-{name}",
                length,
                DIFFERENT_TEXTS,
                100 * different,
                seed,
                encoded["truncate-512"][1],
            )

    def imdb(self) -> None:
        """Long IMDB reviews: one probe per seed on each method's frozen vectors."""
        from linformer_kit.reproduction.encoder_eval import probe_correct

        config, data = self.config, self.config.data_dir / "imdb"
        above = config.chunk_length
        train, train_labels = sources.long_reviews(
            data / "train.jsonl.gz", self.tokenizer, config.probe_train, above
        )
        test, test_labels = sources.long_reviews(
            data / "test.jsonl.gz", self.tokenizer, config.probe_test, above
        )
        length = max(config.lengths)
        # the best chunk and Chamfer are retrieval's scores; a classifier reads the mean (chunks-mean, ...)
        probed = [m for m in config.methods if m not in RETRIEVAL_ONLY]
        encoded = self.encode(length, test, probed)
        train_read = self.encode(length, train, probed)  # a pass once
        for method, (test_rows, seconds) in encoded.items():
            train_rows = train_read[method][0]
            x_train = torch.stack([document_vector(r) for r in train_rows])
            x_test = torch.stack([document_vector(r) for r in test_rows])
            for seed in config.seeds:
                correct = probe_correct(x_train, train_labels, x_test, test_labels, seed, config.probe_subset)
                self.add("imdb", length, method, torch.as_tensor(correct), seed, seconds)

    # --- data, loaded once (the needle's haystack is the books) ----------------------------------------

    @functools.cached_property
    def books(self) -> list[str]:
        return sources.books(self.config.data_dir)

    @functools.cached_property
    def documents(self) -> list[str]:
        return sources.user_documents(self.config.documents)

    @functools.cached_property
    def articles(self) -> list[str]:
        return sources.wikitext_articles(self.config.data_dir)


def run_suite(
    config: LongDocsConfig, load: Callable[[str, int], torch.nn.Module] | None = None
) -> list[Record]:
    """Every task of `config` at every length and seed; longdocs.json rewritten after each task and length."""
    config.check_files()
    if load is None:
        from linformer_kit.models.extend import encoder_at

        load = encoder_at
    suite = Suite(config, load)
    torch.manual_seed(0)
    if "imdb" in config.tasks:
        suite.imdb()
        suite.write()
    for seed in config.seeds:
        if "paragraphs" in config.tasks:  # read whole, not at each length
            try:
                suite.paragraphs(seed)
                suite.write()
            except texts.TooShort as error:
                logger.info(f"longdocs: paragraphs skipped: {error}")
        for task in config.tasks:
            if task in ("imdb", "paragraphs"):
                continue
            for length in config.lengths:
                start = time.perf_counter()
                try:
                    if task in ("passkey", "access-code", "needle"):
                        suite.keyed(task, length, seed)
                    elif task == "fidelity":
                        suite.fidelity(length, seed)
                    else:
                        suite.halves(task, length, seed)
                except texts.TooShort as error:  # e.g. WikiText holds no two articles of 2 x 4 096 tokens
                    logger.info(f"longdocs: {task} at {length} skipped: {error}")
                    continue
                suite.write()
                logger.info(
                    f"longdocs: {task} at {length} (seed {seed}) in {time.perf_counter() - start:.0f} s"
                )
    return suite.records
