"""A/B of one long-stage step: one backward of L_long (`long_loss`, the Trainer's step before) against one
backward a term (`long_terms`, what `LongTrainer.training_step` does now), on a 512 student extended to
`--length` as the long stage extends it, with the teacher's window targets, the halves and the short term.

    time   alternating steps of the two in one process (`--rounds` each, after a warm-up of each), median
    memory each variant alone in its own process (`--steps` steps; VmHWM), the peak resident set

Prints the ratios (terms / one) and writes them to `--json`. Not run in tests: needs the models.

    python scripts/cpu/long_step_ab.py --student runs/distill/minilm-k128-w64-g1 \\
        --teacher runs/models/all-MiniLM-L6-v2 --json docs/reproduction/long-minilm/long-step-ab.json
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import torch

from linformer_kit.bench.memory import peak_rss
from linformer_kit.models import LinformerModel
from linformer_kit.train.distill import DistillConfig
from linformer_kit.train.distill.long import long_student
from linformer_kit.train.distill.long_losses import long_loss, long_terms
from linformer_kit.train.distill.trainer import load_teacher

V = TypeVar("V")  # a variant's name


def _setup(args: argparse.Namespace):
    config = DistillConfig(
        teacher=args.teacher, train=["unused"], output_dir=tempfile.mkdtemp(), projected_length=128,
        local_window=64, global_tokens=1, seq_len=512, exact_length=512, long_length=args.length,
        long_batch_size=args.batch, contrastive_weight=1.0, use_cpu=True, report_to=[],
        long_tune="tune", short_weight=1.0,  # the defaults when it ran
    )  # fmt: skip
    teacher = load_teacher(args.teacher)
    student = long_student(LinformerModel.from_pretrained(args.student), config, teacher)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 29000, (args.batch, args.length), generator=g)
    short = torch.randint(1000, 29000, (args.batch, 512), generator=g)
    ids[:, 0], ids[:, -1], short[:, 0], short[:, -1] = 101, 102, 101, 102  # [CLS] ... [SEP]
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "short_input_ids": short,
              "short_attention_mask": torch.ones_like(short)}  # fmt: skip
    return config, teacher, student, inputs


def _step(setup, variant: str) -> float:
    config, teacher, student, inputs = setup
    student.zero_grad(set_to_none=True)
    start = time.perf_counter()
    if variant == "one":
        long_loss(student, teacher, inputs, config).backward()
    else:
        for term in long_terms(student, teacher, inputs, config):
            term.backward()
    return time.perf_counter() - start


def alternated(
    step: Callable[[V], float], variants: Sequence[V], rounds: int, label: str = ""
) -> dict[V, list[float]]:
    """Seconds of `step(variant)` for each variant: one warm-up each, then `rounds` rounds, the order reversed
    every other round, so neighbouring samples of two variants saw the same machine."""
    times: dict[V, list[float]] = {variant: [] for variant in variants}
    for variant in variants:  # warm-up
        step(variant)
    for r in range(rounds):
        for variant in variants if r % 2 == 0 else variants[::-1]:
            times[variant].append(step(variant))
            print(f"{label}round {r}: {variant} {times[variant][-1]:.1f} s", flush=True)
    return times


def peak_alone(script: str, arguments: list[str], label: object) -> float:
    """The peak RSS (GB) of `script` run with `arguments` in a process of its own, which prints it last as
    JSON ({"peak_rss_gb": ...})."""
    out = subprocess.run(
        [sys.executable, script, *arguments], capture_output=True, text=True, check=True
    ).stdout
    peak = json.loads(out.strip().splitlines()[-1])["peak_rss_gb"]
    print(f"{label}: peak RSS {peak:.2f} GB", flush=True)
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", required=True)
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2, help="steps of each variant's memory process")
    parser.add_argument("--variant", choices=("one", "terms"), help="(internal) one variant's peak RSS alone")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.manual_seed(0)
    setup = _setup(args)
    if args.variant:  # the memory process: this variant alone
        for _ in range(args.steps):
            _step(setup, args.variant)
        print(json.dumps({"peak_rss_gb": peak_rss() / 1e9}))
        return
    times = alternated(functools.partial(_step, setup), ("one", "terms"), args.rounds)
    del setup
    memory = ["--student", args.student, "--teacher", args.teacher, "--length", str(args.length), "--batch",
              str(args.batch), "--steps", str(args.steps), "--variant"]  # fmt: skip
    peaks = {variant: peak_alone(__file__, [*memory, variant], variant) for variant in ("one", "terms")}
    median = {v: statistics.median(t) for v, t in times.items()}
    result = {
        "what": "one long-stage step: one backward of L_long ('one') against one backward a term ('terms'); "
        f"the 512 student extended to {args.length}, batch {args.batch}, window + halves + short terms",
        "seconds": times, "median_s": median, "time_ratio_terms_over_one": median["terms"] / median["one"],
        "peak_rss_gb": peaks, "peak_ratio_terms_over_one": peaks["terms"] / peaks["one"],
        "threads": torch.get_num_threads(),
    }  # fmt: skip
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
