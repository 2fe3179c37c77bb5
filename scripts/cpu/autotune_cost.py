"""What "auto" that measures costs once and what it buys (nn/autotune.py), through a saved student, in one process:
at each length, the first call with LINFORMER_KIT_AUTOTUNE=process (it times the cores on each new bucket) against
the calls after it, and the steady time against the static rule's ("off"), rounds alternating the two modes.

    python scripts/cpu/autotune_cost.py runs/distill/minilm-long4096 docs/benchmarks/autotune/cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from linformer_kit.models import LinformerModel
from linformer_kit.nn import autotune
from linformer_kit.nn.autotune import cpu_model_name


def timed(model: LinformerModel, ids: torch.Tensor) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        model(input_ids=ids, attention_mask=torch.ones_like(ids))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a saved student")
    parser.add_argument("out", type=Path, help="the JSON record to write")
    parser.add_argument("--lengths", type=int, nargs="+", default=[512, 2048, 4096])
    parser.add_argument("--batch-size", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = LinformerModel.from_pretrained(args.model, dtype=getattr(torch, args.dtype)).eval()
    record = {
        "model": Path(args.model).name, "batch_size": args.batch_size, "rounds": args.rounds,
        "threads": args.threads, "dtype": args.dtype,
        "cpu": cpu_model_name() or "?",
        "cpu_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__,
        "python": platform.python_version(), "lengths": [],
    }  # fmt: skip
    torch.manual_seed(0)
    for n in args.lengths:
        ids = torch.randint(1000, 20000, (args.batch_size, n))
        os.environ[autotune.AUTOTUNE_VARIABLE] = "off"
        timed(model, ids)  # warm: the kernel's build, the allocator, the static path
        autotune.forget_picks()
        os.environ[autotune.AUTOTUNE_VARIABLE] = "process"
        first = timed(model, ids)  # the measuring call
        picks = dict(autotune._picks)
        seconds: dict[str, list[float]] = {"off": [], "process": []}
        for r in range(args.rounds):
            for mode in ("off", "process") if r % 2 == 0 else ("process", "off"):
                os.environ[autotune.AUTOTUNE_VARIABLE] = mode
                seconds[mode].append(timed(model, ids))
        steady = statistics.median(seconds["process"])
        row = {
            "n": n, "first_call_s": round(first, 4), "seconds": seconds, "picks": picks,
            "cost_once_s": round(first - steady, 4),
            "measured_over_static": round(statistics.median(
                p / o for p, o in zip(seconds["process"], seconds["off"], strict=True)), 3),
        }  # fmt: skip
        record["lengths"].append(row)
        print(
            f"n={n}: first call {first:.3f} s, then {steady:.3f} s (cost once {first - steady:.3f} s); "
            f"measured / static time {row['measured_over_static']:.3f}; picks {sorted(set(picks.values()))}",
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
