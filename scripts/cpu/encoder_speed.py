"""Encode speed and peak memory of an encoder and its Linformer at long inputs (issue "A Linformer that keeps a
pretrained encoder's quality": at n = 4 096 the student should encode >= 3x faster than the original).

    python scripts/cpu/encoder_speed.py --original runs/models/all-MiniLM-L6-v2 \
        --student runs/distill/minilm-k128-w16-g1-e2e600 --lengths 512 2048 4096 \
        --out docs/reproduction/distill-minilm/speed.json

Both models read the same batch of real IMDB text cut to exactly n tokens ([CLS] ... [SEP], no padding).
Above the original's 512 positions, each model's position table is extended as `convert --max-length n`
extends it (`encoder_at`: position p takes the trained row of p mod 512): the original stays a
transformers BertModel (its SDPA attention), the student a Linformer with the same options and E, F sized
for n. The weights of the extended positions, E and F do not change the time, only the shapes do.

Throughput: texts/s = batch / median seconds of one forward, A/B in one process, the two models
alternated every repeat (so a slower moment of the machine hits both), after one warm-up call each.
Peak memory: a fresh process per (model, n) builds the model and the batch, reads its resident set size,
runs one forward and reports the rise to its peak RSS (`linformer_kit.bench.memory`'s measure): what the
call needs on top of the weights. Run it with the CPU to itself.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
from transformers import AutoTokenizer

import linformer_kit.models  # noqa: F401  (registers model_type "linformer" with the Auto classes)
from linformer_kit.bench.memory import current_rss, peak_rss
from linformer_kit.reproduction.encoder_eval import encoder_at

BATCH = {512: 8, 1024: 4, 2048: 2, 4096: 1}  # texts per call: about 4 096 tokens each


def batch_of(tokenizer, data: Path, length: int, size: int) -> dict[str, torch.Tensor]:
    """`size` rows of exactly `length` tokens of IMDB test text, each [CLS] ... [SEP]."""
    ids: list[int] = []
    with gzip.open(data / "imdb" / "test.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            ids += tokenizer(json.loads(line)["text"], add_special_tokens=False)["input_ids"]
            if len(ids) >= size * (length - 2):
                break
    body = torch.tensor(ids[: size * (length - 2)]).view(size, length - 2)
    cls = torch.full((size, 1), tokenizer.cls_token_id)
    sep = torch.full((size, 1), tokenizer.sep_token_id)
    input_ids = torch.cat([cls, body, sep], dim=1)  # (B, n)
    return {"input_ids": input_ids, "attention_mask": torch.ones_like(input_ids)}


@torch.no_grad()
def seconds(model: torch.nn.Module, batch: dict) -> float:
    start = time.perf_counter()
    model(**batch)
    return time.perf_counter() - start


def peak_memory(path: str, tokenizer_path: str, data: str, length: int, threads: int) -> int:
    """Bytes one forward needs above the built model and batch, measured in a fresh process."""
    cmd = [sys.executable, __file__, "--one", path, tokenizer_path, data, str(length), str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return int(json.loads(done.stdout.strip().splitlines()[-1])["delta_bytes"])


def _one(path: str, tokenizer_path: str, data: str, length: str, threads: str) -> None:
    torch.set_num_threads(int(threads))
    model = encoder_at(path, int(length))
    batch = batch_of(
        AutoTokenizer.from_pretrained(tokenizer_path), Path(data), int(length), BATCH[int(length)]
    )
    before = current_rss()
    seconds(model, batch)
    print(json.dumps({"delta_bytes": peak_rss() - before}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--original", required=True)
    parser.add_argument("--student", required=True)
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 4096], choices=sorted(BATCH))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.original)
    paths = {"original": args.original, "student": args.student}
    results: dict = {"threads": args.threads, "repeats": args.repeats, "lengths": {}}
    for length in args.lengths:
        batch = batch_of(tokenizer, Path(args.data), length, BATCH[length])
        models = {kind: encoder_at(path, length) for kind, path in paths.items()}
        times: dict[str, list[float]] = {kind: [] for kind in models}
        for model in models.values():
            seconds(model, batch)  # warm-up
        for _ in range(args.repeats):
            for kind, model in models.items():
                times[kind].append(seconds(model, batch))
        row: dict = {"batch": BATCH[length]}
        for kind in models:
            median = statistics.median(times[kind])
            memory = peak_memory(paths[kind], args.original, args.data, length, args.threads)
            row[kind] = {
                "texts_per_second": BATCH[length] / median,
                "seconds": times[kind],
                "peak_bytes": memory,
            }
        row["speedup"] = row["student"]["texts_per_second"] / row["original"]["texts_per_second"]
        row["memory_ratio"] = row["student"]["peak_bytes"] / max(1, row["original"]["peak_bytes"])
        results["lengths"][str(length)] = row
        print(length, json.dumps({k: v for k, v in row.items() if k not in paths}),
              {k: round(row[k]["texts_per_second"], 2) for k in paths}, flush=True)  # fmt: skip
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        _one(*sys.argv[2:])
    else:
        main()
