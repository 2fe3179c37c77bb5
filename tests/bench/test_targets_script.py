"""scripts/cpu/targets.py: the project's acceptance targets, read from a benchmark JSON (no timing)."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest

from linformer_kit.bench import BenchmarkConfig, preset, write_report
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


# --- the local window's targets ("Local heads", item 3) ----------------------------------------------


def _window_record(
    pass_type: str, method: str, n: int, seconds: float, window: int | None = None, mem: int | None = None
) -> BenchmarkRecord:
    k = None if method.startswith("full") else 128
    case = Case(method, "layer", pass_type, n, k, 1, 768, 12, 1, 3072, "cpu", "float32", window)  # type: ignore[arg-type]
    return BenchmarkRecord(
        method, "layer", pass_type, n, k, 1, 768, 12, 1, 3072, "cpu", "float32", "x", 2, case.flops,
        local_window=window, time_median_s=seconds, time_q1_s=seconds, time_q3_s=seconds, samples=1,
        achieved_flops_per_s=case.flops / seconds, memory_delta_bytes=mem,
    )  # fmt: skip


@pytest.fixture
def window_result() -> BenchmarkResult:
    """The `window` preset's rows, by hand: forward meets every target, forward+backward none."""
    fwd, bwd = "forward", "forward+backward"
    records = [
        _window_record(fwd, "linformer-headwise", 4096, 1.0),  # no window
        _window_record(fwd, "linformer-headwise", 4096, 0.9, window=0),  # w=0: not a target row
        _window_record(fwd, "full-sdpa", 4096, 4.4),
        _window_record(bwd, "linformer-headwise", 4096, 2.0),
        _window_record(bwd, "full-sdpa", 4096, 5.0),
    ]
    for n in (1024, 4096, 16384):  # forward: memory linear in n; forward+backward: quadratic
        fwd_time, bwd_time = (1.1, 3.0) if n == 4096 else (n / 4096, n / 2048)
        records.append(_window_record(fwd, "linformer-headwise", n, fwd_time, window=16, mem=1000 * n))
        records.append(_window_record(bwd, "linformer-headwise", n, bwd_time, window=16, mem=n * n))
    config = dataclasses.asdict(preset("window"))
    environment = {"device_name": "cpu", "torch_version": "x", "threads": 2, "date_utc": "today"}
    return BenchmarkResult(config, environment, 1e11, records)


def test_window_targets_are_the_documented_ratios(window_result: BenchmarkResult) -> None:
    table = targets.format_window_targets(window_result)
    rows = {line.split(" | ")[0].removeprefix("| "): line for line in table.splitlines()[4:]}
    fwd, bwd = "layer headwise, forward", "layer headwise, forward+backward"
    # (a) window cost = time(w=16) / time(no window) - 1: 1.1 / 1.0 - 1 and 3.0 / 2.0 - 1
    assert rows[f"{fwd}: window cost w=16 (time / time without window - 1), n=4096"].endswith(
        "| <= 20% | +10% | met |"
    )
    assert rows[f"{bwd}: window cost w=16 (time / time without window - 1), n=4096"].endswith(
        "| <= 20% | +50% | NOT met |"
    )
    # (b) speed-up = time(full-sdpa) / time(w=16): 4.4 / 1.1 and 5.0 / 3.0
    assert rows[f"{fwd}: w=16 speed-up over full-sdpa, n=4096"].endswith("| >= 3x | 4.00x | met |")
    assert rows[f"{bwd}: w=16 speed-up over full-sdpa, n=4096"].endswith("| >= 3x | 1.67x | NOT met |")
    # (c) memory of w=16 over n = 1024 ... 16384: 1000 n (slope 1) and n^2 (slope 2, 16x per token)
    memory = "w=16 memory delta vs n, n=1024..16384 (log-log slope; per token 16384 / 1024)"
    assert rows[f"{fwd}: {memory}"].endswith("| 1.00 (1.00x) | met |")
    assert rows[f"{bwd}: {memory}"].endswith("| 2.00 (16.00x) | NOT met |")
    assert len(rows) == 6  # nothing for w=0, nothing from the projection's k=256 targets
    assert targets.format_targets(window_result) == table
    other_shape = dataclasses.replace(window_result, config={**window_result.config, "hidden_size": 512})
    assert targets.format_targets(other_shape) == ""


def test_memory_slope_fits_log_memory_on_log_n() -> None:
    linear = [_window_record("forward", "linformer-headwise", n, 1.0, 16, mem=5 * n + 0) for n in (512, 2048)]
    assert targets.memory_slope(linear) == pytest.approx((1.0, 1.0))
    # three points, n^1.5: slope 1.5; per token 8192 / 512 = 16^0.5 = 4
    grows = [
        _window_record("forward", "linformer-headwise", n, 1.0, 16, mem=int(n**1.5))
        for n in (512, 2048, 8192)
    ]
    slope, per_token = targets.memory_slope(grows)
    assert (slope, per_token) == (pytest.approx(1.5, abs=1e-3), pytest.approx(4.0, rel=1e-3))
    with pytest.raises(ValueError, match="two n or more"):
        targets.memory_slope(linear[:1])


def test_projection_targets_ignore_windowed_records(result: BenchmarkResult) -> None:
    # a w=16 record at the projection's (layer, headwise, n=4096, k=256) must not stand in for it
    windowed = _record("layer", "linformer-headwise", 4096, 100.0)
    windowed.local_window = 16
    mixed = dataclasses.replace(result, records=[*result.records, windowed])
    assert targets.format_projection_targets(mixed) == targets.format_projection_targets(result)
    assert (
        "| layer linformer-headwise vs PyPI linformer, n=4096 | >= 2x | 2.50x | met |"
        in targets.format_targets(mixed)
    )


def test_script_prints_the_window_targets_of_a_benchmark_json(
    window_result: BenchmarkResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    json_path = write_report(window_result, tmp_path, plot=False)["json"]
    assert targets.main([str(json_path)]) == 0
    out = capsys.readouterr().out
    assert "**Local window targets** (fp32, d=768, 12 heads, batch 1, k=128, w=16, n=4096" in out
    assert "| layer headwise, forward: w=16 speed-up over full-sdpa, n=4096 | >= 3x | 4.00x | met |" in out
