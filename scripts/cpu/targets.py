"""The benchmark issues' targets (fp32, d=768, 12 heads, batch 1), met or not: the projection's (k=256,
n = 4096 and 16384) and the local window's (k=128, w=16, n=4096, and memory across n).

These are this project's acceptance criteria, not part of the library's report. The rows come from
one benchmark run on 2 threads (about 15 minutes on a quiet 2-core CPU):

    linformer benchmark --seq-lens 4096 16384 --projected-lengths 256 \
        --methods linformer-headwise linformer-kv full-sdpa peer-linformer --scopes layer encoder \
        --passes forward --dtype float32 --batch-size 1 --hidden-size 768 --num-heads 12 --num-layers 12 \
        --intermediate-size 3072 --threads 2 --rounds 3 --time-cap 250 --output-dir runs/bench-targets
    python scripts/cpu/targets.py runs/bench-targets/benchmark.json

The local window's targets ("Local heads", item 3) come from the `window` preset's run (layer scope,
forward and forward+backward, n = 512 ... 16384, k = 128, headwise with w = none, 0, 16, 64 and SDPA
full attention; about 10 minutes on 2 cores):

    linformer benchmark --preset window --threads 2 --output-dir runs/bench-window
    python scripts/cpu/targets.py runs/bench-window/benchmark.json

    window cost      time(w=16) / time(no window) - 1 at n=4096        <= 20 %
    speed-up         time(full-sdpa) / time(w=16) at n=4096            >= 3x
    memory growth    log-log slope of the w=16 case's peak-memory delta over every measured n
                     (1: linear, 2: quadratic), with the delta per token at the largest n over the
                     smallest                                            slope <= 1.1

Only rows present in the result are checked, so a run that holds some of them (e.g. the same command
with `--scopes encoder --seq-lens 4096`) prints those. "FLOP/s / GEMM rate" compares a layer with the
reference GEMM sampled in its own rounds (the run's rate for results written before records had one).
"""

from __future__ import annotations

import argparse
import math
import sys

from linformer_kit.bench.config import LINFORMER_METHODS, PASS_TYPES, SCOPES
from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult
from linformer_kit.bench.report import flop_limit, load_result, markdown_table, matmul_share

SHAPE = {"dtype": "float32", "hidden_size": 768, "num_heads": 12, "batch_size": 1}
K, LENGTHS = 256, (4096, 16384)
# the local window's targets: at n = WINDOW_N, k = WINDOW_K, w = WINDOW
WINDOW_K, WINDOW, WINDOW_N = 128, 16, 4096
MAX_WINDOW_COST, MIN_WINDOW_SPEEDUP, MAX_MEMORY_SLOPE = 0.20, 3.0, 1.1


def format_targets(result: BenchmarkResult) -> str:
    """The targets tables, projection then local window ("" for another shape or none of the rows)."""
    return "\n\n".join(
        table for table in (format_projection_targets(result), format_window_targets(result)) if table
    )


def format_projection_targets(result: BenchmarkResult) -> str:
    """The projection's targets (k=256, forward; "" for a run of another shape)."""
    if not _shape_ok(result):
        return ""
    found = {
        (r.scope, r.method, r.n, r.k): r
        for r in result.records
        if r.pass_type == "forward" and r.local_window is None  # the paper's layer: no window
    }
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


def format_window_targets(result: BenchmarkResult) -> str:
    """The local window's targets (k=128, w=16, n=4096; memory over every n), per scope, pass and method."""
    if not _shape_ok(result):
        return ""
    found = {(r.scope, r.pass_type, r.method, r.n, r.k, r.local_window): r for r in result.records}
    rows = []
    for scope in SCOPES:
        for pass_type in PASS_TYPES:
            for method in LINFORMER_METHODS:
                rows += _window_rows(found, scope, pass_type, method)
    if not rows:
        return ""
    title = (
        f"**Local window targets** (fp32, d=768, 12 heads, batch 1, k={WINDOW_K}, w={WINDOW}, n={WINDOW_N}; "
        "memory: every measured n)"
    )
    return title + "\n\n" + markdown_table(["target", "goal", "measured", ""], rows)


def window_cost(windowed: BenchmarkRecord, plain: BenchmarkRecord) -> float:
    """(a) time with the window / time without it, minus 1 (0.2: the window costs 20 % more)."""
    return windowed.time_median_s / plain.time_median_s - 1  # type: ignore[operator]


def memory_slope(records: list[BenchmarkRecord]) -> tuple[float, float]:
    """(c) over records of one case at several n with a memory delta: (least-squares slope of log delta
    on log n, delta per token at the largest n / at the smallest). Linear memory: 1 and 1."""
    points = sorted((r.n, r.memory_delta_bytes) for r in records if r.memory_delta_bytes)
    if len({n for n, _ in points}) < 2:
        raise ValueError(f"memory_slope needs memory deltas at two n or more, got {points}")
    xs, ys = [math.log(n) for n, _ in points], [math.log(m) for _, m in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    (n0, m0), (n1, m1) = points[0], points[-1]
    return slope, (m1 / n1) / (m0 / n0)


def _window_rows(found: dict, scope: str, pass_type: str, method: str) -> list[list[str]]:
    at = f"{scope} {method.removeprefix('linformer-')}, {pass_type}"
    windowed = found.get((scope, pass_type, method, WINDOW_N, WINDOW_K, WINDOW))
    plain = found.get((scope, pass_type, method, WINDOW_N, WINDOW_K, None))
    full = found.get((scope, pass_type, "full-sdpa", WINDOW_N, None, None))
    rows = []
    if _measured(windowed) and _measured(plain):
        cost = window_cost(windowed, plain)
        rows.append([
            f"{at}: window cost w={WINDOW} (time / time without window - 1), n={WINDOW_N}",
            f"<= {MAX_WINDOW_COST:.0%}", f"{cost:+.0%}", _met(cost <= MAX_WINDOW_COST),
        ])  # fmt: skip
    if _measured(windowed) and _measured(full):
        speedup = full.time_median_s / windowed.time_median_s
        rows.append([
            f"{at}: w={WINDOW} speed-up over full-sdpa, n={WINDOW_N}",
            f">= {MIN_WINDOW_SPEEDUP:g}x", f"{speedup:.2f}x", _met(speedup >= MIN_WINDOW_SPEEDUP),
        ])  # fmt: skip
    series = [
        r for (s, p, m, _, k, w), r in found.items()
        if (s, p, m, k, w) == (scope, pass_type, method, WINDOW_K, WINDOW) and r.memory_delta_bytes
    ]  # fmt: skip
    if len({r.n for r in series}) >= 2:
        slope, per_token = memory_slope(series)
        ns = sorted(r.n for r in series)
        rows.append([
            f"{at}: w={WINDOW} memory delta vs n, n={ns[0]}..{ns[-1]} "
            f"(log-log slope; per token {ns[-1]} / {ns[0]})",
            f"slope <= {MAX_MEMORY_SLOPE:g} (linear 1, quadratic 2)", f"{slope:.2f} ({per_token:.2f}x)",
            _met(slope <= MAX_MEMORY_SLOPE),
        ])  # fmt: skip
    return rows


def _shape_ok(result: BenchmarkResult) -> bool:
    return all(result.config[field] == value for field, value in SHAPE.items())


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
    print(
        table
        or f"{args.result}: no target rows "
        f"(needs fp32, d=768, 12 heads, batch 1, and k={K} or k={WINDOW_K} w={WINDOW})"
    )
    return 0 if table else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
