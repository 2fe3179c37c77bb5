"""The benchmark: FLOP formulas, a tiny sweep, skipping, memory, report files and the CLI. No timing asserts."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest
import torch
from torch.testing import assert_close
from torch.utils.flop_counter import FlopCounterMode

import linformer_kit.bench.matmul_reference as matmul_reference
from linformer_kit.bench import BenchmarkConfig, attention_flops, preset, run_benchmark, write_report
from linformer_kit.bench.cases import Case, build_module, train_step
from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult
from linformer_kit.bench.report import format_records_table, format_report, load_result, matmul_share
from linformer_kit.cli.main import main
from tests.fixtures.models import with_core

TINY = BenchmarkConfig(
    seq_lens=(32, 64),
    projected_lengths=(16,),
    methods=("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager"),
    hidden_size=32,
    num_heads=4,
    num_layers=2,
    intermediate_size=64,
    rounds=2,
    min_time_s=0.0,
    matmul_size=64,
    measure_memory=False,
)


def _case(method: str, scope: str = "layer", n: int = 16, k: int | None = 4) -> Case:
    layers = 2 if scope == "encoder" else 1
    return Case(
        method,
        scope,
        "forward",
        n,
        None if method.startswith("full") else k,
        2,
        8,
        2,
        layers,
        16,
        "cpu",
        "float32",
    )  # type: ignore[arg-type]


# --- FLOP formulas ----------------------------------------------------------------------------------


def test_flops_match_a_hand_count() -> None:
    # b=1, n=8, k=4, D=4.  Full: Q,K,V,out linears 4 * 2*8*4*4 = 1024; QK^T and PV 2 * 2*8*8*4 = 1024.
    assert attention_flops("full-sdpa", batch=1, n=8, k=None, hidden=4) == 2048
    # Headwise, fast order: Q,out 512; E X and F X 2 * 2*4*8*4 = 512; K,V on 4 rows 2 * 2*4*4*4 = 256;
    # K,V biases (one zero row each) 2 * 2*4*4 = 64; QK~^T and PV~ 2 * 2*8*4*4 = 512.
    assert attention_flops("linformer-headwise", batch=1, n=8, k=4, hidden=4) == 1856
    assert attention_flops("linformer-kv", batch=1, n=8, k=4, hidden=4) == 1856 - 256  # one E X
    # Paper order: all four linears on n rows 1024; E_i K_i, F_i V_i 512; mixing 512.
    assert attention_flops("linformer-none", batch=1, n=8, k=4, hidden=4) == 2048


@pytest.mark.parametrize(
    "method",
    ["full-eager", "linformer-headwise", "linformer-kv", "linformer-layerwise", "linformer-none", "peer-linformer",
     "peer-linformer-pytorch"],
)  # fmt: skip
@pytest.mark.parametrize("scope", ["layer", "encoder"])
def test_flops_match_torch_flop_counter(method: str, scope: str) -> None:
    if scope == "encoder" and method.startswith("peer"):
        pytest.skip("peers are benchmarked as layers only")
    case = _case(method, scope)
    module = with_core(build_module(case).eval(), "eager")  # the counter does not see the CPU SDPA kernel
    with FlopCounterMode(display=False) as counter:
        module(torch.randn(case.batch_size, case.n, case.hidden_size))
    assert counter.get_total_flops() == case.flops


@pytest.mark.parametrize("pass_type", ["forward+backward", "train_step"])
def test_backward_counts_three_forwards(pass_type: str) -> None:
    # train_step adds the AdamW update: elementwise, under 1% of these FLOPs, not counted (flops.py)
    forward = _case("linformer-headwise", "encoder")
    assert dataclasses.replace(forward, pass_type=pass_type).flops == 3 * forward.flops


# --- the sweep --------------------------------------------------------------------------------------


@pytest.mark.slow
def test_tiny_sweep_returns_a_record_per_case() -> None:
    config = TINY.replace(
        methods=(
            *TINY.methods,
            "linformer-layerwise",
            "linformer-none",
            "peer-linformer",
            "peer-linformer-pytorch",
        ),
        scopes=("layer", "encoder"),
        passes=("forward", "forward+backward"),
    )
    result = run_benchmark(config, progress=False)
    # per (scope, pass, n): 6 Linformer/peer methods at one k + 2 full; peers only at layer scope
    assert len(result.records) == 2 * 2 * 8 + 2 * 2 * 6
    assert result.matmul_flops_per_s > 0
    for r in result.records:
        assert r.skipped is None, r
        assert r.samples == 2
        assert r.time_min_s <= r.time_median_s <= r.time_max_s
        assert r.achieved_flops_per_s == pytest.approx(r.flops / r.time_median_s)
        assert (r.k is None) == r.method.startswith("full")
        assert r.num_layers == (2 if r.scope == "encoder" else 1)
        assert r.torch_version == torch.__version__
    assert not any(r.scope == "encoder" and r.method.startswith("peer") for r in result.records)


def test_cases_over_the_time_cap_or_longer_than_n_are_skipped_with_a_reason() -> None:
    result = run_benchmark(TINY.replace(time_cap_s=1e-9, seq_lens=(8, 32)), progress=False)
    k_too_big = [r for r in result.records if r.n == 8 and r.k == 16]
    assert k_too_big
    assert all(r.skipped == "k=16 > n=8" for r in k_too_big)
    capped = [r for r in result.records if r not in k_too_big]
    assert capped
    assert all(r.skipped and ("time cap" in r.skipped or "skipped at n=" in r.skipped) for r in capped)
    assert all(r.time_median_s is None for r in result.records)


@pytest.mark.slow
def test_cpu_peak_memory_of_explicit_softmax_grows_with_n() -> None:
    # full-eager materialises 2 (h, n, n) fp32 matrices: 2 * 4 * 1024^2 * 4 B = 32 MiB at n=1024.
    config = TINY.replace(seq_lens=(64, 1024), methods=("full-eager",), rounds=1, measure_memory=True)
    small, large = run_benchmark(config, progress=False).records
    assert small.peak_memory_bytes > small.memory_delta_bytes >= 0
    assert large.memory_delta_bytes - small.memory_delta_bytes > 24 * 2**20


# --- reports and the CLI ----------------------------------------------------------------------------


def test_report_writes_json_markdown_and_png(tmp_path: pytest.TempPathFactory) -> None:
    result = run_benchmark(TINY, progress=False)
    paths = write_report(result, tmp_path)
    data = json.loads(paths["json"].read_text())
    assert {"config", "environment", "matmul_flops_per_s", "records"} <= data.keys()
    record = data["records"][0]
    assert {"method", "n", "k", "time_median_s", "flops", "achieved_flops_per_s", "skipped"} <= record.keys()
    assert record["tokens_per_s"] == pytest.approx(
        record["batch_size"] * record["n"] / record["time_median_s"]
    )
    assert record["matmul_flops_per_s"] > 0
    markdown = paths["markdown"].read_text()
    assert "speed-up / memory saving over full-sdpa" in markdown
    assert "speed-up / memory saving over full-eager" in markdown
    assert "| 64 |" in markdown
    assert paths["plot"].name == "cpu_fp32.png"
    assert paths["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert format_report(result) == markdown
    assert format_report(load_result(paths["json"])) == markdown


def test_cli_runs_a_tiny_sweep(tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main([
        "benchmark", "--quick", "--seq-lens", "32", "--projected-lengths", "16", "--hidden-size", "32",
        "--num-heads", "4", "--rounds", "1", "--no-memory", "--no-progress", "--output-dir", str(tmp_path),
    ])  # fmt: skip
    assert rc == 0
    out = capsys.readouterr().out
    assert "layer, forward: speed-up / memory saving over full-sdpa" in out
    assert (tmp_path / "benchmark.json").exists()
    assert (tmp_path / "cpu_fp32.png").exists()


def test_cli_rejects_bad_values_with_a_clear_message(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["benchmark", "--seq-lens", "0", "--output-dir", str(tmp_path)]) == 2
    assert "seq_lens must be a non-empty list of lengths >= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["benchmark", "--methods", "linformer-fast", "--output-dir", str(tmp_path)])
    assert "invalid choice: 'linformer-fast'" in capsys.readouterr().err


def test_config_validation_names_the_bad_value() -> None:
    with pytest.raises(ValueError, match=r"unknown methods \['flash'\]"):
        BenchmarkConfig(methods=("flash",))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="hidden_size=30 must be divisible by num_heads=4"):
        BenchmarkConfig(hidden_size=30, num_heads=4)
    with pytest.raises(ValueError, match="dtype must be one of"):
        BenchmarkConfig(dtype="float64")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="preset must be one of"):
        preset("huge")  # type: ignore[arg-type]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error raised without CUDA")
def test_cuda_without_a_gpu_raises() -> None:
    with pytest.raises(
        ValueError, match=r"device='cuda' was requested but torch.cuda.is_available\(\) is False"
    ):
        run_benchmark(TINY.replace(device="cuda"), progress=False)


def test_k_larger_than_a_short_n_still_measures_the_longer_n() -> None:
    # Seen on the H100: k=1024 skipped at n=512 ("k > n") used to skip k=1024 at every larger n too.
    config = TINY.replace(seq_lens=(8, 32), projected_lengths=(16,), methods=("linformer-headwise",))
    records = run_benchmark(config, progress=False).records
    by_n = {r.n: r for r in records if r.scope == "layer" and r.pass_type == "forward"}
    assert by_n[8].skipped == "k=16 > n=8"
    assert by_n[32].skipped is None
    assert by_n[32].time_median_s is not None


# --- training steps ---------------------------------------------------------------------------------


def test_training_preset_is_the_small_pretraining_shape() -> None:
    config = preset("training")  # `linformer pretrain --preset small`'s encoder, batch 2
    shape = (config.hidden_size, config.num_layers, config.num_heads, config.intermediate_size)
    assert shape == (256, 4, 4, 1024)
    assert (config.batch_size, config.projected_lengths) == (2, (128,))
    assert config.seq_lens == (512, 1024, 2048, 4096)
    assert (config.scopes, config.passes) == (("encoder",), ("train_step",))
    assert set(config.methods) == {"linformer-headwise", "full-sdpa"}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_train_step_updates_fp32_weights_also_under_bf16_autocast(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    module = build_module(_case("linformer-headwise", "encoder"))
    before = {name: p.detach().clone() for name, p in module.named_parameters()}
    train_step(module, torch.randn(2, 16, 8), dtype)()
    trained = {name: p for name, p in module.named_parameters() if p.grad is not None}
    assert set(before) - set(trained) == {"model.embeddings.word_embeddings.weight"}  # fed embeddings
    for name, p in trained.items():
        assert p.dtype == torch.float32, name  # master weights stay fp32 (mixed precision)
        assert torch.isfinite(p.grad).all(), name
        assert not torch.equal(p, before[name]), f"{name} was not updated"


def test_train_step_sweep_reports_tokens_per_s() -> None:
    config = TINY.replace(methods=("linformer-headwise", "full-sdpa"), scopes=("encoder",), passes=("train_step",),
                          dtype="bfloat16", batch_size=2)  # fmt: skip
    result = run_benchmark(config, progress=False)
    assert len(result.records) == 4
    for r in result.records:
        assert r.skipped is None, r
        assert r.tokens_per_s == pytest.approx(2 * r.n / r.time_median_s)
    assert "**encoder, train_step: tokens/s**" in format_report(result)


# --- the reference GEMM of each record --------------------------------------------------------------


def test_each_record_gets_the_gemm_rate_of_its_own_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Virtual GEMM seconds (no real timing): 1 s in the rounds of the n=32 group, 4 s in those of n=64."""
    round_seconds, real_sample = iter([1.0, 1.0, 4.0, 4.0]), matmul_reference.sample

    def virtual_gemm(fn, device, *, warmup, repeats, number):
        if not isinstance(getattr(fn, "__self__", None), matmul_reference.Gemm):
            return real_sample(fn, device, warmup=warmup, repeats=repeats, number=number)
        return [next(round_seconds) if warmup == 0 else 1e-6] * repeats  # calibration: warmup > 0

    monkeypatch.setattr(matmul_reference, "sample", virtual_gemm)
    result = run_benchmark(TINY.replace(methods=("linformer-headwise", "full-sdpa")), progress=False)
    gemm_flops = 2 * TINY.matmul_size**3
    assert {r.n: r.matmul_flops_per_s for r in result.records} == {32: gemm_flops / 1.0, 64: gemm_flops / 4.0}


