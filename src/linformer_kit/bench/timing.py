"""The timing harness: how a callable is timed, in rotating rounds beside the others of its group.

Scope layer and encoder (bench/measure.py) and scope "student" (bench/student_timing.py) both time
through it, and so does the reference GEMM (bench/matmul_reference.py):

    sample             seconds a call, `number` calls a sample (CUDA synchronised)
    Timed, warm_up     one callable warmed up, with its plan (calls a sample, rounds) and its samples
    time_in_rounds     the rotating rounds (A/B) over every Timed of a group
    summarise          median, quartiles, extremes of the samples
    predicted_seconds  a call's time at a larger size, from the same call at a smaller one (the time cap)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from linformer_kit.bench.config import BenchmarkConfig


@dataclass
class Timed:
    """One callable of a group under timing: its plan from `warm_up` and the samples taken so far."""

    step: Callable[[], object]
    number: int  # calls a timed sample
    rounds: int
    samples: list[float] = field(default_factory=list)  # seconds a call


def warm_up(step: Callable[[], object], device: str, config: BenchmarkConfig) -> Timed:
    """`step` warmed up (`config.warmup` calls) and planned: calls a sample to last `config.min_time_s`,
    and rounds cut so that warm-up and rounds fit `config.time_cap_s`. The first call is timed (the
    estimate the plan is made from); a call longer than a quarter of the cap dwarfs any one-time cost, so
    it is its own warm-up and is kept as the first sample."""
    first = sample(step, device, warmup=0, repeats=1, number=1)[0]
    kept = [first] if first > config.time_cap_s / 4 else []
    for _ in range(0 if kept else config.warmup - 1):
        step()
    number = max(1, math.ceil(config.min_time_s / max(first, 1e-9)))
    calls_left = int(config.time_cap_s / max(first, 1e-9)) - (1 if kept else config.warmup)
    rounds = max(1, min(config.rounds - len(kept), calls_left))
    return Timed(step, number, rounds, samples=kept)


def time_in_rounds(timed: list[Timed], device: str, after_round: Callable[[], object] = lambda: None) -> None:
    """One sample of each in every round, each for its own number of rounds (A/B alternation). The order
    rotates each round, so none always goes first and a slow moment of a shared machine hits them all;
    `after_round` runs after each round (measure.py samples its reference GEMM there)."""
    for r in range(max((t.rounds for t in timed), default=0)):
        for t in timed[r % len(timed) :] + timed[: r % len(timed)]:
            if r < t.rounds:
                t.samples += sample(t.step, device, warmup=0, repeats=1, number=t.number)
        after_round()


@dataclass(frozen=True)
class Summary:
    """The samples of one Timed, in seconds a call."""

    median: float
    q1: float  # the interquartile range
    q3: float
    min: float
    max: float
    samples: int


def summarise(samples: list[float]) -> Summary:
    """Median, inclusive quartiles and extremes of `samples` (a single sample is all five)."""
    s = sorted(samples)
    q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else (s[0], s[0], s[0])
    return Summary(statistics.median(s), q1, q3, s[0], s[-1], len(s))


def sample(fn: Callable[[], object], device: str, *, warmup: int, repeats: int, number: int) -> list[float]:
    """`repeats` samples of seconds per call, each timing `number` back-to-back calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        _sync(device)
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        _sync(device)
        times.append((time.perf_counter() - t0) / number)
    return times


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def predicted_seconds(seconds: float, size_before: float, size: float, exponent: float = 1.0) -> float:
    """The seconds of a call of `size`, from `seconds` of the same call at `size_before`, time growing as
    size ** exponent. Here size is a case's FLOPs (time in proportion to them: exponent 1); scope "student"
    gives n and how the model grows in n (1 where it is linear, 2 where it attends fully)."""
    return seconds * (size / size_before) ** exponent
