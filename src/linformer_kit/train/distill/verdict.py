"""The verdict of a long stage: on text no step trained on, does the long student read long documents better
than the original's chunks?

Why: with long layers and short_layers="original" (the default) every input of at most seq_len tokens is read
by the teacher's own weights, so the fidelity `distill` measures at seq_len is 1 by construction, and a long
stage that learned nothing printed the same line as one that did. What the stage changed shows only beyond
seq_len. So after it `distill` runs the long-document suite's halves task (models/halves.py: the first half
of a span of prose finds its own second half among every pair's second half, accuracy@1) on held-out text:

    documents  each `long_train` source's held-out documents (data.py `long_text`: its last documents, a
               tenth, at least 2, at most max_eval_documents, split off before any step, so no stage trains
               on them); without long_train, the fidelity's held-out documents (--validation, or train's last)
    lengths    long_length, and 2 seq_len (1 024 for a 512-token teacher: the shortest text its chunks read
               in two) where it is shorter
    methods    the suite's (models/readings.py), chunks of seq_len tokens: the long student whole, its late
               chunks and its contextual chunks (the teacher's chunk rows plus its own reading of them); the
               teacher truncated to seq_len, its chunks averaged and its best chunk
    pairs      `verdict_pairs` a source and length, fewer where its documents hold fewer; a source and length
               whose documents hold fewer than 2 are named as skipped

Each score is a record of the suite's kind (models/halves.py `Record`, its task the source) and carries its
binomial standard error; `linformer longdocs --documents` gives the same table for a user's own documents.

The cost is inference only: each pair is 2 texts, each read once by the student whole (late chunks pool the
same pass) and by the teacher's chunks and truncation (the best chunk reads the averaged chunks' pass), at each
length. It grows with the pairs and the sources that hold them, where the long stage grows with its steps and
batch; the summary line prints it and its share of the long stage's time, from the run that prints them (on the
README's run of 2026-11-29, 2 AVX-512 cores: 70 s, 9 %;
docs/reproduction/long-minilm/long4096-readme/README.md, "The verdict").
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from transformers import AutoTokenizer

from linformer_kit.models.embedding import encoder_of
from linformer_kit.models.halves import CHUNKINGS, Record, halves_ranks, separation, standard_error
from linformer_kit.models.paired import difference, paired_table
from linformer_kit.models.readings import MODEL_METHODS, Method, Pass, Reader, encode
from linformer_kit.token_pieces import TooShort
from linformer_kit.train.distill.config import DistillConfig, read_by_original
from linformer_kit.train.distill.data import LongText

METHODS: tuple[Method, ...] = (
    "whole",
    "late-chunking-512",
    "contextual-chunks-512",  # the teacher's chunks with the student's context: no pass more than the others
    "truncate-512",
    "chunks-mean-512",
    "chunks-best-512",
    "chunks-chamfer-512",  # the teacher's chunk rows by Chamfer: on held-out books as strong as its best chunk
)
HELD_OUT = {
    True: "each --long-train source's last documents ({share:.0%} of them, --long-held-out; at least 2, at most "
    "max_eval_documents), split off before any step: no stage trains on them",
    False: "the fidelity's held-out documents (--validation, or train's last documents), no --long-train source "
    "holding any out: no stage trains on them",
}
# the summary line's names of the methods (the student's first, then the teacher's)
SHORT_NAMES = {"whole": "whole", "chunks-mean-512": "chunks", "chunks-best-512": "best",
               "truncate-512": "truncated", "late-chunking-512": "late chunks",
               "contextual-chunks-512": "contextual chunks", "chunks-chamfer-512": "chamfer"}  # fmt: skip


def verdict_lengths(config: DistillConfig) -> tuple[int, ...]:
    """long_length, and 2 seq_len where that is shorter: the longest the student reads, and the shortest text
    the teacher's chunks read in two; a length the teacher's own weights read (at most `read_by_original`,
    e.g. 1 024 with --exact-length 1024) is no verdict of the long stage and is left out."""
    assert config.long_length is not None
    assert config.seq_len is not None
    original = read_by_original(config) or 0
    lengths = (2 * config.seq_len, config.long_length)
    return tuple(sorted({n for n in lengths if original < n <= config.long_length}))


def long_reading(
    config: DistillConfig,
    student: torch.nn.Module,
    teacher: torch.nn.Module,
    long: LongText,
    held_out: list[str],
) -> dict[str, Any]:
    """The verdict (module docstring) on each long_train source's held-out documents (`long`), or, where none
    held any out, on the fidelity's (`held_out`): how they were held out, the pairs asked, the records
    (`Record`s as dicts), what was skipped and why, and its seconds."""
    assert config.seq_len is not None
    assert config.long_length is not None
    start = time.perf_counter()
    from_long = bool(long.held_out_documents)
    documents = long.held_out_documents if from_long else {"held-out": held_out}
    # the methods cut texts themselves: no length limit (and no warning) on a whole document
    tokenizer = AutoTokenizer.from_pretrained(config.teacher, model_max_length=10**9)
    readers = (Reader(encoder_of(student), tokenizer, config.long_length),
               Reader(encoder_of(teacher), tokenizer, config.seq_len))  # fmt: skip

    def reader_of(pass_: Pass) -> Reader:  # the student reads the whole text, the teacher the rest
        return readers[0] if pass_ == "whole" else readers[1]

    read = functools.partial(encode, reader_of, methods=METHODS, chunk=config.seq_len)
    records, skipped = [], []
    with _evaluating(student, teacher):
        for source, texts in documents.items():
            for length in sorted(verdict_lengths(config), reverse=True):
                rng = random.Random(f"verdict-{source}-{length}-{config.seed}")
                try:
                    scored = halves_ranks(read, tokenizer, length, config.verdict_pairs, texts, rng)
                except TooShort as error:
                    ids = tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"]
                    longest = max((len(x) for x in ids), default=0)
                    skipped.append(
                        {"source": source, "length": length, "why": str(error), "longest": longest}
                    )
                    continue
                records += [_record(config, source, length, method, ranks, seconds)
                            for method, (ranks, seconds) in scored.items()]  # fmt: skip
    return {
        "held_out": HELD_OUT[from_long].format(share=config.long_held_out),
        "pairs": config.verdict_pairs,
        "chunk_length": config.seq_len,
        "records": records,
        "skipped": skipped,
        "seconds": round(time.perf_counter() - start, 2),
    }


def _record(
    config: DistillConfig, source: str, length: int, method: Method, ranks: torch.Tensor, seconds: float
) -> dict[str, Any]:
    """The record (as a dict) of `method`'s accuracy on `source`'s pairs at `length`, `ranks` (P,) each own
    second half's rank."""
    model = Path(config.output_dir if method in MODEL_METHODS else str(config.teacher)).name
    return dataclasses.asdict(Record.of_ranks(source, length, method, ranks, model, config.seed, seconds))


