"""The matmul rate a run's achieved FLOP/s are compared with: the reference GEMM of this machine.

A (m x m) @ (m x m) GEMM timed in the same run (`Gemm`), sampled once per round between the cases of
every group, so a record's "% of matmul" compares it with the machine state of its own rounds;
`MatmulReference` picks the GEMMs a run times (on CPU in half precision, fp32 beside the run's dtype)
and sizes them to fit the time cap. Its own room apart from bench/measure.py, which runs the sweep:
this is the yardstick, timed by the same harness (bench/timing.py) as the cases it bounds.
"""

from __future__ import annotations

import statistics

import torch

from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.timing import sample


def matmul_rate(size: int, device: str, dtype: torch.dtype, repeats: int = 5) -> float:
    """FLOP/s of a (size x size) @ (size x size) GEMM: the machine's practical peak for this dtype."""
    return Gemm(size, device, dtype, repeats).rate()


class Gemm:
    """One reference GEMM. It is also sampled once per round of every group, alternating with the
    cases, so its rate sees the same machine state as they do: over a case's own rounds (the rate
    its record is compared with) or over the whole run (the run's rate)."""

    def __init__(self, size: int, device: str, dtype: torch.dtype, repeats: int = 5) -> None:
        self.a = torch.randn(size, size, device=device, dtype=dtype)
        self.b = torch.randn(size, size, device=device, dtype=dtype)
        self.size, self.device = size, device
        self.samples = sample(self.step, device, warmup=2, repeats=repeats, number=1)

    def step(self) -> None:
        torch.matmul(self.a, self.b)

    def sample(self) -> float:
        seconds = sample(self.step, self.device, warmup=0, repeats=1, number=1)[0]
        self.samples.append(seconds)
        return seconds

    def rate(self, samples: list[float] | None = None) -> float:
        """FLOP/s at the median of `samples` (default: every sample of the run)."""
        return 2 * self.size**3 / statistics.median(self.samples if samples is None else samples)


class MatmulReference:
    """The matmul rate a run's achieved FLOP/s are compared with: its fastest reference GEMM.

    On a CPU without fast half-precision kernels (no AMX / AVX512-BF16) a bf16 or fp16 GEMM runs
    20-30x slower than fp32 (AMD EPYC, torch 2.13: 1.3 and 0.9 against 31 GFLOP/s per thread), while
    the cases run much of their work in fp32 (upcasting kernels, softmax). A reference in the run's
    dtype alone is then beaten by the cases it should bound ("% of matmul" up to 885%) and costs
    minutes to measure. So on CPU a half dtype is measured next to fp32 and the faster GEMM is the
    reference: achieved / reference <= 1 by construction, up to timing noise. And every GEMM is the
    largest of matmul_size, matmul_size/2, ... whose call fits `time_cap_s / 8` (shared among the
    GEMMs; timed on a probe of at most 256), so calibration stays inside the time cap.
    """

    def __init__(self, config: BenchmarkConfig) -> None:
        dtypes = [config.dtype] + (
            ["float32"] if config.device == "cpu" and config.dtype != "float32" else []
        )
        budget = config.time_cap_s / (8 * len(dtypes))  # 2 warm-up + 5 timed calls each: within the cap
        self.gemms = []
        for name in dtypes:
            dtype = getattr(torch, name)
            size = gemm_size(config.matmul_size, config.device, dtype, budget)
            self.gemms.append(Gemm(size, config.device, dtype))

    def sample(self) -> list[float]:
        """One sample of every GEMM: seconds per call, in the order of `self.gemms`."""
        return [gemm.sample() for gemm in self.gemms]

    def rate_of(self, rounds: list[list[float]]) -> float:
        """The fastest GEMM's rate over the samples of `rounds` (each a return value of `sample`)."""
        return max(gemm.rate([r[i] for r in rounds]) for i, gemm in enumerate(self.gemms))

    def fastest(self) -> Gemm:
        return max(self.gemms, key=lambda gemm: gemm.rate())

    def rate(self) -> float:
        return self.fastest().rate()

    def describe(self) -> str:
        gemm = self.fastest()
        return f"{str(gemm.a.dtype).removeprefix('torch.')} {gemm.size}^3 GEMM"


def gemm_size(largest: int, device: str, dtype: torch.dtype, budget_s: float) -> int:
    """The largest of largest, largest/2, ... (down to a probe of <= 256) whose GEMM call fits `budget_s`."""
    probe = Gemm(min(256, largest), device, dtype, repeats=1)
    seconds = statistics.median(probe.samples)
    size = largest
    while size > probe.size and seconds * (size / probe.size) ** 3 > budget_s:
        size //= 2
    return max(size, probe.size)
