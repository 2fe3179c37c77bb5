"""A long student's `SentenceTransformer.encode` against the original's `encode` of the same texts cut into 512-token
chunks (averaged per text), as users call them, A/B in one process (issue "Never slower on the user's machine").

Texts are real book text (Gutenberg) cut to token lengths: "mixed" draws them from 128 to 4 096 tokens, "similar"
from 2 900 to 3 100, "short" from 128 to 512. Each round times both models on every case, the order rotating;
the ratio is the median over rounds of (the original's seconds) / (the student's): above 1 the student is faster.
`--profile` adds one profiled student call per case (the ops that take its time) to the record. `--ungrouped` adds
a third arm, the student with its CPU token groups off (models/token_groups.py: each batch of 32 read whole, as
before them), so the groups' own gain is a ratio of one run too.

    python scripts/cpu/encode_ab.py runs/distill/minilm-long4096 runs/models/all-MiniLM-L6-v2 \
        ../shared/data/gutenberg/train.jsonl.gz docs/benchmarks/encode/ab.json
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import platform
import random
from collections.abc import Callable
from pathlib import Path

import torch
from sentence_transformers import SentenceTransformer

import linformer_kit.models  # noqa: F401  (registers model_type "linformer" for the student's folder)
from linformer_kit.bench.student_encode import (
    chunks_of,
    cut,
    encode_chunks,
    encode_whole,
    median_ratio,
    time_arms,
    warm_up,
)
from linformer_kit.models import token_groups
from linformer_kit.nn.autotune import cpu_model_name

CASES = {"mixed": (128, 4096), "similar": (2900, 3100), "short": (128, 512)}
CHUNK = 510  # tokens a chunk, so with [CLS] and [SEP] the original reads 512


def book_texts(path: Path, count: int) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for _, line in zip(range(count), f, strict=False)]


def ungrouped(call: Callable[[], None]) -> None:
    """`call` with the student's token groups off: no batch holds more tokens than this."""
    kept, token_groups.GROUP_TOKENS = token_groups.GROUP_TOKENS, 2**62
    try:
        call()
    finally:
        token_groups.GROUP_TOKENS = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("student", help="a saved long student (a sentence-transformers folder)")
    parser.add_argument("original", help="the original sentence-transformers folder")
    parser.add_argument("books", type=Path, help="JSON lines with a text field (Gutenberg books)")
    parser.add_argument("out", type=Path, help="the JSON record to write")
    parser.add_argument("--texts", type=int, default=64, help="texts a case (two batches of 32 by default)")
    parser.add_argument("--batch-size", type=int, default=32, help="encode's batch size (its default: 32)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--ungrouped", action="store_true", help="also time the student with token groups off"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    dtype = getattr(torch, args.dtype)
    student = SentenceTransformer(args.student, device="cpu", model_kwargs={"dtype": dtype})
    original = SentenceTransformer(args.original, device="cpu", model_kwargs={"dtype": dtype})
    original.max_seq_length = 512
    record = {
        "student": Path(args.student).name, "original": Path(args.original).name,
        "student_max_seq_length": student.max_seq_length, "batch_size": args.batch_size, "texts": args.texts,
        "rounds": args.rounds, "threads": args.threads, "dtype": args.dtype,
        "cpu": cpu_model_name() or "?",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
        "python": platform.python_version(), "cases": [],
    }  # fmt: skip
    books = [b for b in book_texts(args.books, 400) if len(b) > 50_000][: args.texts]
    for name in args.cases:
        low, high = CASES[name]
        rng = random.Random(0)
        texts = cut(student.tokenizer, books, [rng.randint(low, high) for _ in books])
        pieces = [chunks_of(original.tokenizer, t, CHUNK) for t in texts]
        chunks = sum(len(p) for p in pieces)
        encode_student = functools.partial(encode_whole, student, texts, args.batch_size)
        encode_original = functools.partial(encode_chunks, original, pieces, args.batch_size)
        arms: list[tuple[str, Callable[[], None]]] = [
            ("student", encode_student),
            ("chunks", encode_original),
        ]
        if args.ungrouped:
            arms.append(("student-ungrouped", functools.partial(ungrouped, encode_student)))
        warm_up(arms)  # allocator, the kernel's build, autotune
        seconds = time_arms(arms, args.rounds)
        ratio = median_ratio(seconds["chunks"], seconds["student"]) or float("nan")
        case = {"case": name, "tokens": [low, high], "chunks": chunks, "seconds": seconds,
                "student_speed_over_chunks": round(ratio, 3)}  # fmt: skip
        if args.ungrouped:
            speedup = median_ratio(seconds["student-ungrouped"], seconds["student"]) or float("nan")
            case["groups_speedup"] = round(speedup, 3)
        if args.profile:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
                encode_student()
            case["profile"] = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15)
            print(case["profile"])
        record["cases"].append(case)
        print(
            f"{name}: student {ratio:.2f}x the original's chunks ({chunks} chunks of {len(texts)} texts)",
            f"groups {case['groups_speedup']:.2f}x" if args.ungrouped else "",
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
