"""Masked-LM training throughput of the `base` preset, Linformer vs full attention.

    bash scripts/gpu/run.sh throughput                              # on the GPU machine (scripts/gpu/README.md)
    python scripts/gpu/train_throughput.py --out runs/gpu/throughput  # the same, directly; H100: about 2 minutes
    python scripts/gpu/train_throughput.py --out runs/tt --tiny       # CPU dry run

One optimizer step = what `linformer pretrain --preset base --bf16` runs per batch: the same
`LinformerForMaskedLM` (RoBERTa-base shape, vocab 50265), bf16 autocast, AdamW, 15 % of the tokens
carrying a label. Synthetic token ids (the step's cost does not depend on their values). For each
(n, attention) the batch doubles from `tokens_start // n` until it runs out of memory; every batch that
fits is timed, and the largest one is the "largest batch that fits". train_throughput.json is rewritten
after every (n, attention), so a run stopped at a time limit keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.train.pretrain import PRESETS


def step_time(model: torch.nn.Module, batch: int, n: int, device: str, steps: int) -> float:
    """Median seconds of one forward+backward+AdamW step on a (batch, n) block of tokens."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device == "cuda")
    ids = torch.randint(5, model.config.vocab_size, (batch, n), device=device)
    labels = torch.where(torch.rand(batch, n, device=device) < 0.15, ids, -100)
    times = []
    for i in range(steps + 2):  # two warm-up steps
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        with torch.autocast(device, dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if device == "cuda":
            torch.cuda.synchronize()
        if i >= 2:
            times.append(time.perf_counter() - start)
    del optimizer
    return sorted(times)[len(times) // 2]


def measure(n: int, k: int | None, shape: dict, device: str, tokens_start: int, steps: int) -> dict:
    config = LinformerConfig(**shape, max_position_embeddings=n + 2, projected_length=k, sharing="headwise")
    model = LinformerForMaskedLM(config).to(device).train()
    rows, batch = [], max(1, tokens_start // n)
    while True:
        try:
            seconds = step_time(model, batch, n, device, steps)
        except torch.OutOfMemoryError:
            break
        finally:
            model.zero_grad(set_to_none=True)
            if device == "cuda":
                torch.cuda.empty_cache()
        rows.append(dict(batch=batch, step_s=seconds, tokens_per_s=batch * n / seconds))
        print(dict(n=n, k=k, **rows[-1]), flush=True)
        if device != "cuda" or batch * n >= 2**20:  # CPU dry run: one batch; GPU: stop at 1 M tokens
            break
        batch *= 2
    del model
    best = max(rows, key=lambda r: r["tokens_per_s"]) if rows else None
    return dict(n=n, k=k, largest_batch=rows[-1]["batch"] if rows else 0, rows=rows, best=best)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()
    device = "cpu" if args.tiny or not torch.cuda.is_available() else "cuda"
    shape = dict(PRESETS["tiny" if args.tiny else "base"])
    lengths = (64, 128) if args.tiny else (512, 1024, 2048, 4096)
    env = dict(device=torch.cuda.get_device_name() if device == "cuda" else "cpu", torch=torch.__version__)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for n in lengths:
        for k in (None, 128, 256):
            if k is not None and k >= n:
                continue
            results.append(measure(n, k, shape, device, tokens_start=8 * n if args.tiny else 16384, steps=5))
            partial = out / "train_throughput.json.part"  # written whole, then renamed: never half a file
            partial.write_text(json.dumps(dict(env=env, results=results), indent=1))
            partial.replace(out / "train_throughput.json")
    print("| n | attention | largest batch | tokens/s at largest | best tokens/s (batch) |")
    for r in results:
        best = r["best"] or {}
        at_largest = r["rows"][-1]["tokens_per_s"] if r["rows"] else 0
        name = "full" if r["k"] is None else f"k={r['k']}"
        print(f"| {r['n']} | {name} | {r['largest_batch']} | {at_largest:,.0f} | "
              f"{best.get('tokens_per_s', 0):,.0f} ({best.get('batch')}) |")  # fmt: skip


if __name__ == "__main__":
    main()
