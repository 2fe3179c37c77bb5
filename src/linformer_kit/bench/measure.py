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
bench/timing.py. The reference GEMM is bench/matmul_reference.py, the skips bench/skips.py; this
module runs the sweep and records it (`environment`: torch, Python, platform, device and threads).
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time
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
from linformer_kit.bench.matmul_reference import MatmulReference
from linformer_kit.bench.skips import case_key, skip_reason, structural_skip
from linformer_kit.bench.timing import Summary, Timed, summarise, time_in_rounds, warm_up

if TYPE_CHECKING:
    from tqdm.auto import tqdm


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
    matmul_reference: str = ""  # which GEMM gave that rate ("float32 2048^3 GEMM"); see MatmulReference

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
    gemm = MatmulReference(config)
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
    cases: list[Case], config: BenchmarkConfig, gemm: MatmulReference, history: dict, bar: tqdm
) -> list[BenchmarkRecord]:
    records, rate = [], gemm.rate()
    live: list[tuple[Case, BenchmarkRecord, Timed]] = []
    for case in cases:
        record = _new_record(case, config)
        records.append(record)
        structural = structural_skip(case)  # k > n, peer missing: says nothing about larger n
        record.skipped = structural or skip_reason(case, config, rate, history)
        if record.skipped is None:
            try:
                live.append((case, record, warm_up(build_step(case), case.device, config)))
            except (RuntimeError, MemoryError, ImportError, ValueError) as err:
                record.skipped = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:120]}"
        if record.skipped is not None and structural is None:
            history[case_key(case)] = (case.n, None)
            bar.update(1)

    reference: list[list[float]] = []  # GEMM samples of each round, taken between the rounds
    time_in_rounds([timed for _, _, timed in live], config.device, lambda: reference.append(gemm.sample()))

    for case, record, timed in live:
        _fill_times(record, case, summarise(timed.samples))
        record.matmul_flops_per_s = gemm.rate_of(reference[: timed.rounds])  # the rounds it was timed in
        history[case_key(case)] = (case.n, record.time_median_s)
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
        # the instruction set PyTorch's CPU kernels run at; "auto" picks the window core by it (nn/cores.py)
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "date_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _progress_bar(total: int, enabled: bool) -> tqdm:
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not enabled, unit="case", leave=False)
