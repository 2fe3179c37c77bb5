"""Encode speed and peak memory of an encoder and its Linformer at long inputs (issue "A Linformer that keeps a
pretrained encoder's quality": at n = 4 096 the student should encode >= 3x faster than the original).

    python scripts/cpu/encoder_speed.py --original runs/models/all-MiniLM-L6-v2 \
        --student runs/distill/minilm-k128-w16-g1-e2e600 --lengths 512 2048 4096 \
        --out docs/reproduction/distill-minilm/speed.json

Both models read the same batch of real IMDB text cut to exactly n tokens ([CLS] ... [SEP], no padding).
Above the original's 512 positions, each model's position table is extended as `convert --max-length n`
extends it (position p takes the trained row of p mod 512): the original stays a transformers BertModel
(its SDPA attention), the student a Linformer with the same options and E, F sized for n. The weights of
the extended positions, E and F do not change the time, only the shapes do.

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
from transformers import AutoConfig, AutoModel, AutoTokenizer

import linformer_kit.models  # noqa: F401  (registers model_type "linformer" with the Auto classes)
from linformer_kit.bench.memory import current_rss, peak_rss
from linformer_kit.models.convert import extend_position_table, first_position_row, with_linformer_options

BATCH = {512: 8, 1024: 4, 2048: 2, 4096: 1}  # texts per call: about 4 096 tokens each
POSITION_TABLE = "embeddings.position_embeddings.weight"


def original_at(path: str, length: int) -> torch.nn.Module:
    """The original (a BERT-family `AutoModel`) reading up to `length` tokens: its positions wrapped."""
    model = AutoModel.from_pretrained(path)
    first = first_position_row(model.config)
    if length <= model.config.max_position_embeddings - first:
        return model.eval()
    config = AutoConfig.from_pretrained(path, max_position_embeddings=first + length)
    longer = AutoModel.from_config(config)
    state = model.state_dict()
    state[POSITION_TABLE] = extend_position_table(state[POSITION_TABLE], first, length)
    longer.load_state_dict(state, strict=False)  # buffers sized by the config (position_ids) are its own
    return longer.eval()


def student_at(path: str, length: int) -> torch.nn.Module:
    """The Linformer student reading up to `length` tokens (positions wrapped, E and F sized for it)."""
    model = AutoModel.from_pretrained(path)
    if length <= model.config.max_seq_len:
        return model.eval()
    c = model.config
    longer, _ = with_linformer_options(
        model, c.projected_length, c.sharing, c.projection, c.projection_init, max_length=length,
        local_window=c.local_window, global_tokens=c.global_tokens,
    )  # fmt: skip
    return longer.eval()


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


def build(kind: str, path: str, length: int) -> torch.nn.Module:
    return original_at(path, length) if kind == "original" else student_at(path, length)


@torch.no_grad()
def seconds(model: torch.nn.Module, batch: dict) -> float:
    start = time.perf_counter()
    model(**batch)
    return time.perf_counter() - start


def peak_memory(kind: str, path: str, tokenizer_path: str, data: str, length: int, threads: int) -> int:
    """Bytes one forward needs above the built model and batch, measured in a fresh process."""
    cmd = [sys.executable, __file__, "--one", kind, path, tokenizer_path, data, str(length), str(threads)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return int(json.loads(done.stdout.strip().splitlines()[-1])["delta_bytes"])


def _one(kind: str, path: str, tokenizer_path: str, data: str, length: str, threads: str) -> None:
    torch.set_num_threads(int(threads))
    model = build(kind, path, int(length))
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
        models = {kind: build(kind, path, length) for kind, path in paths.items()}
        times: dict[str, list[float]] = {kind: [] for kind in models}
        for model in models.values():
            seconds(model, batch)  # warm-up
        for _ in range(args.repeats):
            for kind, model in models.items():
                times[kind].append(seconds(model, batch))
        row: dict = {"batch": BATCH[length]}
        for kind in models:
            median = statistics.median(times[kind])
            memory = peak_memory(kind, paths[kind], args.original, args.data, length, args.threads)
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
