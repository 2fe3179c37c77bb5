"""The window cores on this CPU: one windowed layer (D = 384, 12 heads, k = 128, w = 64, g = 1, batch 1, fp32,
inference), `split` against `flex` (its compiled kernel, the layer eager), rounds alternating which runs first.

    python scripts/cpu/window_cores.py [--lengths 1024 4096] [--rounds 7]

Prints one JSON line per length: median ms of each core and flex / split (> 1: flex is slower). The basis of
`auto`'s CPU rule (nn/local.py, docs/benchmarks.md "Local window").
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import torch

from linformer_kit.nn import LinformerSelfAttention


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lengths", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    longest = max(args.lengths)
    layers = {
        backend: LinformerSelfAttention(
            384, 12, longest, 128, sharing="headwise", local_window=64, global_tokens=1, backend=backend
        ).eval()
        for backend in ("split", "flex")
    }
    layers["flex"].load_state_dict(layers["split"].state_dict())
    for n in args.lengths:
        x = torch.randn(1, n, 384)
        times: dict[str, list[float]] = {name: [] for name in layers}
        with torch.inference_mode():
            start = time.perf_counter()
            first = {name: layer(x) for name, layer in layers.items()}  # warm-up (flex compiles here)
            warm = time.perf_counter() - start
            error = (first["flex"] - first["split"]).abs().max().item()
            for round_ in range(args.rounds):
                order = list(layers) if round_ % 2 == 0 else list(reversed(layers))
                for name in order:
                    start = time.perf_counter()
                    layers[name](x)
                    times[name].append(time.perf_counter() - start)
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        print(json.dumps({"n": n, "ms": ms, "flex_over_split": ms["flex"] / ms["split"],
                          "max_abs_difference": error, "warm_up_s": warm, "threads": torch.get_num_threads()}),
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
