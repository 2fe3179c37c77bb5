"""Where one training step of the `training` preset spends its CPU time (issue "Never slower on the user's machine").

`linformer benchmark --preset training` reports the step's FLOP rate as a share of a fp32 GEMM measured beside it
(77-81 % on an AVX-512 EPYC, 47-51 % on an Intel Xeon with AMX, 61-88 % on an AVX2 EPYC). This profiles the same
step (bench/cases.py `train_step`: forward, backward, AdamW of the `small` encoder on input embeddings, batch 2,
fp32) and sorts its self time into groups, so two machines' shares can be compared by where they differ:

    gemm         aten::mm / addmm / bmm / baddbmm (and their `matmul` wrappers' self time)
    attention    SDPA's kernels and the Linformer window / projection ops that are not a GEMM
    optimizer    AdamW's step's own time and the ops named for it (`lerp_`, `_foreach_*` / `_fused_*` where torch
                 takes them); its other per-tensor ops (`mul_`, `addcdiv_`, ...) count as elementwise
    elementwise  everything else (GELU, LayerNorm, adds, copies, their backward)

    python scripts/cpu/training_step_profile.py OUT.json [--n 2048] [--method linformer-headwise] [--steps 3]

Run it with the CPU to itself. Not run in tests (seconds on 2 cores; the groups are read off a profiler table).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from linformer_kit.allocator import reuse_freed_memory
from linformer_kit.bench.cases import Case, build_step
from linformer_kit.bench.matmul_reference import matmul_rate
from linformer_kit.bench.presets import preset
from linformer_kit.nn.autotune import cpu_model_name

GEMM = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear")
OPTIMIZER = ("Optimizer.step", "aten::_foreach", "aten::_fused_adam", "aten::lerp", "aten::addcdiv")
ATTENTION = ("scaled_dot_product", "flash_attention", "linformer", "window", "softmax", "unfold")


def group(name: str) -> str:
    if name.startswith(GEMM):
        return "gemm"
    if name.startswith(OPTIMIZER) or "Optimizer" in name:
        return "optimizer"
    if any(word in name.lower() for word in ATTENTION):
        return "attention"
    return "elementwise"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--n", type=int, default=2048)
    parser.add_argument("--method", default="linformer-headwise", choices=("linformer-headwise", "full-sdpa"))
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--rows", type=int, default=15)
    args = parser.parse_args()
    reuse_freed_memory()  # what every `linformer` verb does first (cli/main.py)
    config = preset("training")
    case = Case(args.method, "encoder", "train_step", args.n, 128 if args.method != "full-sdpa" else None,
                config.batch_size, config.hidden_size, config.num_heads, config.num_layers,
                config.intermediate_size, "cpu", "float32")  # fmt: skip
    step = build_step(case)
    for _ in range(2):  # warm-up: the allocator, AdamW's state
        step()
    before = matmul_rate(2048, "cpu", torch.float32)  # the benchmark's reference: a 2048^3 fp32 GEMM
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    seconds = (time.perf_counter() - start) / args.steps
    after = matmul_rate(2048, "cpu", torch.float32)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step()
    events = [e for e in prof.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    groups: dict[str, float] = {}
    for e in events:
        groups[group(e.key)] = groups.get(group(e.key), 0.0) + e.self_cpu_time_total
    top = sorted(events, key=lambda e: -e.self_cpu_time_total)[: args.rows]
    record = {
        "cpu": cpu_model_name(), "capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads(), "case": case.to_dict(), "seconds_a_step": round(seconds, 4),
        "gflops": round(case.flops / seconds / 1e9, 1), "gemm_gflops_before_after": [round(before / 1e9, 1), round(after / 1e9, 1)],
        "self_share": {g: round(100 * t / total, 1) for g, t in sorted(groups.items(), key=lambda x: -x[1])},
        "top_ops_ms_a_step": {e.key: round(e.self_cpu_time_total / 1e3 / args.steps, 1) for e in top},
    }  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