def _record(method: str, seconds: float, share_of_own_gemm: float | None) -> BenchmarkRecord:
    """A measured layer record whose own GEMM rate (None: none, as in older results) gives that share."""
    case = _case(method)
    achieved = case.flops / seconds
    return BenchmarkRecord(
        method, "layer", "forward", case.n, case.k, 2, 8, 2, 1, 16, "cpu", "float32", "x", 2, case.flops,
        time_median_s=seconds, time_q1_s=seconds, time_q3_s=seconds, samples=1, achieved_flops_per_s=achieved,
        matmul_flops_per_s=None if share_of_own_gemm is None else achieved / share_of_own_gemm,
    )  # fmt: skip


def test_percent_of_matmul_uses_the_records_own_gemm_rate() -> None:
    own, legacy = _record("linformer-headwise", 1.0, 0.8), _record("full-sdpa", 1.0, None)
    run_rate = legacy.achieved_flops_per_s / 0.25  # the run's rate: what a record without its own gets
    result = BenchmarkResult(dataclasses.asdict(TINY), {}, run_rate, [own, legacy])
    assert matmul_share(own, result) == pytest.approx(0.8)
    assert matmul_share(legacy, result) == pytest.approx(0.25)
    rows = [line for line in format_records_table(result).splitlines() if line.startswith("| layer |")]
    assert "| 80% |" in rows[0]
    assert "| 25% |" in rows[1]


