"""The window cores on this CPU: one windowed layer (D = 384, 12 heads, k = 128, w = 64, g = 1, batch 1, fp32,
inference), each core against `split`, rounds rotating which runs first.

    python scripts/cpu/window_cores.py [--cores split native flex] [--lengths 1024 4096] [--rounds 7]
        [--dtype bfloat16]

"native" is the kernel of our own (nn/local_native.py, built on its first call), "flex" PyTorch's compiled
FlexAttention kernel (the layer eager). Prints one JSON line per length: the median ms of each core, each
core / split (> 1: slower than split) and each core's largest difference from split. The basis of `auto`'s CPU
rule (nn/cores.py; docs/benchmarks/cpu-window/README.md, "Local window", and
docs/benchmarks/native/README.md, "The native window kernel").
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
    parser.add_argument(
        "--cores", nargs="+", default=["split", "native", "flex"], choices=["split", "native", "flex"]
    )
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    dtype = getattr(torch, args.dtype)
    warnings.simplefilter("ignore")
    torch.manual_seed(0)
    longest = max(args.lengths)
    layers = {
        backend: LinformerSelfAttention(
            384, 12, longest, 128, sharing="headwise", local_window=64, global_tokens=1, backend=backend
        )
        .eval()
        .to(dtype)
        for backend in dict.fromkeys(["split", *args.cores])
    }
    for layer in layers.values():
        layer.load_state_dict(layers["split"].state_dict())
    for n in args.lengths:
        x = torch.randn(1, n, 384, dtype=dtype)
        times: dict[str, list[float]] = {name: [] for name in layers}
        with torch.inference_mode():
            start = time.perf_counter()
            first = {name: layer(x) for name, layer in layers.items()}  # warm-up (flex compiles here)
            warm = time.perf_counter() - start
            error = {name: (out - first["split"]).abs().max().item() for name, out in first.items()}
            names = list(layers)
            for round_ in range(args.rounds):
                order = names[round_ % len(names) :] + names[: round_ % len(names)]
                for name in order:
                    start = time.perf_counter()
                    layers[name](x)
                    times[name].append(time.perf_counter() - start)
        ms = {name: statistics.median(t) * 1e3 for name, t in times.items()}
        over = {f"{name}_over_split": ms[name] / ms["split"] for name in ms if name != "split"}
        print(json.dumps({"n": n, "ms": ms, **over, "max_abs_difference": error, "warm_up_s": warm,
                          "threads": torch.get_num_threads(), "dtype": args.dtype, "capability": torch.backends.cpu.get_cpu_capability()}),
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
