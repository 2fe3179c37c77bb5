"""A/B in one run: a student's training step with its window on SDPA's query blocks and on the split core.

    python scripts/cpu/student_train_ab.py runs/ab/student-new --batch 2 --length 4096 --output OUT.json

The student is read at `--length` (`encoder_at`, as the benchmark reads it), in training mode with attention
dropout 0 (what `distill --attention-dropout 0`, the default, trains with: the split core has no dropout), the
hidden dropout its config's. A step is the encoder's forward and backward of a loss on its last hidden state,
random token ids, every token real. The two cores ("sdpa": `sdpa_local_attention`; "split": the fused kernel's
backward per part, nn/local_split.py) run in alternating rounds in one process; then each core's peak memory
above the built model, one step in a fresh process (`--peak CORE`, what the A/B runs for each). Run it with the
CPU to itself, under the malloc settings of the `linformer` verbs (allocator.py).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

import linformer_kit.models  # noqa: F401  (registers model_type "linformer" with the Auto classes)
from linformer_kit.allocator import reuse_freed_memory
from linformer_kit.bench.memory import current_rss, peak_rss
from linformer_kit.models.extend import encoder_at
from linformer_kit.nn import LinformerSelfAttention

CORES = ("sdpa", "split")


def student(path: str, length: int) -> torch.nn.Module:
    model = encoder_at(path, length).train()
    for layer in model.modules():
        if isinstance(layer, LinformerSelfAttention):
            layer.dropout = 0.0  # distill's --attention-dropout 0
    return model


def stepper(model: torch.nn.Module, batch: int, length: int):
    ids = torch.randint(1000, 20000, (batch, length), generator=torch.Generator().manual_seed(0))
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

    def step(core: str) -> None:
        model.set_attn_implementation(core)
        model(**inputs).last_hidden_state.square().mean().backward()
        model.zero_grad(set_to_none=True)

    return step


def peak(args: argparse.Namespace) -> None:
    """One step on `args.peak` in this (fresh) process: its peak memory above the built model, MiB."""
    step = stepper(student(args.model, args.length), args.batch, args.length)
    base = current_rss()
    step(args.peak)
    print(json.dumps({"peak_mib": (peak_rss() - base) / 2**20}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--output", type=Path)
    parser.add_argument("--peak", choices=CORES, help=argparse.SUPPRESS)  # the fresh process of one core
    args = parser.parse_args()
    reuse_freed_memory()  # what the CLI does first (cli/main.py)
    torch.set_num_threads(args.threads)
    if args.peak:
        return peak(args)
    step = stepper(student(args.model, args.length), args.batch, args.length)
    seconds: dict[str, list[float]] = {core: [] for core in CORES}
    for core in CORES:  # warm-up
        step(core)
    for round_ in range(args.rounds):
        for core in CORES if round_ % 2 == 0 else CORES[::-1]:
            start = time.perf_counter()
            step(core)
            seconds[core].append(time.perf_counter() - start)
    median = {core: statistics.median(times) for core, times in seconds.items()}
    peaks = {}
    for core in CORES:
        command = [sys.executable, __file__, args.model, "--batch", str(args.batch), "--length", str(args.length),
                   "--threads", str(args.threads), "--peak", core]  # fmt: skip
        peaks[core] = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)[
            "peak_mib"
        ]
    record = {
        "model": args.model, "batch": args.batch, "length": args.length, "threads": args.threads,
        "rounds": args.rounds, "seconds": seconds, "median_s": median,
        "split_over_sdpa_time": median["split"] / median["sdpa"], "peak_mib": peaks,
        "split_over_sdpa_peak": peaks["split"] / peaks["sdpa"],
        "torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "machine": platform.machine(), "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }  # fmt: skip
    text = json.dumps(record, indent=1)
    print(text)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
