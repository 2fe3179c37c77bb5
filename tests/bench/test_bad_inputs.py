"""Bad input to `linformer benchmark` (issue-13 sweep), and a reference GEMM that bounds the cases.

CLI cases must exit non-zero naming the bad value before anything is measured: `run_benchmark` is
replaced by a failure, so a case that only fails after measuring counts as not handled.
"""

from __future__ import annotations

import math

import pytest
import torch

import linformer_kit.bench as bench
import linformer_kit.bench.matmul_reference as matmul_reference
import linformer_kit.bench.measure as measure
from linformer_kit.bench import BenchmarkConfig
from tests.bad_input_checks import WorkStarted, check_cli, check_handled, check_raises


def _argv(out, *extra: object) -> list:
    return ["benchmark", "--output-dir", out, "--seq-lens", "16", "--projected-lengths", "8", "--methods",
            "linformer-headwise", "--hidden-size", "16", "--num-heads", "2", "--rounds", "1", "--time-cap", "5",
            "--no-memory", "--no-progress", *extra]  # fmt: skip


@pytest.fixture
def before_measuring(monkeypatch: pytest.MonkeyPatch) -> None:
    def measured(*args, **kwargs):
        raise WorkStarted("the benchmark ran before the bad input was reported")

    monkeypatch.setattr(bench, "run_benchmark", measured)


OPTIONS = {
    "seq-lens 0": (["--seq-lens", "0"], r"seq_lens.*\b0\b"),
    "seq-lens -1": (["--seq-lens", "-1"], r"seq_lens.*-1"),
    "projected-lengths 0": (["--projected-lengths", "0"], r"projected_lengths.*\b0\b"),
    "projected-lengths -1": (["--projected-lengths", "-1"], r"projected_lengths.*-1"),
    "k above every n": (["--projected-lengths", "64"], r"projected_lengths.*64.*seq_len 16"),
    "batch-size 0": (["--batch-size", "0"], r"batch_size.*\b0\b"),
    "batch-size -1": (["--batch-size", "-1"], r"batch_size.*-1"),
    "hidden-size 0": (["--hidden-size", "0"], r"hidden_size.*\b0\b"),
    "hidden-size -16": (["--hidden-size", "-16"], r"hidden_size.*-16"),
    "hidden-size not divisible": (["--hidden-size", "15"], r"hidden_size=15.*num_heads=2"),
    "num-heads 0": (["--num-heads", "0"], r"num_heads.*\b0\b"),
    "num-layers 0": (["--num-layers", "0"], r"num_layers.*\b0\b"),
    "threads 0": (["--threads", "0"], r"threads.*\b0\b"),
    "threads -1": (["--threads", "-1"], r"threads.*-1"),
    "rounds 0": (["--rounds", "0"], r"rounds.*\b0\b"),
    "time-cap 0": (["--time-cap", "0"], r"time_cap_s.*\b0"),
    "time-cap -1": (["--time-cap", "-1"], r"time_cap_s.*-1"),
    "time-cap nan": (["--time-cap", "nan"], r"time_cap_s.*nan"),
    "time-cap inf": (["--time-cap", "inf"], r"time_cap_s.*inf"),
    "method unknown": (["--methods", "linformer-E"], r"'linformer-E'"),
    "dtype float8": (["--dtype", "float8"], r"'float8'"),
    "train_step at layer scope": (["--passes", "train_step"], r"'train_step' needs scopes.*'layer'"),
    "preset targets": (["--preset", "targets"], r"'targets'"),
    "local-windows -1": (["--local-windows", "none", "-1"], r"local_windows.*-1"),
    "local-windows word": (["--local-windows", "wide"], r"local_windows.*'wide'"),
    "local-windows 1.5": (["--local-windows", "1.5"], r"local_windows.*'1\.5'"),
    "local-windows none given": (["--local-windows"], r"local.windows.*expected at least one argument"),
}


@pytest.mark.parametrize("case", OPTIONS)
def test_benchmark_option(case: str, before_measuring: None, tmp_path, capsys) -> None:
    extra, match = OPTIONS[case]
    check_cli(_argv(tmp_path / "out", *extra), match, capsys, watch=[tmp_path])


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is there")
def test_benchmark_cuda_without_cuda(before_measuring: None, tmp_path, capsys) -> None:
    check_cli(
        _argv(tmp_path / "out", "--device", "cuda"),
        r"cuda.*is_available\(\) is False",
        capsys,
        watch=[tmp_path],
    )