# --- bf16 -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["linformer-headwise", "linformer-kv", "full-sdpa", "full-eager", "peer-linformer"]
)
def test_bf16_layer_agrees_with_fp32(method: str) -> None:
    """The benchmark's bf16 rows cast the whole layer (weights and input) to bf16, peers included.
    bf16 keeps 8 significant bits (a rounding errs by up to 2^-8 = 0.4%); the few roundings in series
    of one layer stay inside 5e-2 on outputs of order 1 (the tolerance of the autocast test in
    tests/nn/test_precision_and_compile.py)."""
    if method.startswith("peer"):
        pytest.importorskip("linformer")
    torch.manual_seed(0)
    case = _case(method, n=16, k=4)
    module = build_module(case).eval()
    x = torch.randn(case.batch_size, case.n, case.hidden_size)
    low = copy.deepcopy(module).to(torch.bfloat16)(x.bfloat16())
    assert low.dtype == torch.bfloat16
    assert_close(low.float(), module(x), rtol=5e-2, atol=5e-2)


# --- local windows ("Local heads", item 3) ------------------------------------------------------------


def test_windows_multiply_the_linformer_methods_only() -> None:
    from linformer_kit.bench.measure import _group_cases

    config = TINY.replace(
        methods=("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager", "peer-linformer"),
        local_windows=(None, 0, 8),
    )
    cases = _group_cases(config, "layer", "forward", 32)
    windows = {m: [c.local_window for c in cases if c.method == m] for m in config.methods}
    assert windows == {
        "linformer-headwise": [None, 0, 8],
        "linformer-kv": [None, 0, 8],
        "full-sdpa": [None],  # measured once, whatever the windows
        "full-eager": [None],
        "peer-linformer": [None],
    }
    assert [c.k for c in cases if c.method == "full-sdpa"] == [None]
    assert {c.k for c in cases if c.method == "linformer-kv"} == {16}
    # the default sweeps nothing new: one case per method and k, no window
    assert [c.local_window for c in _group_cases(TINY, "layer", "forward", 32)] == [None] * 4


