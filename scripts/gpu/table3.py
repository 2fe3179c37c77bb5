"""The paper's Table 3 on a CUDA GPU, the SDPA kernels that ran, a profile and a compiled path.

    bash scripts/gpu/run.sh table3 [PART...]                # on the GPU machine (scripts/gpu/README.md)
    python scripts/gpu/table3.py --out runs/gpu/table3      # the same, directly (bf16), ~6 minutes on an H100
    python scripts/gpu/table3.py --out runs/t3 --tiny       # CPU dry run of the same code on tiny shapes

Writes, under --out: kernels.json (which attention kernels each method launched), profile.txt (top
kernels of one Linformer layer call), compiled.json (eager vs torch.compile, outputs compared), and
<part>/benchmark.json / .md (the `linformer_kit.bench` records, written part by part so a timeout keeps
what was measured). Parts: kernels, compiled, and the grids layer, layer-batch8, encoder, encoder-k256,
layer-large-k (`grid` below). Everything is measured with the library's own benchmark; this script only
chooses the grid and adds what the library does not record (kernel names, compiled variants).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from linformer_kit.bench import BenchmarkConfig, run_benchmark, write_report
from linformer_kit.bench.cases import Case, build_module, build_step

KERNEL_CLASSES = {  # substring of a CUDA kernel name -> SDPA implementation
    "flash": "flash",
    "fmha_cutlass": "efficient",
    "efficient_attention": "efficient",
    "cudnn": "cudnn",
    "softmax": "math (explicit softmax)",
}


def kernels_of(case: Case) -> dict[str, object]:
    """Names of the CUDA kernels one call launches, and the attention implementation they reveal."""
    step = build_step(case)
    step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    names = sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})
    found = sorted({cls for key, cls in KERNEL_CLASSES.items() for name in names if key in name.lower()})
    return {"case": case.to_dict(), "attention_kernels": found, "kernels": names}


def profile_table(case: Case) -> str:
    step = build_step(case)
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="cuda_time_total", row_limit=25)


def timed(fn, repeats: int = 50) -> float:
    """Median milliseconds of one call, with CUDA events, after warm-up."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def compiled_vs_eager(n: int, k: int, batch: int, dtype: torch.dtype) -> list[dict[str, object]]:
    """Eager and torch.compile (reduce-overhead: inductor + CUDA graphs) for Linformer and SDPA."""
    rows = []
    for method in ("linformer-headwise", "full-sdpa"):
        case = Case(method, "layer", "forward", n, k if method.startswith("linformer") else None,
                    batch, 768, 12, 1, 3072, "cuda", str(dtype).removeprefix("torch."))  # fmt: skip
        module = build_module(case).to("cuda", dtype).eval()
        x = torch.randn(batch, n, 768, device="cuda", dtype=dtype)
        compiled = torch.compile(module, mode="reduce-overhead", fullgraph=False)
        with torch.inference_mode():
            start = time.perf_counter()
            reference, fast = module(x), compiled(x)
            compile_s = time.perf_counter() - start
            error = ((fast.float() - reference.float()).norm() / reference.float().norm()).item()
            eager_ms = timed(lambda m=module, x=x: m(x))
            compiled_ms = timed(lambda m=compiled, x=x: m(x))
        rows.append(dict(method=method, n=n, k=case.k, batch=batch, eager_ms=eager_ms,
                         compiled_ms=compiled_ms, compile_s=compile_s, relative_error=error))  # fmt: skip
        print(rows[-1], flush=True)
    return rows


def grid(tiny: bool) -> dict[str, BenchmarkConfig]:
    """The paper's Table 3: n = 512 ... 65536, k = 128 ... 2048 (k < n); layer and 12-layer encoder."""
    if tiny:
        base = BenchmarkConfig(seq_lens=(64, 128), projected_lengths=(16, 32), hidden_size=32, num_heads=2,
                               num_layers=2, intermediate_size=64, rounds=2, time_cap_s=2.0, measure_memory=False)  # fmt: skip
    else:
        base = BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096, 8192, 16384, 32768, 65536),
            projected_lengths=(128, 256, 512, 1024, 2048),
            device="cuda", dtype="bfloat16", rounds=5, time_cap_s=4.0, matmul_size=8192,
        )  # fmt: skip
    ours = ("linformer-headwise", "linformer-kv", "linformer-layerwise", "full-sdpa", "full-eager")
    return {
        "layer": base.replace(
            methods=(*ours, "peer-linformer", "peer-linformer-pytorch"),
            scopes=("layer",),
            passes=("forward", "forward+backward"),
        ),
        "layer-batch8": base.replace(
            methods=("linformer-headwise", "full-sdpa", "full-eager"),
            scopes=("layer",),
            passes=("forward", "forward+backward"),
            batch_size=8,
            seq_lens=base.seq_lens[:-1],
        ),
        "encoder": base.replace(methods=ours, scopes=("encoder",), passes=("forward", "forward+backward")),
        # smaller grids, for a session that has little time: the encoder at k=256, the layer at k = 1024, 2048
        "encoder-k256": base.replace(
            methods=("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager"),
            projected_lengths=(256,),
            scopes=("encoder",),
            rounds=3,
            passes=("forward", "forward+backward"),
            seq_lens=base.seq_lens[:6],
        ),
        "layer-large-k": base.replace(
            methods=("linformer-headwise", "linformer-kv", "full-sdpa"),
            projected_lengths=(1024, 2048),
            scopes=("layer",),
            rounds=3,
            passes=("forward", "forward+backward"),
            seq_lens=base.seq_lens[2:] or base.seq_lens,
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--tiny", action="store_true", help="CPU dry run on tiny shapes")
    parser.add_argument(
        "--parts", nargs="+", default=["kernels", "compiled", "layer", "layer-batch8", "encoder"]
    )
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    on_gpu = torch.cuda.is_available() and not args.tiny
    configs = grid(args.tiny)

    if on_gpu and "kernels" in args.parts:
        cases = [Case(m, "layer", p, 4096, 256 if m.startswith("linformer") else None, 1, 768, 12, 1, 3072,
                      "cuda", "bfloat16")
                 for m in ("linformer-headwise", "full-sdpa", "full-eager")
                 for p in ("forward", "forward+backward")]  # fmt: skip
        (out / "kernels.json").write_text(json.dumps([kernels_of(c) for c in cases], indent=1))
        (out / "profile.txt").write_text(profile_table(cases[0]))
        print((out / "profile.txt").read_text()[:4000], flush=True)
    if on_gpu and "compiled" in args.parts:
        rows = [r for b in (1, 8) for r in compiled_vs_eager(4096, 256, b, torch.bfloat16)]
        (out / "compiled.json").write_text(json.dumps(rows, indent=1))
    for part, config in configs.items():
        if part not in args.parts:
            continue
        print(f"== {part}", flush=True)
        result = run_benchmark(config, progress=False)
        paths = write_report(result, out / part)
        print((out / part / "benchmark.md").read_text()[:6000], paths, flush=True)


if __name__ == "__main__":
    main()