@contextlib.contextmanager
def _evaluating(*models: torch.nn.Module) -> Iterator[None]:
    """The models in eval mode (no dropout) inside, each back in its own mode after."""
    modes = [model.training for model in models]
    try:
        for model in models:
            model.eval()
        yield
    finally:
        for model, mode in zip(models, modes, strict=True):
            model.train(mode)


def _seconds(seconds: float) -> str:
    """Whole seconds, or tenths below 10 s (a tiny run's verdict is not "0 s")."""
    return f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"


def _tokens(length: int) -> str:
    return f"{length:,}".replace(",", " ")


def reading_line(reading: dict[str, Any], long_seconds: float | None = None) -> str:
    """The summary line's part: "long reading: SOURCE 4 096: whole 44 vs chunks 46 / best 44 / truncated 24,
    late chunks 46, contextual chunks 47 (25 pairs, ±10); 1 024: ...; SOURCE: too short at 4 096; read in 130 s, 9 % of the long
    stage's time" (± one standard error of whole's score, in points; the share where `long_seconds` is given)."""
    groups: dict[str, dict[int, dict[str, dict]]] = {}
    for r in reading["records"]:
        groups.setdefault(r["task"], {}).setdefault(r["length"], {})[r["method"]] = r
    parts = []
    for source, lengths in groups.items():
        cells = []
        for length, by_method in lengths.items():
            shown = {SHORT_NAMES[m]: f"{r['score']:.0f}" for m, r in by_method.items()}
            whole = by_method["whole"]
            error = standard_error(whole["score"], whole["queries"])
            cells.append(
                f"{_tokens(length)}: whole {shown['whole']} vs chunks {shown['chunks']} / best {shown['best']} / "
                + (f"chamfer {shown['chamfer']} / " if "chamfer" in shown else "")  # (older records: none)
                + f"truncated {shown['truncated']}, late chunks {shown['late chunks']}, contextual chunks "
                f"{shown['contextual chunks']} ({whole['queries']} pairs, "
                f"±{error:.0f}; {conclusion(by_method)})"
            )
        parts.append(f"{source} " + "; ".join(cells))
    too_short: dict[str, list[dict]] = {}
    for s in reading["skipped"]:
        too_short.setdefault(s["source"], []).append(s)
    for source, skips in too_short.items():
        shortest = min(skip["length"] for skip in skips)
        # why: a pair is two halves of length - 2 tokens of one document, which its documents may not reach
        why = (
            f" (its held-out documents hold fewer than the 2 spans of 2 x {_tokens(shortest - 2)} tokens a verdict "
            f"needs; the longest has {_tokens(skips[0]['longest'])})"
            if "longest" in skips[0]
            else ""
        )
        parts.append(f"{source}: too short at {' and '.join(_tokens(x['length']) for x in skips)}{why}")
    cost = f"read in {_seconds(reading['seconds'])} s"
    if long_seconds:
        cost += f", {100 * reading['seconds'] / long_seconds:.0f} % of the long stage's time"
    return "long reading: " + "; ".join(parts) + f"; {cost}"


