"""Scope "student"'s encode case: a long student as users call it, through `SentenceTransformer.encode` at batch
32 on texts of mixed lengths, against the original's `encode` of the same texts cut into chunk_length-token
chunks (averaged per text), A/B in one process (issue 81, "Never slower on the user's machine").

    records = measure_encode(config, original, students)   # an EncodeRecord a student (config.encode_texts > 0)
    encode_speed(record)                                   # student_report.py: the ratio, from its seconds

The texts: `encode_texts` of them, their lengths drawn (seeded) from 128 tokens (or the largest n, if below) to
the largest of `seq_lens`, each the stretch of the benchmark's text (`text_file`, else the built-in one, repeated)
after the one before, cut at the original tokenizer's offsets (no decode). The original reads them as chunks of
chunk_length tokens ([CLS] and [SEP] included) in one `encode` (batches cross texts, as a user's index does), its
vectors averaged per text; the student reads each text whole. Both are loaded as `SentenceTransformer(folder)`
loads them, in the run's dtype, the original's max_seq_length set to chunk_length.

Timing: each model is warmed up (`warmup` calls), then timed in `rounds` rounds, the order rotating; the ratio
is the median over rounds of (the original's seconds) / (the student's): above 1 the student is faster. A warm-up
call above `time_cap_s` skips the rounds. sentence-transformers is optional: without it, or where a folder is no
sentence-transformers folder (no modules.json), the record carries why it was skipped instead of seconds.

The pieces (`cut`, `chunks_of`, `encode_whole`, `encode_chunks`, `warm_up`, `time_arms`, `median_ratio`) are
scripts/cpu/encode_ab.py's too, which times the same on real book text, in more cases.
"""

from __future__ import annotations

import functools
import importlib.util
import itertools
import math
import random
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import torch

from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.student_config import Model
from linformer_kit.bench.student_inputs import BUILT_IN_TEXT
from linformer_kit.bench.student_records import EncodeRecord
from linformer_kit.bench.timing import Timed, sample, time_in_rounds
from linformer_kit.data_files import read_texts
from linformer_kit.nn.autotune import cpu_model_name

ENCODE_BATCH = 32  # sentence-transformers' default batch size: how users call `encode`
SHORTEST = 128  # the shortest text drawn (tokens)
SEED = 0

Arms = Sequence[tuple[str, Callable[[], None]]]


# --- the texts ------------------------------------------------------------------------------------------------


def cut(tokenizer: Any, books: Sequence[str], lengths: Sequence[int]) -> list[str]:
    """Each length's text: a book's first `length` tokens (special tokens counted) as its own characters
    (the tokenizer's offsets, no decode)."""
    specials = tokenizer.num_special_tokens_to_add()
    texts = []
    for book, n in zip(books, lengths, strict=True):
        spans = tokenizer(
            book[: 12 * n], add_special_tokens=False, return_offsets_mapping=True, verbose=False
        )
        offsets = spans["offset_mapping"][: max(1, n - specials)]
        texts.append(book[: offsets[-1][1]])
    return texts


def chunks_of(tokenizer: Any, text: str, chunk: int) -> list[str]:
    """`text` as pieces of `chunk` tokens each (special tokens not counted), cut at the tokenizer's offsets."""
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True, verbose=False)[
        "offset_mapping"
    ]
    return [
        text[offsets[i][0] : offsets[min(i + chunk, len(offsets)) - 1][1]]
        for i in range(0, len(offsets), chunk)
    ]


def mixed_lengths(count: int, shortest: int, longest: int, seed: int = SEED) -> list[int]:
    """`count` lengths drawn uniformly from [shortest, longest]: seeded, so every run reads the same texts."""
    rng = random.Random(seed)
    return [rng.randint(shortest, longest) for _ in range(count)]


def stretches(tokenizer: Any, text_file: str | None, lengths: Sequence[int]) -> list[str]:
    """A text of each length (special tokens counted), text i the stretch of the source after text i - 1."""
    bodies = [max(1, n - tokenizer.num_special_tokens_to_add()) for n in lengths]
    source = _source(tokenizer, text_file, sum(bodies))
    offsets = tokenizer(source, add_special_tokens=False, return_offsets_mapping=True, verbose=False)[
        "offset_mapping"
    ]
    starts = itertools.accumulate(bodies, initial=0)
    return [source[offsets[a][0] : offsets[a + b - 1][1]] for a, b in zip(starts, bodies)]


def _source(tokenizer: Any, text_file: str | None, at_least: int) -> str:
    """The documents of `text_file` (the built-in text if None) read until `at_least` tokens, repeated if fewer
    (so the texts never run out); ValueError if they hold no token."""
    documents, count = [], 0
    for text in read_texts(text_file) if text_file else iter([BUILT_IN_TEXT]):
        documents.append(text)
        count += len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])
        if count >= at_least:
            break
    if not count:
        raise ValueError(f"text_file {text_file!r}: its text holds no token")
    return "\n\n".join(documents * math.ceil(at_least / count))


# --- the calls and their timing ---------------------------------------------------------------------------------


def encode_whole(student: Any, texts: list[str], batch_size: int) -> None:
    student.encode(texts, batch_size=batch_size, convert_to_tensor=True)


