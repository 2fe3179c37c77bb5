"""Run a sweep and return records: `run_benchmark(BenchmarkConfig(...)) -> BenchmarkResult`.

How it measures (DESIGN.md, Benchmarks):
- the fp32/bf16 matmul rate of this machine: a (m x m) @ (m x m) GEMM timed in the same run, once per
  round between the cases; each record's "% of matmul" uses the median of the GEMM samples of the
  rounds in which that case was timed (the machine state of its own time), and the median over the
  whole run is the run's rate (the report's header);
- cases are grouped by (scope, pass, n); every method, k and window w of a group (w: Linformer methods
  only, each measured at every w of `local_windows`) is built, warmed up, and then
  timed in rounds that visit the cases round-robin (A/B alternation), the order rotating each round,
  so slow drift of a shared machine hits every method alike;
- a timed sample repeats a fast call until it lasts `min_time_s` and records the time per call;
  CUDA is synchronised around every sample;
- a case is skipped, with the reason in its record, when its predicted call time exceeds the time cap
  (predicted from the same case at the previous n scaled by the FLOP ratio, or from FLOPs at a quarter
  of the matmul rate), when the same case was skipped at a smaller n, or when its predicted memory
  exceeds the memory available; slow cases get fewer rounds so that warm-up + rounds fit the cap,
  and a call longer than a quarter of the cap is its own warm-up (kept as the first sample);
- peak memory: see `linformer_kit.bench.memory`.

The timing harness is public, and scope "student" (bench/student_timing.py) times through it too:

    sample             seconds a call, `number` calls a sample (CUDA synchronised)
    Timed, warm_up     one callable warmed up, with its plan (calls a sample, rounds) and its samples
    time_in_rounds     the rotating rounds (A/B) over every Timed of a group
    summarise          median, quartiles, extremes of the samples
    predicted_seconds  a call's time at a larger size, from the same call at a smaller one (the time cap)
    environment        torch, Python, platform, device and threads of the run
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from linformer_kit.bench import memory
from linformer_kit.bench.cases import Case, build_step
from linformer_kit.bench.config import (
    FULL_METHODS,
    LINFORMER_METHODS,
    PEER_METHODS,
    BenchmarkConfig,
    PassType,
    Scope,
)
from linformer_kit.nn.local import MIN_BLOCK

if TYPE_CHECKING:
    from tqdm.auto import tqdm

PEER_MODULES = {"peer-linformer": "linformer", "peer-linformer-pytorch": "linformer_pytorch"}


@dataclass
class BenchmarkRecord:
    """One measured (or skipped) case. Times are seconds per call; memory in bytes."""

    method: str
    scope: str
    pass_type: str
    n: int
    k: int | None
    batch_size: int
    hidden_size: int
    num_heads: int
    num_layers: int  # 1 at layer scope
    intermediate_size: int  # FFN width (encoder scope)
    device: str
    dtype: str
    torch_version: str
    threads: int
    flops: int  # analytic FLOPs of one call (linformer_kit.bench.flops)
    local_window: int | None = None  # the Linformer method's window w (None: no window, or not a Linformer)
    time_median_s: float | None = None
    time_q1_s: float | None = None  # interquartile range of the samples
    time_q3_s: float | None = None
    time_min_s: float | None = None
    time_max_s: float | None = None
    samples: int = 0
    achieved_flops_per_s: float | None = None  # flops / time_median_s
    tokens_per_s: float | None = None  # batch_size * n / time_median_s (None: not measured)
    matmul_flops_per_s: float | None = None  # reference GEMM rate sampled in this case's rounds
    peak_memory_bytes: int | None = None
    memory_delta_bytes: int | None = None  # peak minus memory held after building module and input
    skipped: str | None = None  # why the case was not measured (None = measured)


@dataclass
class BenchmarkResult:
    config: dict[str, object]
    environment: dict[str, object]
    matmul_flops_per_s: float  # rate of the reference GEMM over the whole run (each record has its own)
    records: list[BenchmarkRecord] = field(default_factory=list)
    elapsed_s: float = 0.0
    matmul_reference: str = ""  # which GEMM gave that rate ("float32 2048^3 GEMM"); see _Reference

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def run_benchmark(config: BenchmarkConfig, *, progress: bool = True) -> BenchmarkResult:
    """Measure every case of `config`; never raises for one failing case (it is recorded as skipped)."""
    if "student" in config.scopes:
        raise ValueError("scopes ('student',) is measured by linformer_kit.bench.run_student_benchmark")
    start = time.perf_counter()
    _check_device(config)
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    machine = environment(config)
    gemm = _Reference(config)
    rate = gemm.rate()  # first estimate (for predictions); refined by samples taken between the cases
    result = BenchmarkResult(dataclasses.asdict(config), machine, rate)

    groups = [(s, p, n) for s in config.scopes for p in config.passes for n in sorted(config.seq_lens)]
    total = sum(len(_group_cases(config, s, p, n)) for s, p, n in groups)
    bar = _progress_bar(total, progress)
    history: dict[tuple, tuple[int, float | None]] = {}  # case key -> (n, seconds per call or None=skipped)
    for scope, pass_type, n in groups:
        cases = _group_cases(config, scope, pass_type, n)
        bar.set_description(f"{scope} {pass_type} n={n}")
        result.records += _measure_group(cases, config, gemm, history, bar)
    bar.close()
    result.matmul_flops_per_s = gemm.rate()
    result.matmul_reference = gemm.describe()
    result.elapsed_s = time.perf_counter() - start
    return result


def matmul_rate(size: int, device: str, dtype: torch.dtype, repeats: int = 5) -> float:
    """FLOP/s of a (size x size) @ (size x size) GEMM: the machine's practical peak for this dtype."""
    return _Gemm(size, device, dtype, repeats).rate()