def conclusion(by_method: dict[str, dict]) -> str:
    """What one source and length says of whole against the strongest of the teacher's chunk readings (averaged,
    best, Chamfer: `halves.CHUNKINGS`, those the records hold): ahead or behind by how much where the paired 95 % interval (models/paired.py) leaves out 0, else
    "inconclusive" with the difference these pairs could have told apart (half the interval's width; from the
    standard errors where the records keep no per-pair outcomes)."""
    whole = by_method["whole"]
    chunked = [by_method[m] for m in CHUNKINGS if m in by_method]
    strongest = max(chunked, key=lambda r: r["score"])
    name, pairs = SHORT_NAMES[strongest["method"]], whole["queries"]
    if whole.get("hits") and strongest.get("hits"):
        diff, low, high, _ = difference({0: whole["hits"]}, {0: strongest["hits"]})
        told, apart = low > 0 or high < 0, (high - low) / 2
    else:
        diff = whole["score"] - strongest["score"]
        apart = separation([whole["score"], strongest["score"]], pairs)[1]
        told, low, high = abs(diff) > apart, diff - apart, diff + apart
    if told:
        side = "ahead of" if diff > 0 else "behind"
        return f"whole {side} {name} by {abs(diff):.0f} points [{low:+.0f}, {high:+.0f}]"
    return f"inconclusive: {pairs} pairs tell apart only {apart:.0f} points"


def reading_table(records: list[dict[str, Any]]) -> str:
    """A Markdown table: a row per source and length, each method's score (the best in bold), the pairs, the
    standard error and how far apart two scores must be to be told apart (models/halves.py `separation`)."""
    rows: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in records:
        rows.setdefault((r["task"], r["length"]), {})[r["method"]] = r
    methods = [m for m in METHODS if any(r["method"] == m for r in records)]  # (older records: no Chamfer)
    lines = [f"| source | length | {' | '.join(methods)} | pairs | standard error | apart by |",
             "|---|---|" + "---|" * (len(methods) + 3)]  # fmt: skip
    for (source, length), by_method in rows.items():
        scores = [by_method[m]["score"] for m in methods]
        count = by_method["whole"]["queries"]
        error, apart = separation(scores, count)
        shown = [f"**{s:.1f}**" if s == max(scores) else f"{s:.1f}" for s in scores]
        lines.append(f"| {source} | {length} | {' | '.join(shown)} | {count} | {error:.1f} | {apart:.0f} |")
    return "\n".join(lines) + "\n"


def reading_card(reading: dict[str, Any], long_seconds: float | None = None) -> str:
    """The model card's section: what was read and how, the scores with their uncertainty, what was skipped."""
    table = reading_table(reading["records"]) + "\n" if reading["records"] else ""
    paired = paired_table(reading["records"])  # the same pairs read by both: tighter than `apart by`
    table += f"{paired}\n" if paired else ""
    skipped = "".join(f"- {s['source']} at {s['length']}: {s['why']}\n" for s in reading["skipped"])
    share = (
        f" ({100 * reading['seconds'] / long_seconds:.0f} % of the long stage's {long_seconds:.0f} s)"
        if long_seconds
        else ""
    )
    chunk = reading["chunk_length"]
    return (
        "## Long reading: the verdict of the long stage\n\n"
        f"On held-out text ({reading['held_out']}), the first half of a span finds its own second half among "
        f"up to {reading['pairs']} pairs' second halves (accuracy@1, %): this model reading it whole (`whole`) "
        f"and its late chunks of {chunk} tokens, the teacher reading its first {chunk} tokens (`truncate-512`), "
        f"its chunks of {chunk} averaged and its best chunk: `linformer longdocs`' halves task and methods. Two "
        "scores of a row closer than `apart by` (points) are not told apart.\n\n"
        f"{table}" + (f"Skipped:\n\n{skipped}\n" if skipped else "")
        + f"Measured in {_seconds(reading['seconds'])} s{share}.\n\n"
    )  # fmt: skip
