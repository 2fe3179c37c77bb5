"""Speed and memory of Linformer vs full attention (the paper's Table 3) on your hardware.

    from linformer_kit.bench import preset, run_benchmark, write_report
    result = run_benchmark(preset("quick"))          # records: time, memory, FLOPs, FLOP/s
    write_report(result, "runs/benchmark")           # benchmark.json, benchmark.md, cpu_fp32.png

    config = preset("student").replace(original="runs/models/all-MiniLM-L6-v2",
                                       students=("runs/distill/minilm-k128-w64-g1",), output_dir="runs/student")
    write_student_report(run_student_benchmark(config), config.output_dir)   # student.json, student.md

Measuring (`measure`, `timing`, `matmul_reference`, `skips`, `memory`, `cases`, `flops`) is apart from
formatting (`report`) and plotting (`plot`);
scope "student" (saved students against their original) is `student` (the run; its pieces `student_config`,
`student_inputs`, `student_runtimes`, `student_timing`, `student_memory`, `student_encode`, `student_records`) and
`student_report`; it times through `timing`'s harness.
"""

from typing import TYPE_CHECKING

from linformer_kit import lazy_attributes
from linformer_kit.bench.config import (
    METHODS,
    PASS_TYPES,
    RUNTIMES,
    SCOPES,
    BenchmarkConfig,
    Method,
    PassType,
    Runtime,
    Scope,
)
from linformer_kit.bench.presets import PRESETS, Preset, preset

__all__ = [
    "METHODS",
    "PASS_TYPES",
    "PRESETS",
    "RUNTIMES",
    "SCOPES",
    "BenchmarkConfig",
    "BenchmarkRecord",
    "BenchmarkResult",
    "Method",
    "PassType",
    "Preset",
    "Runtime",
    "Scope",
    "StudentRecord",
    "StudentResult",
    "attention_flops",
    "case_flops",
    "format_report",
    "load_result",
    "matmul_rate",
    "preset",
    "run_benchmark",
    "run_student_benchmark",
    "student_ratios",
    "write_report",
    "write_student_report",
]

# name -> module: loaded on first use, so `linformer benchmark --help` (which needs only the config
# above) does not import torch
__getattr__ = lazy_attributes(__name__, {
    "attention_flops": "flops", "case_flops": "flops",
    "BenchmarkRecord": "measure", "BenchmarkResult": "measure", "matmul_rate": "matmul_reference", "run_benchmark": "measure",
    "format_report": "report", "load_result": "report", "write_report": "report",
    "StudentRecord": "student", "StudentResult": "student", "run_student_benchmark": "student",
    "student_ratios": "student_report", "write_student_report": "student_report",
})  # fmt: skip


if TYPE_CHECKING:
    from linformer_kit.bench.flops import attention_flops, case_flops
    from linformer_kit.bench.matmul_reference import matmul_rate
    from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult, run_benchmark
    from linformer_kit.bench.report import format_report, load_result, write_report
    from linformer_kit.bench.student import StudentRecord, StudentResult, run_student_benchmark
    from linformer_kit.bench.student_report import student_ratios, write_student_report