@pytest.mark.parametrize("window", [None, 0, 3])
@pytest.mark.parametrize("scope", ["layer", "encoder"])
def test_a_window_case_builds_attention_with_that_window(window: int | None, scope: str) -> None:
    from linformer_kit.nn import LinformerSelfAttention

    case = dataclasses.replace(_case("linformer-headwise", scope), local_window=window)
    layers = [m for m in build_module(case).modules() if isinstance(m, LinformerSelfAttention)]
    assert len(layers) == case.num_layers
    assert all(layer.local_window == window and layer.projected_length == 4 for layer in layers)
    out = build_module(case).eval()(torch.randn(case.batch_size, case.n, case.hidden_size))
    assert out.shape == (case.batch_size, case.n, case.hidden_size)


def test_a_window_on_a_full_or_peer_method_is_refused() -> None:
    for method in ("full-sdpa", "peer-linformer"):
        with pytest.raises(
            ValueError, match=f"local window applies to the linformer-\\* methods, got {method} w=4"
        ):
            build_module(dataclasses.replace(_case(method), local_window=4))


@pytest.mark.parametrize("method", ["linformer-headwise", "linformer-kv", "linformer-none"])
@pytest.mark.parametrize(("n", "window"), [(16, 0), (16, 3), (16, 40), (100, 16), (100, 40)])
@pytest.mark.parametrize("scope", ["layer", "encoder"])
def test_window_flops_match_torch_flop_counter(method: str, n: int, window: int, scope: str) -> None:
    # the formula is banded_attention's (nn/local.py), whose matmuls the counter sees: backend "blocked"
    # selects it (local_attention_function); the SDPA core does the same slot products and a wider band in one kernel

    case = dataclasses.replace(_case(method, scope, n=n), local_window=window)
    if scope == "encoder" and window >= n:  # a model refuses a window over every input: full attention
        with pytest.raises(ValueError, match=f"local_window={window} must be below max_seq_len={n}"):
            build_module(case)
        return
    module = with_core(build_module(case).eval(), "blocked")  # matmuls the counter sees
    with FlopCounterMode(display=False) as counter:
        module(torch.randn(case.batch_size, case.n, case.hidden_size))
    assert counter.get_total_flops() == case.flops
    assert case.flops > dataclasses.replace(case, local_window=None).flops  # paper order + the band