class _Gemm:
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


class _Reference:
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
            self.gemms.append(_Gemm(size, config.device, dtype))

    def sample(self) -> list[float]:
        """One sample of every GEMM: seconds per call, in the order of `self.gemms`."""
        return [gemm.sample() for gemm in self.gemms]

    def rate_of(self, rounds: list[list[float]]) -> float:
        """The fastest GEMM's rate over the samples of `rounds` (each a return value of `sample`)."""
        return max(gemm.rate([r[i] for r in rounds]) for i, gemm in enumerate(self.gemms))

    def fastest(self) -> _Gemm:
        return max(self.gemms, key=lambda gemm: gemm.rate())

    def rate(self) -> float:
        return self.fastest().rate()

    def describe(self) -> str:
        gemm = self.fastest()
        return f"{str(gemm.a.dtype).removeprefix('torch.')} {gemm.size}^3 GEMM"


def gemm_size(largest: int, device: str, dtype: torch.dtype, budget_s: float) -> int:
    """The largest of largest, largest/2, ... (down to a probe of <= 256) whose GEMM call fits `budget_s`."""
    probe = _Gemm(min(256, largest), device, dtype, repeats=1)
    seconds = statistics.median(probe.samples)
    size = largest
    while size > probe.size and seconds * (size / probe.size) ** 3 > budget_s:
        size //= 2
    return max(size, probe.size)


# --- one group: every method and k at one (scope, pass, n), timed round-robin ---------------------


def _group_cases(config: BenchmarkConfig, scope: Scope, pass_type: PassType, n: int) -> list[Case]:
    cases = []
    for method in config.methods:
        if scope == "encoder" and method in PEER_METHODS:
            continue  # peers are layers; their encoders are not the benchmark's encoder shape
        windows = config.local_windows if method in LINFORMER_METHODS else (None,)
        for k in [None] if method in FULL_METHODS else config.projected_lengths:
            for w in windows:
                cases.append(
                    Case(
                        method,
                        scope,
                        pass_type,
                        n,
                        k,
                        config.batch_size,
                        config.hidden_size,
                        config.num_heads,
                        config.num_layers if scope == "encoder" else 1,
                        config.intermediate_size,
                        config.device,
                        config.dtype,
                        local_window=w,
                    )
                )
    return cases


def _measure_group(
    cases: list[Case], config: BenchmarkConfig, gemm: _Reference, history: dict, bar: tqdm
) -> list[BenchmarkRecord]:
    records, rate = [], gemm.rate()
    live: list[tuple[Case, BenchmarkRecord, Timed]] = []
    for case in cases:
        record = _new_record(case, config)
        records.append(record)
        structural = _structural_skip(case)  # k > n, peer missing: says nothing about larger n
        record.skipped = structural or _skip_reason(case, config, rate, history)
        if record.skipped is None:
            try:
                live.append((case, record, warm_up(build_step(case), case.device, config)))
            except (RuntimeError, MemoryError, ImportError, ValueError) as err:
                record.skipped = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
        if record.skipped is not None and structural is None:
            history[_key(case)] = (case.n, None)
            bar.update(1)

    reference: list[list[float]] = []  # GEMM samples of each round, taken between the rounds
    time_in_rounds([timed for _, _, timed in live], config.device, lambda: reference.append(gemm.sample()))

    for case, record, timed in live:
        _fill_times(record, case, summarise(timed.samples))
        record.matmul_flops_per_s = gemm.rate_of(reference[: timed.rounds])  # the rounds it was timed in
        history[_key(case)] = (case.n, record.time_median_s)
        if config.measure_memory:
            _measure_memory(case, record, timed, config)
        bar.update(1)
    return records


