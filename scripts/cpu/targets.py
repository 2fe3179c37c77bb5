"""The benchmark issue's targets (fp32, d=768, 12 heads, batch 1, k=256, n = 4096 and 16384), met or not.

These are this project's acceptance criteria, not part of the library's report. The rows come from
one benchmark run on 2 threads (about 15 minutes on a quiet 2-core CPU):

    linformer benchmark --seq-lens 4096 16384 --projected-lengths 256 \
        --methods linformer-headwise linformer-kv full-sdpa peer-linformer --scopes layer encoder \
        --passes forward --dtype float32 --batch-size 1 --hidden-size 768 --num-heads 12 --num-layers 12 \
        --intermediate-size 3072 --threads 2 --rounds 3 --time-cap 250 --output-dir runs/bench-targets
    python scripts/cpu/targets.py runs/bench-targets/benchmark.json

Only rows present in the result are checked, so a run that holds some of them (e.g. the same command
with `--scopes encoder --seq-lens 4096`) prints those. "FLOP/s / GEMM rate" compares a layer with the
reference GEMM sampled in its own rounds (the run's rate for results written before records had one).
"""

from __future__ import annotations

import argparse
import sys

from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult
from linformer_kit.bench.report import flop_limit, load_result, markdown_table, matmul_share

SHAPE = {"dtype": "float32", "hidden_size": 768, "num_heads": 12, "batch_size": 1}
K, LENGTHS = 256, (4096, 16384)


def format_targets(result: BenchmarkResult) -> str:
    """The targets table ("" when the run has another shape or none of the rows)."""
    if any(result.config[field] != value for field, value in SHAPE.items()):
        return ""
    found = {(r.scope, r.method, r.n, r.k): r for r in result.records if r.pass_type == "forward"}
    rows = [row for n in LENGTHS for row in _layer_rows(found, n, result) + _encoder_rows(found, n)]
    rows += _memory_rows(found)
    if not rows:
        return ""
    title = f"**Targets** (fp32, d=768, 12 heads, batch 1, k={K}, forward)"
    return title + "\n\n" + markdown_table(["target", "goal", "measured", ""], rows)


def _layer_rows(found: dict, n: int, result: BenchmarkResult) -> list[list[str]]:
    """Each layer at >= 2x the speed of PyPI `linformer` and >= 70% of the GEMM rate."""
    rows, peer = [], found.get(("layer", "peer-linformer", n, K))
    for method in ("linformer-headwise", "linformer-kv"):
        r = found.get(("layer", method, n, K))
        if not _measured(r):
            continue
        if _measured(peer):
            ratio = peer.time_median_s / r.time_median_s
            rows.append(
                [f"layer {method} vs PyPI linformer, n={n}", ">= 2x", f"{ratio:.2f}x", _met(ratio >= 2)]
            )
        share = matmul_share(r, result)
        rows.append(
            [f"layer {method} FLOP/s / GEMM rate, n={n}", ">= 70%", f"{share:.0%}", _met(share >= 0.7)]
        )
    return rows


def _encoder_rows(found: dict, n: int) -> list[list[str]]:
    """The headwise encoder's speed-up over SDPA reaches 85% of its FLOP limit."""
    enc, full = (
        found.get(("encoder", "linformer-headwise", n, K)),
        found.get(("encoder", "full-sdpa", n, None)),
    )
    if not (_measured(enc) and _measured(full)):
        return []
    speedup, limit = full.time_median_s / enc.time_median_s, flop_limit(enc)
    goal = f">= 0.85 x FLOP limit {limit:.2f}x = {0.85 * limit:.2f}x"
    return [
        [
            f"encoder headwise speed-up over SDPA, n={n}",
            goal,
            f"{speedup:.2f}x",
            _met(speedup >= 0.85 * limit),
        ]
    ]


def _memory_rows(found: dict) -> list[list[str]]:
    """The headwise encoder's memory grows at most 4.5x from n=4096 to 16384 (linear would be 4x)."""
    small, large = (found.get(("encoder", "linformer-headwise", n, K)) for n in LENGTHS)
    if not (small and large and small.memory_delta_bytes and large.memory_delta_bytes):
        return []
    growth = large.memory_delta_bytes / small.memory_delta_bytes
    return [["encoder headwise memory delta 16384 / 4096", "<= 4.5", f"{growth:.2f}", _met(growth <= 4.5)]]


def _measured(r: BenchmarkRecord | None) -> bool:
    return r is not None and r.time_median_s is not None


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description="Print the benchmark issue's targets table of a benchmark.json."
    )
    parser.add_argument("result", help="benchmark.json written by `linformer benchmark`")
    args = parser.parse_args(argv)
    table = format_targets(load_result(args.result))
    print(table or f"{args.result}: no target rows (needs fp32, d=768, 12 heads, batch 1, k={K})")
    return 0 if table else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
