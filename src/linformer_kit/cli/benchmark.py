"""`linformer benchmark`: speed and memory of Linformer vs full attention (the paper's Table 3).

    linformer benchmark --quick --output-dir runs/benchmark            # ~1 minute on a laptop CPU
    linformer benchmark --preset training --output-dir runs/training   # encoder training steps, tokens/s
    linformer benchmark --device cuda --dtype bfloat16 --output-dir runs/gpu

A preset gives the sweep; any flag given explicitly overrides that field of it.
"""

from __future__ import annotations

import argparse

from linformer_kit.bench.config import DEVICES, DTYPES, METHODS, PASS_TYPES, PRESETS, SCOPES

# flag -> config field, for the flags that override a preset
OVERRIDES = {
    "seq_lens": "seq_lens",
    "projected_lengths": "projected_lengths",
    "methods": "methods",
    "scopes": "scopes",
    "passes": "passes",
    "device": "device",
    "dtype": "dtype",
    "batch_size": "batch_size",
    "hidden_size": "hidden_size",
    "num_heads": "num_heads",
    "num_layers": "num_layers",
    "intermediate_size": "intermediate_size",
    "threads": "threads",
    "rounds": "rounds",
    "time_cap": "time_cap_s",
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="linformer benchmark",
        description="Time and peak memory of Linformer layers/encoders vs full attention (SDPA and explicit "
        "softmax) and PyPI peers; prints speed-up tables, writes JSON, Markdown and a PNG plot.",
        allow_abbrev=False,
    )
    p.add_argument("--output-dir", required=True, help="where benchmark.json, benchmark.md and the plot go")
    p.add_argument("--preset", choices=PRESETS, default="full", help="the sweep to run (default: full)")
    p.add_argument("--quick", action="store_true", help="same as --preset quick (about a minute on a CPU)")
    p.add_argument("--device", choices=DEVICES)
    p.add_argument("--dtype", choices=DTYPES)
    p.add_argument("--seq-lens", type=int, nargs="+", metavar="N", help="sequence lengths n")
    p.add_argument("--projected-lengths", type=int, nargs="+", metavar="K", help="projected lengths k")
    p.add_argument(
        "--methods", nargs="+", choices=METHODS, metavar="METHOD", help=f"from {', '.join(METHODS)}"
    )
    p.add_argument("--scopes", nargs="+", choices=SCOPES, help="one attention layer and/or the encoder stack")
    p.add_argument(
        "--passes",
        nargs="+",
        choices=PASS_TYPES,
        help="train_step: forward + backward + AdamW (encoder scope)",
    )
    p.add_argument("--batch-size", type=int)
    p.add_argument("--hidden-size", type=int, help="model dim D (default 768)")
    p.add_argument("--num-heads", type=int, help="attention heads (default 12)")
    p.add_argument("--num-layers", type=int, help="encoder blocks (default 12)")
    p.add_argument("--intermediate-size", type=int, help="encoder FFN width (default 3072)")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: torch's default)")
    p.add_argument("--rounds", type=int, help="timed rounds per case")
    p.add_argument("--time-cap", type=float, metavar="SECONDS", help="skip cases predicted slower per call")
    p.add_argument("--no-memory", action="store_true", help="skip peak-memory measurement")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    return p


def main(argv: list[str]) -> int:
    from linformer_kit.bench import preset, run_benchmark, write_report
    from linformer_kit.bench.report import format_report

    args = build_parser().parse_args(argv)
    config = preset("quick" if args.quick else args.preset)
    changes = {field: _tuple(getattr(args, flag)) for flag, field in OVERRIDES.items()}
    changes = {field: value for field, value in changes.items() if value is not None}
    if args.no_memory:
        changes["measure_memory"] = False
    changes["output_dir"] = args.output_dir  # checked with the rest, before anything is measured
    config = config.replace(**changes)
    result = run_benchmark(config, progress=not args.no_progress)
    print(format_report(result))
    paths = write_report(result, args.output_dir)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def _tuple(value: object) -> object:
    return tuple(value) if isinstance(value, list) else value