def test_window_sweep_reports_each_window_beside_full_attention(tmp_path) -> None:
    config = TINY.replace(methods=("linformer-headwise", "full-sdpa"), local_windows=(None, 0, 8), rounds=1)
    result = run_benchmark(config, progress=False)
    assert [(r.n, r.method, r.local_window) for r in result.records] == [
        (n, m, w) for n in (32, 64) for m, w in [("linformer-headwise", None), ("linformer-headwise", 0),
                                                  ("linformer-headwise", 8), ("full-sdpa", None)]
    ]  # fmt: skip
    assert all(r.skipped is None for r in result.records)
    plain, windowed = (
        next(r for r in result.records if r.n == 64 and r.local_window == w) for w in (None, 8)
    )
    assert windowed.flops > plain.flops  # the record counts the window's own FLOPs (paper order + band)
    paths = write_report(result, tmp_path, plot=False)
    data = json.loads(paths["json"].read_text())
    assert data["config"]["local_windows"] == [None, 0, 8]
    assert [r["local_window"] for r in data["records"][:4]] == [None, 0, 8, None]
    markdown = paths["markdown"].read_text()
    header = next(line for line in markdown.splitlines() if line.startswith("| n | headwise"))
    assert header == "| n | headwise k=16 w=none | headwise k=16 w=0 | headwise k=16 w=8 |"
    records = format_records_table(result).splitlines()
    assert records[2].startswith("| scope | pass | method | n | k | w | median ms |")
    rows = [line.split(" | ")[2:6] for line in records[4:8]]
    assert rows == [["linformer-headwise", "32", "16", "none"], ["linformer-headwise", "32", "16", "0"],
                    ["linformer-headwise", "32", "16", "8"], ["full-sdpa", "32", "", ""]]  # fmt: skip
    assert format_report(load_result(paths["json"])) == markdown


def test_a_run_without_windows_labels_its_columns_as_before() -> None:
    result = run_benchmark(TINY.replace(seq_lens=(32,), rounds=1), progress=False)
    header = next(line for line in format_report(result).splitlines() if line.startswith("| n | headwise"))
    assert header == "| n | headwise k=16 | kv k=16 |"


def test_window_preset_is_the_issue_sweep() -> None:
    config = preset("window")
    assert config.seq_lens == (512, 1024, 2048, 4096, 8192, 16384)
    assert (config.projected_lengths, config.local_windows) == ((128,), (None, 0, 16, 64))
    assert config.methods == ("linformer-headwise", "full-sdpa")
    assert (config.scopes, config.passes) == (("layer",), ("forward", "forward+backward"))
    assert (config.hidden_size, config.num_heads, config.batch_size) == (768, 12, 1)
    assert (config.device, config.dtype, config.rounds) == ("cpu", "float32", 3)
    assert config.time_cap_s <= 10  # no call over 10 s: about 10 minutes on 2 cores


def test_cli_reads_local_windows(tmp_path) -> None:
    from linformer_kit.cli.arguments import parse_config
    from linformer_kit.cli.benchmark import build_parser

    argv = ["--output-dir", str(tmp_path), "--local-windows", "none", "0", "16", "NONE"]
    assert parse_config(build_parser("full"), argv).local_windows == (None, 0, 16, None)
    assert parse_config(build_parser("full"), argv[:2]).local_windows == (None,)  # default: no window
    from_preset = parse_config(build_parser("window"), argv[:2])  # --preset window: its sweep is the default
    assert from_preset == preset("window").replace(output_dir=str(tmp_path))
    assert from_preset.local_windows == (None, 0, 16, 64)
    config_file = tmp_path / "sweep.yaml"
    config_file.write_text("local_windows: [none, 4, null]\n")  # YAML: `none` is text, null is None
    assert parse_config(build_parser("full"), [*argv[:2], "--config", str(config_file)]).local_windows == (
        None, 4, None,
    )  # fmt: skip