def encode_chunks(original: Any, pieces: list[list[str]], batch_size: int) -> None:
    """Every text's chunks in one `encode` (batches cross texts, as a user's index does), averaged per text."""
    vectors = original.encode([c for p in pieces for c in p], batch_size=batch_size, convert_to_tensor=True)
    ends = torch.tensor([0] + [len(p) for p in pieces]).cumsum(0).tolist()
    torch.stack([vectors[a:b].mean(0) for a, b in itertools.pairwise(ends)])


def timed(call: Callable[[], None], device: str = "cpu") -> float:
    """The seconds of one call: the harness's `sample` (bench/timing.py; a CUDA device synchronised)."""
    return sample(call, device, warmup=0, repeats=1, number=1)[0]


def warm_up(arms: Arms, calls: int = 1, device: str = "cpu") -> dict[str, float]:
    """Each arm called `calls` times untimed (allocator, a kernel's build, autotune): the seconds of its last call
    (none for calls = 0), so a caller can skip what would take too long."""
    last: dict[str, float] = {}
    for key, call in arms:
        for _ in range(calls):
            last[key] = timed(call, device)
    return last


def time_arms(arms: Arms, rounds: int, device: str = "cpu") -> dict[str, list[float]]:
    """The seconds of each arm's call in every round: the harness's rotating rounds (bench/timing.py
    `time_in_rounds`, one call a sample), so a slow moment of a shared machine hits them all."""
    plans = [Timed(call, number=1, rounds=rounds) for _, call in arms]
    time_in_rounds(plans, device)
    return {key: plan.samples for (key, _), plan in zip(arms, plans, strict=True)}


def median_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    """The median over rounds of numerator / denominator (the same round's); None without a round."""
    pairs = zip(numerators, denominators, strict=True)
    ratios = [a / b for a, b in pairs if b > 0]
    return statistics.median(ratios) if ratios else None


# --- the case of scope student ----------------------------------------------------------------------------------


def measure_encode(config: BenchmarkConfig, original: Model, students: list[Model]) -> list[EncodeRecord]:
    """An EncodeRecord a student (module docstring): timed, or skipped with the reason."""
    longest = max(config.seq_lens)
    records = [
        EncodeRecord(s.name, s.path, original.path, config.encode_texts, ENCODE_BATCH, min(SHORTEST, longest),
                     longest, config.chunk_length, config.dtype, cpu_model_name(), torch.get_num_threads())
        for s in students
    ]  # fmt: skip
    unavailable = _unavailable(original, "the original")
    for record, student in zip(records, students):
        record.skipped = unavailable or _unavailable(student, f"student {student.name!r}")
    live = [record for record in records if record.skipped is None]
    if not live:
        return records
    chunks_model = _load(original.path, config.dtype, config.device)
    chunks_model.max_seq_length = config.chunk_length
    tokenizer = chunks_model.tokenizer
    texts = stretches(
        tokenizer, config.text_file, mixed_lengths(config.encode_texts, live[0].shortest, longest)
    )
    chunk = config.chunk_length - tokenizer.num_special_tokens_to_add()
    pieces = [chunks_of(tokenizer, text, chunk) for text in texts]
    encode_original = functools.partial(encode_chunks, chunks_model, pieces, ENCODE_BATCH)
    for record in live:
        record.chunks = sum(len(p) for p in pieces)
        try:
            student_model = _load(record.path, config.dtype, config.device)
            record.student_max_seq_length = student_model.max_seq_length  # longer texts are cut there
            arms = [("student", functools.partial(encode_whole, student_model, texts, ENCODE_BATCH)),
                    ("chunks", encode_original)]  # fmt: skip
            _time(record, arms, config)
        except (RuntimeError, MemoryError, ValueError) as err:
            record.skipped = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
    return records


def _time(record: EncodeRecord, arms: Arms, config: BenchmarkConfig) -> None:
    """The record's seconds, unless a warm-up call is above the time cap (then the reason)."""
    warm = warm_up(arms, config.warmup, config.device)
    slowest = max(warm.values(), default=0.0)
    if slowest > config.time_cap_s:
        record.skipped = f"a warm-up call took {slowest:.0f} s > time cap {config.time_cap_s:.0f} s"
        return
    seconds = time_arms(arms, config.rounds, config.device)
    record.seconds_student, record.seconds_chunks = seconds["student"], seconds["chunks"]


def sentence_transformers_installed() -> bool:
    return importlib.util.find_spec("sentence_transformers") is not None


def _unavailable(model: Model, what: str) -> str | None:
    """Why `model` cannot be read through `SentenceTransformer`, or None."""
    from linformer_kit.models.sentence_transformers_folder import is_sentence_transformers_folder

    if not sentence_transformers_installed():
        return "sentence-transformers not installed (pip install 'linformer-kit[sentence]')"
    if not is_sentence_transformers_folder(model.path):
        return (
            f"{what} ({model.path!r}) is no sentence-transformers folder (no modules.json): encode reads a "
            "folder as `SentenceTransformer(folder)` does"
        )
    return None


def _load(path: str, dtype: str, device: str) -> Any:
    from sentence_transformers import SentenceTransformer

    import linformer_kit.models  # noqa: F401  (registers model_type "linformer" for the student's folder)

    return SentenceTransformer(path, device=device, model_kwargs={"dtype": getattr(torch, dtype)})