def _fill_times(record: BenchmarkRecord, case: Case, times: Summary) -> None:
    record.time_median_s, record.time_q1_s, record.time_q3_s = times.median, times.q1, times.q3
    record.time_min_s, record.time_max_s, record.samples = times.min, times.max, times.samples
    record.achieved_flops_per_s = case.flops / times.median
    record.tokens_per_s = case.batch_size * case.n / times.median


def _measure_memory(case: Case, record: BenchmarkRecord, timed: Timed, config: BenchmarkConfig) -> None:
    try:
        if config.device == "cuda":
            peak = memory.measure_cuda(timed.step, config.device)
        else:
            timeout = 60.0 + 3 * (record.time_median_s or 0.0)
            peak = memory.measure_cpu(case, record.threads, timeout)
    except (RuntimeError, MemoryError) as err:
        record.skipped = f"memory not measured: {err}"
        return
    record.peak_memory_bytes, record.memory_delta_bytes = peak


# --- the timing harness (scope "student" times through it too) ------------------------------------


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


# --- skipping -----------------------------------------------------------------------------------


def _key(case: Case) -> tuple:
    return (case.method, case.k, case.local_window, case.scope, case.pass_type)


def _structural_skip(case: Case) -> str | None:
    """Cases that cannot run at all. Unlike a time or memory skip, they do not skip larger n."""
    if case.k is not None and case.k > case.n:
        return f"k={case.k} > n={case.n}"
    if case.method in PEER_MODULES and not _importable(PEER_MODULES[case.method]):
        return f"{PEER_MODULES[case.method]} not installed (pip install 'linformer-kit[peers]')"
    return None


def _skip_reason(case: Case, config: BenchmarkConfig, rate: float, history: dict) -> str | None:
    previous_n, previous_time = history.get(_key(case), (None, None))
    if previous_n is not None and previous_time is None:
        return f"skipped at n={previous_n}"
    if previous_time is not None:
        previous = dataclasses.replace(case, n=previous_n)
        predicted = predicted_seconds(previous_time, previous.flops, case.flops)
    else:
        predicted = case.flops / (0.25 * rate)
    if predicted > config.time_cap_s:
        return f"predicted {predicted:.0f} s per call > time cap {config.time_cap_s:.0f} s"
    need, available = _predicted_memory(case), _available_memory(case.device)
    if need > 0.8 * available:
        return f"predicted {need / 2**30:.1f} GiB > 80% of {available / 2**30:.1f} GiB available"
    return None


def _predicted_memory(case: Case) -> int:
    """Bytes of the dominant transient tensors: attention matrices (eager) plus activations."""
    b, n, D, elem = (
        case.batch_size,
        case.n,
        case.hidden_size,
        torch.finfo(getattr(torch, case.dtype)).bits // 8,
    )
    backward = case.pass_type != "forward"
    kept = case.num_layers if backward else 1  # activations kept for backward
    activations = 8 * b * n * (D + case.intermediate_size) * elem * kept
    if case.method in ("full-eager", "peer-linformer-pytorch", "peer-linformer"):
        width = n if case.method == "full-eager" else (case.k or n)
        scores = 2 * b * case.num_heads * n * width * 4  # fp32 scores + softmax
        return activations + scores * (2 * kept if backward else 1)
    if case.local_window is not None:  # nn/local.py: fp32 scores and weights over k + B + 2w keys per query
        w = min(case.local_window, n)
        width = (case.k or 0) + max(MIN_BLOCK, w) + 2 * w
        scores = 2 * b * case.num_heads * n * width * 4
        return activations + scores * (2 * kept if backward else 1)
    return activations


def _available_memory(device: str) -> int:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()  # ours to reuse, not "used"
        return int(free + cached)
    import psutil

    return int(psutil.virtual_memory().available)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# --- bookkeeping --------------------------------------------------------------------------------


def _new_record(case: Case, config: BenchmarkConfig) -> BenchmarkRecord:
    return BenchmarkRecord(
        method=case.method, scope=case.scope, pass_type=case.pass_type, n=case.n, k=case.k,
        local_window=case.local_window,
        batch_size=case.batch_size, hidden_size=case.hidden_size, num_heads=case.num_heads,
        num_layers=case.num_layers, intermediate_size=case.intermediate_size, device=case.device, dtype=case.dtype, torch_version=torch.__version__,
        threads=torch.get_num_threads(), flops=case.flops,
    )  # fmt: skip


def _check_device(config: BenchmarkConfig) -> None:
    if config.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' was requested but torch.cuda.is_available() is False")


def environment(config: BenchmarkConfig) -> dict[str, object]:
    """What a result records of the machine and the software it ran on (scope "student" adds to it)."""
    device_name = torch.cuda.get_device_name() if config.device == "cuda" else platform.processor() or "cpu"
    return {
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device_name": device_name,
        "cpu_count": os.cpu_count(),
        "threads": torch.get_num_threads(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _progress_bar(total: int, enabled: bool) -> tqdm:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, unit="case", leave=False)
