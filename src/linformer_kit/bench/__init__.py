"""Speed and memory of Linformer vs full attention (the paper's Table 3) on your hardware.

    from linformer_kit.bench import preset, run_benchmark, write_report
    result = run_benchmark(preset("quick"))          # records: time, memory, FLOPs, FLOP/s
    write_report(result, "runs/benchmark")           # benchmark.json, benchmark.md, cpu_fp32.png

Measuring (`measure`, `memory`, `cases`, `flops`) is apart from formatting (`report`) and plotting (`plot`).
"""

from typing import TYPE_CHECKING

from linformer_kit import lazy_attributes
from linformer_kit.bench.config import (
    METHODS,
    PASS_TYPES,
    PRESETS,
    SCOPES,
    BenchmarkConfig,
    Method,
    PassType,
    Preset,
    Scope,
    preset,
)

__all__ = [
    "METHODS",
    "PASS_TYPES",
    "PRESETS",
    "SCOPES",
    "BenchmarkConfig",
    "BenchmarkRecord",
    "BenchmarkResult",
    "Method",
    "PassType",
    "Preset",
    "Scope",
    "attention_flops",
    "case_flops",
    "format_report",
    "load_result",
    "matmul_rate",
    "preset",
    "run_benchmark",
    "write_report",
]

# name -> module: loaded on first use, so `linformer benchmark --help` (which needs only the config
# above) does not import torch
__getattr__ = lazy_attributes(__name__, {
    "attention_flops": "flops", "case_flops": "flops",
    "BenchmarkRecord": "measure", "BenchmarkResult": "measure", "matmul_rate": "measure", "run_benchmark": "measure",
    "format_report": "report", "load_result": "report", "write_report": "report",
})  # fmt: skip


if TYPE_CHECKING:
    from linformer_kit.bench.flops import attention_flops, case_flops
    from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult, matmul_rate, run_benchmark
    from linformer_kit.bench.report import format_report, load_result, write_report
