"""scripts/cpu/targets.py: the project's acceptance targets, read from a benchmark JSON (no timing)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from linformer_kit.bench import BenchmarkConfig, write_report
from linformer_kit.bench.cases import Case
from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult

SCRIPT = Path(__file__).parents[2] / "scripts" / "cpu" / "targets.py"
_spec = importlib.util.spec_from_file_location("targets_script", SCRIPT)
targets = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(targets)


def _record(scope: str, method: str, n: int, seconds: float, mem: int | None = None) -> BenchmarkRecord:
    k = None if method.startswith("full") else 256
    layers = 12 if scope == "encoder" else 1
    case = Case(method, scope, "forward", n, k, 1, 768, 12, layers, 3072, "cpu", "float32")  # type: ignore[arg-type]
    return BenchmarkRecord(
        method, scope, "forward", n, k, 1, 768, 12, layers, 3072, "cpu", "float32", "x", 2, case.flops,
        time_median_s=seconds, time_q1_s=seconds, time_q3_s=seconds, samples=1,
        achieved_flops_per_s=case.flops / seconds, memory_delta_bytes=mem,
    )  # fmt: skip


@pytest.fixture
def result() -> BenchmarkResult:
    layer = _record("layer", "linformer-headwise", 4096, 1.0)
    layer.matmul_flops_per_s = layer.achieved_flops_per_s / 0.8  # 80% of the GEMM of its own rounds: met
    records = [
        layer,
        _record("layer", "peer-linformer", 4096, 2.5),  # 2.5x: met
        _record("encoder", "linformer-headwise", 4096, 1.0, mem=100),
        _record("encoder", "full-sdpa", 4096, 1.0),  # 1x against a FLOP limit near 2x: not met
        _record("encoder", "linformer-headwise", 16384, 4.0, mem=500),  # memory grows 5x: not met
    ]
    run_rate = layer.achieved_flops_per_s / 0.5  # the run's rate would say 50%: the record's own wins
    environment = {"device_name": "cpu", "torch_version": "x", "threads": 2, "date_utc": "today"}
    return BenchmarkResult(dataclasses.asdict(BenchmarkConfig()), environment, run_rate, records)


def test_target_table_checks_each_target_against_its_goal(result: BenchmarkResult) -> None:
    table = targets.format_targets(result)
    assert "| layer linformer-headwise vs PyPI linformer, n=4096 | >= 2x | 2.50x | met |" in table
    assert "| layer linformer-headwise FLOP/s / GEMM rate, n=4096 | >= 70% | 80% | met |" in table
    assert "encoder headwise speed-up over SDPA, n=4096" in table
    assert "| 1.00x | NOT met |" in table
    assert "| encoder headwise memory delta 16384 / 4096 | <= 4.5 | 5.00 | NOT met |" in table
    other_dtype = dataclasses.replace(result, config={**result.config, "dtype": "bfloat16"})
    assert targets.format_targets(other_dtype) == ""


def test_script_prints_the_table_of_a_benchmark_json(
    result: BenchmarkResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path = write_report(result, tmp_path, plot=False)["json"]
    assert targets.main([str(json_path)]) == 0
    assert (
        "| layer linformer-headwise FLOP/s / GEMM rate, n=4096 | >= 70% | 80% | met |"
        in capsys.readouterr().out
    )