def test_benchmark_output_dir_is_a_file(before_measuring: None, tmp_path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    check_cli(_argv(tmp_path / "notes.txt"), r"notes\.txt.*existing file", capsys, watch=[tmp_path])


def test_benchmark_output_dir_below_a_file(before_measuring: None, tmp_path, capsys) -> None:
    (tmp_path / "notes.txt").write_text("keep me")
    check_cli(_argv(tmp_path / "notes.txt" / "out"), r"notes\.txt.*is a file", capsys, watch=[tmp_path])


CONFIGS = {
    "warmup -1": ({"warmup": -1}, r"warmup.*-1"),
    "min_time_s -1": ({"min_time_s": -1.0}, r"min_time_s.*-1"),
    "min_time_s nan": ({"min_time_s": math.nan}, r"min_time_s.*nan"),
    "matmul_size 0": ({"matmul_size": 0}, r"matmul_size.*\b0\b"),
    "intermediate_size 0": ({"intermediate_size": 0}, r"intermediate_size.*\b0\b"),
    "seq_lens float": ({"seq_lens": (512.5,)}, r"seq_lens.*512\.5"),
    "seq_lens empty": ({"seq_lens": ()}, r"seq_lens.*\(\)"),
    "methods empty": ({"methods": ()}, r"methods must not be empty"),
    "scopes unknown": ({"scopes": ("model",)}, r"scopes.*'model'"),
    "train_step at layer scope": (
        {"scopes": ("layer", "encoder"), "passes": ("train_step",)},
        r"'train_step' needs scopes \('encoder',\) only, got scopes \('layer', 'encoder'\)",
    ),
    "hidden_size float": ({"hidden_size": 64.0, "num_heads": 4}, r"hidden_size.*64\.0"),
    "local_windows -2": ({"local_windows": (None, -2)}, r"local_windows.*got -2 in \(None, -2\)"),
    "local_windows float": ({"local_windows": (16.0,)}, r"local_windows.*16\.0"),
    "local_windows bool": ({"local_windows": (True,)}, r"local_windows.*True"),
    "local_windows empty": ({"local_windows": ()}, r"local_windows.*\(\)"),
    "local_windows scalar": ({"local_windows": 16}, r"local_windows.*got 16"),
    "local_windows text": ({"local_windows": ("sixteen",)}, r"local_windows.*'sixteen'"),
}


@pytest.mark.parametrize("case", CONFIGS)
def test_benchmark_config(case: str) -> None:
    kwargs, match = CONFIGS[case]
    check_raises(lambda: BenchmarkConfig(**kwargs), ValueError, match)


# --- the reference GEMM on CPU in half precision -----------------------------------------------------

SECONDS_PER_FLOP = {torch.float16: 10.0 / (2 * 2048**3), torch.bfloat16: 10.0 / (2 * 2048**3),
                    torch.float32: 0.1 / (2 * 2048**3)}  # fmt: skip


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_on_cpu_has_a_bounding_reference_within_the_time_cap(
    dtype: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CPU whose half GEMM is 100x slower than fp32 (virtual seconds, no real timing): calibration
    must stay inside --time-cap, and the reference must be the fp32 rate the cases can reach."""
    spent = []
    real_sample = matmul_reference.sample

    def virtual_gemm(fn, device, *, warmup, repeats, number):
        gemm = getattr(fn, "__self__", None)
        if not isinstance(gemm, matmul_reference.Gemm):
            return real_sample(fn, device, warmup=warmup, repeats=repeats, number=number)
        seconds = 2 * gemm.a.shape[0] ** 3 * SECONDS_PER_FLOP[gemm.a.dtype]
        spent.append(seconds * (warmup + repeats * number))
        return [seconds] * repeats

    monkeypatch.setattr(matmul_reference, "sample", virtual_gemm)
    config = BenchmarkConfig(seq_lens=(16,), projected_lengths=(8,), methods=("linformer-headwise",), dtype=dtype,
                             hidden_size=16, num_heads=2, rounds=1, time_cap_s=2.0, measure_memory=False)  # fmt: skip
    result = measure.run_benchmark(config, progress=False)
    fp32_rate = 1 / SECONDS_PER_FLOP[torch.float32]
    ok = sum(spent) <= config.time_cap_s and math.isclose(result.matmul_flops_per_s, fp32_rate, rel_tol=1e-6)
    check_handled(ok, f"{dtype} on CPU: {sum(spent):.0f} s of GEMM calibration (cap {config.time_cap_s} s), "
                      f"reference {result.matmul_flops_per_s / 1e9:.1f} GFLOP/s vs fp32 {fp32_rate / 1e9:.1f}",
                  kind="misleading")  # fmt: skip
