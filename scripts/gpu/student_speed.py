"""Issue "On a GPU", step 1: the windowed student against the original on a GPU, texts/s and memory, with each
window core, eager and compiled.

    python scripts/gpu/student_speed.py OUT_DIR [--device cuda] [--dtype bfloat16] [--lengths 128 ... 4096]
        [--parts layer models blocks profile train] [--cores sdpa flex] [--compile eager default]
        [--model-compile eager]

Models (all-MiniLM-L6-v2's shape: 6 layers, D = 384, 12 heads; random weights: the time and memory of a
call do not depend on the values, and the saved students are too large to travel to the GPU machine):
    original       BertModel, attn_implementation="sdpa" (flash / memory-efficient kernels), its position
                   table as long as the longest n (above 512 that is `encoder_at`'s full attention over
                   wrapped positions: the same computation)
    chunks         the original on ceil(n / 512) chunks of 512 tokens in one batch (n > 512)
    w64, w16, k64  `from_bert(original, k, "headwise", local_window=w, global_tokens=1, exact_length=512)`:
                   the distilled student's options (w64: k 128, window 64; w16: k 128, window 16; k64: k 64,
                   window 64), read at every n; `--students` picks them (default w64, the recommended one)
    STUDENT-CORE   the student with every layer's window core set to CORE (`--cores`: "sdpa", today's CUDA
                   core, and "flex", one FlexAttention kernel: nn/local_flex.py)
Each model runs eager and, with `--model-compile default`, under `torch.compile` ("+c" in its name; the
batch then has no attention_mask: an unpadded batch decided outside the compiled region); the layer part
runs each `--compile` mode.

Parts, in the order given (the first ones are the cheap, decisive ones):
    layer     one attention layer at batch 1, n = 4 096 (D = 384, 12 heads): the windowed Linformer with each
              core against full attention (the same module with k = None: SDPA), eager and compiled
    models    inference (torch.inference_mode) at batch `tokens // n` and at batch 1
    blocks    the flex core's block-mask blocks (`--flex-blocks`, Bq x Bk) on the w64 layer
    profile   torch.profiler's top CUDA kernels of one call at n = 128, batch 512 (the exact path: the student
              runs the original's computation there), the original beside each student core
    train     forward + backward of the mean square of the last hidden state (eval mode: no dropout)
    syncs     host reads (device-to-host syncs, `torch.cuda.set_sync_debug_mode("warn")`) of one forward of
              each student core and of the long-layers student, padded batch (rows of n and n / 8 tokens)
              and unpadded (CUDA only: elsewhere the record says so)
    long      the long-layers student (`with_long_layers`, distill's recommended long student) on a padded
              batch mixing rows of n and of 400 tokens, against the same rows in two calls (the long rows,
              the short rows unpadded): what the plan's one read and the split by row cost on a padded
              batch in eager mode (issue "The attention core as one plan a forward")
Seconds a call: CUDA-synchronised wall time, the median of 5 samples, each repeating the call until it lasts
`--min-time` s. Memory: torch.cuda.max_memory_allocated during one call minus what was allocated before it.

Every finished record is written at once to OUT_DIR/student_speed.json (the whole file rewritten), so a run
cut at its limit leaves what it finished. A case that fails (out of memory) is a record with its error.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import torch

from linformer_kit.bench.memory import measure_cuda
from linformer_kit.bench.timing import sample

MINILM = dict(
    hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
    vocab_size=30522, type_vocab_size=2, hidden_act="gelu", layer_norm_eps=1e-12, pad_token_id=0,
)  # fmt: skip
STUDENTS = {"w64": (128, 64), "w16": (128, 16), "k64": (64, 64)}  # name -> (k, window)
CHUNK = 512


def build_models(args: argparse.Namespace, longest: int, dtype: torch.dtype) -> dict[str, torch.nn.Module]:
    """The original and each `--students` student with each `--cores` core, eager and under each `--compile`."""
    from transformers import BertConfig, BertModel

    import linformer_kit.models  # noqa: F401  (registers model_type "linformer")
    from linformer_kit.models.convert import from_bert

    torch.manual_seed(0)
    short = BertModel(BertConfig(**MINILM, max_position_embeddings=CHUNK))
    config = BertConfig(**MINILM, max_position_embeddings=longest)
    config._attn_implementation = "sdpa"
    eager: dict[str, torch.nn.Module] = {"original": BertModel(config)}
    for name in args.students:
        k, window = STUDENTS[name]
        for core in args.cores:
            student = from_bert(
                short,
                k,
                "headwise",
                local_window=window,
                global_tokens=1,
                exact_length=CHUNK,
                max_length=longest,
            )
            eager[f"{name}-{core}"] = with_core(student, core)
    models = {name: model.to(device=args.device, dtype=dtype).eval() for name, model in eager.items()}
    for mode in args.compile:
        if mode != "eager":
            models.update(
                {f"{name}+c": torch.compile(model, mode=mode) for name, model in list(eager.items())}
            )
    return models


def with_core(model, core: str):
    """The model with every Linformer layer running `core` (nn/cores.py), as transformers switches
    `attn_implementation`."""
    model.set_attn_implementation(core)
    return model


def inputs(rows: int, n: int, device: str, masked: bool = True) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(n * 7919 + rows)
    ids = torch.randint(1000, 30000, (rows, n), generator=generator)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    batch = {"input_ids": ids.to(device)}
    if masked:
        batch["attention_mask"] = torch.ones(rows, n, dtype=torch.long, device=device)
    return batch


def call_of(model: torch.nn.Module, batch: dict[str, torch.Tensor], mode: str) -> Any:
    if mode == "inference":

        def infer() -> None:
            with torch.inference_mode():
                model(**batch)

        return infer

    def train() -> None:
        out = model(**batch).last_hidden_state
        out.float().pow(2).mean().backward()
        model.zero_grad(set_to_none=True)

    return train


def timed(call: Any, device: str, min_time: float, samples: int = 5) -> list[float]:
    """Seconds a call: after 2 warm-up calls (kernels chosen, allocator grown), `samples` samples that each
    repeat the call until it lasts `min_time` (the benchmark's `sample`, CUDA-synchronised)."""
    once = max(sample(call, device, warmup=2, repeats=1, number=1)[0], 1e-6)
    return sample(call, device, warmup=0, repeats=samples, number=max(1, math.ceil(min_time / once)))


def peak_mib(call: Any, device: str) -> float | None:
    """MiB allocated at the peak of one call above what was allocated before it (bench/memory.py)."""
    return measure_cuda(call, device).delta_bytes / 2**20 if device == "cuda" else None


def cases(n: int, tokens: int) -> list[int]:
    return sorted({max(1, tokens // n), 1}, reverse=True)


def measure_models(args: argparse.Namespace, result: dict[str, Any], out: Path, mode: str) -> None:
    dtype = getattr(torch, args.dtype)
    # exact_length 512 needs a longer longest input: a dry run at short lengths builds the models at 1 024
    models = build_models(argparse.Namespace(**{**vars(args), "compile": args.model_compile}),
                          max(*args.lengths, 2 * CHUNK), dtype)  # fmt: skip
    for n in args.lengths:
        for batch in cases(n, args.tokens):
            for name in models:
                entries = [("whole", batch, n)]
                if name.startswith("original") and n > CHUNK:
                    entries.append(("chunks", batch * math.ceil(n / CHUNK), CHUNK))
                for method, rows, length in entries:
                    record: dict[str, Any] = {
                        "mode": mode, "n": n, "batch": batch, "model": name, "method": method,
                        "rows": rows, "length": length,
                    }  # fmt: skip
                    batch_inputs = inputs(rows, length, args.device, masked=not name.endswith("+c"))
                    call = call_of(models[name], batch_inputs, mode)
                    time_call(call, args, record, lambda call=call, batch=batch, record=record: {
                        "texts_per_second": batch / record["seconds_median"],
                        "peak_mib": peak_mib(call, args.device),
                    })  # fmt: skip
                    keep(record, result, out)


def measure_layer(args: argparse.Namespace, result: dict[str, Any], out: Path) -> None:
    from linformer_kit.nn import LinformerSelfAttention

    n, dtype = args.layer_length, getattr(torch, args.dtype)
    x = torch.randn(1, n, 384, device=args.device, dtype=dtype)
    layers = {"full-sdpa": LinformerSelfAttention(384, 12, n, None)}
    for core in args.cores:
        for name, window in (("w64", 64), ("w16", 16)):
            layers[f"{name}-{core}"] = LinformerSelfAttention(
                384, 12, n, 128, sharing="headwise", local_window=window, global_tokens=1, backend=core
            )
    for compile_mode in args.compile:
        for name, layer in layers.items():
            layer = layer.to(device=args.device, dtype=dtype).eval()
            record: dict[str, Any] = {"mode": "layer-inference", "n": n, "batch": 1, "model": name,
                                      "compile": compile_mode}  # fmt: skip
            try:
                module = layer if compile_mode == "eager" else torch.compile(layer, mode=compile_mode)
            except Exception as error:
                record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
            else:
                time_layer(module, x, args, record)
            keep(record, result, out)


def time_layer(module: Any, x: torch.Tensor, args: argparse.Namespace, record: dict[str, Any]) -> None:
    """Inference of `module` on x (no mask: an unpadded batch) timed into `record` (`time_call`)."""

    def call() -> None:
        with torch.inference_mode():
            module(x)

    time_call(call, args, record)


def time_call(call: Any, args: argparse.Namespace, record: dict[str, Any], more: Any = None) -> None:
    """`call` timed into `record`: its first call, then the samples (`timed`), then `more()`'s fields; an
    error (out of memory) is the record's, and on CUDA the cache is emptied for the next case."""
    try:
        start = time.perf_counter()
        call()
        record["first_call_s"] = time.perf_counter() - start
        times = timed(call, args.device, args.min_time)
        record["seconds_median"] = statistics.median(times)
        record["seconds_min"] = min(times)
        if more is not None:
            record.update(more())
    except Exception as error:
        record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        if args.device == "cuda":
            torch.cuda.empty_cache()


def keep(record: dict[str, Any], result: dict[str, Any], out: Path) -> None:
    """The record into the result, written at once (a run cut at its limit keeps it), and printed."""
    result["records"].append(record)
    save(result, out)
    print(json.dumps(record), flush=True)


def measure_blocks(args: argparse.Namespace, result: dict[str, Any], out: Path) -> None:
    """The flex core's block mask blocks (Bq x Bk, nn/local_flex.py FLEX_BLOCK) on the w64 layer, eager layer
    (the core's own compiled kernel), batch 1, n = `--layer-length`: which reads fewest keys fastest."""
    from linformer_kit.nn import LinformerSelfAttention, local_flex

    n, dtype = args.layer_length, getattr(torch, args.dtype)
    x = torch.randn(1, n, 384, device=args.device, dtype=dtype)
    layer = LinformerSelfAttention(384, 12, n, 128, sharing="headwise", local_window=64, global_tokens=1,
                                   backend="flex").to(device=args.device, dtype=dtype).eval()  # fmt: skip
    default = local_flex.FLEX_BLOCK
    for block in args.flex_blocks:
        # the block mask's cache is keyed by FLEX_BLOCK: each block size builds its own
        local_flex.FLEX_BLOCK = tuple(int(side) for side in block.split("x"))  # type: ignore[assignment]
        record: dict[str, Any] = {"mode": "layer-inference", "n": n, "batch": 1, "model": f"w64-flex-{block}",
                                  "compile": "eager"}  # fmt: skip
        time_layer(layer, x, args, record)
        keep(record, result, out)
    local_flex.FLEX_BLOCK = default


def measure_profile(args: argparse.Namespace, result: dict[str, Any], out: Path) -> None:
    """The exact path's kernels: n = 128, batch 512 (`cases`), the original beside each student core, eager."""
    from torch.profiler import ProfilerActivity, profile

    dtype = getattr(torch, args.dtype)
    profiled = argparse.Namespace(**{**vars(args), "compile": ["eager"]})
    models = build_models(profiled, max(*args.lengths, 2 * CHUNK), dtype)
    n = 128
    batch = inputs(max(1, args.tokens // n), n, args.device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
    for name, model in models.items():
        call = call_of(model, batch, "inference")
        record: dict[str, Any] = {"mode": "profile", "n": n, "batch": len(batch["input_ids"]), "model": name}
        try:
            call()
            with profile(activities=activities) as prof:
                call()
            sort = "cuda_time_total" if args.device == "cuda" else "cpu_time_total"
            record["table"] = prof.key_averages().table(sort_by=sort, row_limit=15)
            record["events"] = len(prof.events())
        except Exception as error:
            record["error"] = f"{type(error).__name__}: {str(error)[:300]}"
        result["records"].append(record)
        save(result, out)
        print(record.get("table", record.get("error")), flush=True)


def long_layers_student(args: argparse.Namespace, longest: int, dtype: torch.dtype) -> torch.nn.Module:
    """The w64 student with long layers read by rows of more than 512 tokens (distill's long student)."""
    from transformers import BertConfig, BertModel

    import linformer_kit.models  # noqa: F401
    from linformer_kit.models.convert import from_bert
    from linformer_kit.train.distill.long import with_long_layers

    torch.manual_seed(0)
    short = BertModel(BertConfig(**MINILM, max_position_embeddings=CHUNK))
    student = from_bert(short, 128, "headwise", local_window=64, global_tokens=1, exact_length=CHUNK,
                        max_length=longest)  # fmt: skip
    return with_long_layers(student, CHUNK).to(device=args.device, dtype=dtype).eval()


def padded(rows: list[int], n: int, device: str) -> dict[str, torch.Tensor]:
    """A batch of len(rows) rows padded to n, row i holding rows[i] real tokens."""
    batch = inputs(len(rows), n, device)
    for i, real in enumerate(rows):
        batch["attention_mask"][i, real:] = 0
    return batch


def measure_syncs(args: argparse.Namespace, result: dict[str, Any], out: Path) -> None:
    import warnings

    dtype, n = getattr(torch, args.dtype), max(args.lengths)
    eager = argparse.Namespace(**{**vars(args), "compile": ["eager"]})
    models = {
        name: m for name, m in build_models(eager, max(n, 2 * CHUNK), dtype).items() if name != "original"
    }
    models["w64-long-layers"] = long_layers_student(args, max(n, 2 * CHUNK), dtype)
    for name, model in models.items():
        for kind, batch in (
            ("padded", padded([n, n // 8], n, args.device)),
            ("unpadded", inputs(2, n, args.device)),
        ):
            record: dict[str, Any] = {"mode": "syncs", "n": n, "batch": 2, "model": name, "inputs": kind}
            if args.device != "cuda":
                record["error"] = "host reads are counted on CUDA only"
            else:
                with torch.inference_mode():
                    model(**batch)  # warm: kernels compiled, masks cached
                    torch.cuda.synchronize()
                    with warnings.catch_warnings(record=True) as seen:
                        warnings.simplefilter("always")
                        torch.cuda.set_sync_debug_mode("warn")
                        try:
                            model(**batch)
                        finally:
                            torch.cuda.set_sync_debug_mode("default")
                syncs = [str(w.message)[:200] for w in seen if "synchroniz" in str(w.message)]
                record["host_reads"] = len(syncs)
                record["first"] = syncs[:3]
            keep(record, result, out)


def measure_long(args: argparse.Namespace, result: dict[str, Any], out: Path) -> None:
    dtype, n = getattr(torch, args.dtype), max(args.lengths)
    model = long_layers_student(args, max(n, 2 * CHUNK), dtype)
    short, rows = 400, max(1, args.tokens // n // 2)
    cases = {
        "mixed-padded": [padded([n] * rows + [short] * rows, n, args.device)],
        "apart": [inputs(rows, n, args.device), inputs(rows, short, args.device)],
        "long-rows-only": [inputs(rows, n, args.device)],
    }
    for name, batches in cases.items():
        record: dict[str, Any] = {"mode": "long-layers", "n": n, "batch": 2 * rows, "model": name}

        def call(batches: list[dict[str, torch.Tensor]] = batches) -> None:
            with torch.inference_mode():
                for batch in batches:
                    model(**batch)

        time_call(call, args, record)
        keep(record, result, out)


def save(result: dict[str, Any], out: Path) -> None:
    for file, text in ((out, json.dumps(result, indent=1)), (out.with_suffix(".md"), report(result))):
        tmp = file.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(file)


def report(result: dict[str, Any]) -> str:
    """Markdown: per mode, n and batch, the original's ms a call and its chunks', then each other model's
    speed-up over the original (and over chunking), with peak MiB; then the layer rows."""
    records = result["records"]
    key = {(r["mode"], r["n"], r["batch"], r["model"], r.get("method")): r for r in records}
    lines = [f"# Students on a GPU ({result['environment'].get('gpu', 'cpu')})", "",
             "Speed-up = the original's seconds a call / the model's (> 1: the model is faster); x ch: over the "
             "original on 512-token chunks, both eager or both compiled (+c). MiB: peak allocated during one call.",
             ""]  # fmt: skip
    for mode in ("inference", "train"):
        rows = [r for r in records if r["mode"] == mode and r.get("method") == "whole"]
        if not rows:
            continue
        lines += [
            f"| {mode}: n | batch | model | ms | x original | x chunks | MiB |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            suffix = "+c" if r["model"].endswith("+c") else ""
            original = key.get((mode, r["n"], r["batch"], "original" + suffix, "whole"), {}).get(
                "seconds_median"
            )
            chunks = key.get((mode, r["n"], r["batch"], "original" + suffix, "chunks"), {}).get(
                "seconds_median"
            )
            seconds = r.get("seconds_median")
            cells = [str(r["n"]), str(r["batch"]), r["model"],
                     f"{seconds * 1e3:.2f}" if seconds else r.get("error", "–")[:40],
                     f"{original / seconds:.2f}" if seconds and original else "–",
                     f"{chunks / seconds:.2f}" if seconds and chunks else "–", _mib(r.get("peak_mib"))]  # fmt: skip
            lines.append("| " + " | ".join(cells) + " |")
            if r["model"].startswith("original") and chunks:
                chunk_record = key[(mode, r["n"], r["batch"], r["model"], "chunks")]
                lines.append(f"| {r['n']} | {r['batch']} | {r['model']} chunks | {chunks * 1e3:.2f} | – | 1.00 | "
                             f"{_mib(chunk_record.get('peak_mib'))} |")  # fmt: skip
        lines.append("")
    layer = [r for r in records if r["mode"] == "layer-inference"]
    if layer:
        lines += [
            "| layer, batch 1, n | model | compile | ms | speed-up over full-sdpa, same compile | first call s |",
            "|---|---|---|---|---|---|",
        ]
        full = {r["compile"]: r.get("seconds_median") for r in layer if r["model"] == "full-sdpa"}
        for r in layer:
            seconds, reference = r.get("seconds_median"), full.get(r["compile"])
            ratio = f"{reference / seconds:.2f}" if seconds and reference else "–"
            ms = f"{seconds * 1e3:.3f}" if seconds else r.get("error", "–")[:40]
            first = f"{r['first_call_s']:.1f}" if "first_call_s" in r else "–"
            lines.append(f"| {r['n']} | {r['model']} | {r['compile']} | {ms} | {ratio} | {first} |")
        lines.append("")
    for r in records:
        if r["mode"] == "profile":
            lines += [f"## Profile: {r['model']}, n = {r['n']}, batch {r['batch']}", "", "```",
                      r.get("table", r.get("error", "")), "```", ""]  # fmt: skip
    return "\n".join(lines) + "\n"


def _mib(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def environment(device: str) -> dict[str, Any]:
    import transformers

    env: dict[str, Any] = {"torch": torch.__version__, "transformers": transformers.__version__,
                           "python": sys.version.split()[0]}  # fmt: skip
    if device == "cuda":
        env["gpu"] = torch.cuda.get_device_name()
        env["cuda"] = torch.version.cuda
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 4096])
    parser.add_argument(
        "--tokens", type=int, default=65536, help="tokens a batch (the user's batch: tokens // n)"
    )
    parser.add_argument("--min-time", type=float, default=0.05, help="seconds a sample lasts at least")
    parser.add_argument("--layer-length", type=int, default=4096)
    parser.add_argument("--students", nargs="+", default=["w64"], choices=sorted(STUDENTS))
    parser.add_argument(
        "--cores", nargs="+", default=["sdpa", "flex"], choices=("sdpa", "flex", "split", "blocked")
    )
    parser.add_argument("--compile", nargs="+", default=["eager", "default"],
                        choices=("eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs"))  # fmt: skip
    parser.add_argument(
        "--parts", nargs="+", default=["layer", "models", "blocks", "profile", "train"],
        choices=("layer", "blocks", "models", "profile", "train", "syncs", "long"),
    )  # fmt: skip
    parser.add_argument("--model-compile", nargs="+", default=["eager"],
                        choices=("eager", "default", "reduce-overhead", "max-autotune-no-cudagraphs"),
                        help="the models part: each compiles once a shape (tens of seconds each on a GPU)")  # fmt: skip
    parser.add_argument("--flex-blocks", nargs="+", default=["128x64", "128x128", "64x64"], metavar="BQxBK")
    args = parser.parse_args(argv)
    out = Path(args.out_dir) / "student_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"argv": sys.argv[1:], "environment": environment(args.device), "records": []}
    save(result, out)
    parts = {
        "layer": lambda: measure_layer(args, result, out),
        "blocks": lambda: measure_blocks(args, result, out),
        "models": lambda: measure_models(args, result, out, "inference"),
        "profile": lambda: measure_profile(args, result, out),
        "train": lambda: measure_models(args, result, out, "train"),
        "syncs": lambda: measure_syncs(args, result, out),
        "long": lambda: measure_long(args, result, out),
    }
    for part in args.parts:
        try:
            parts[part]()
        except Exception:
            result.setdefault("errors", []).append(traceback.format_exc()[-2000:])
            save(result, out)
            traceback.print_exc()
    return 0


if __name__ == "__main__":
    sys.exit(main())
