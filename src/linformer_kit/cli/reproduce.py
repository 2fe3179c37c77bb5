"""`linformer reproduce RECIPE`: run a reproduction study (a recipe of `pretrain` / `finetune` runs).

    linformer reproduce recipes/reproduction/cpu.yaml --data ../shared/data  # the CPU tier
    linformer reproduce recipes/reproduction/gpu.yaml --data /data           # the GPU tier
    linformer reproduce RECIPE --data DIR --dry-run       # check it and print the commands

`{data}` in a recipe's paths stands for the data folder: `--data DIR`, or the LINFORMER_DATA
environment variable when --data is not given; a recipe that uses `{data}` without either is refused.

Runs already finished (metrics.json in their directory) are not run again: rerun the same command to
continue an interrupted study. Results go to the recipe's results_dir (results.json, results.md, plot).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="linformer reproduce", description=__doc__.splitlines()[0])
    parser.add_argument("recipe", help="a recipe file (.yaml / .json), e.g. recipes/reproduction/cpu.yaml")
    parser.add_argument(
        "--data",
        metavar="DIR",
        default=os.environ.get("LINFORMER_DATA") or None,
        help="the data folder {data} stands for in the recipe (default: $LINFORMER_DATA; "
        "required when the recipe uses {data})",
    )
    parser.add_argument("--output-dir", help="where the runs go (default: the recipe's output_dir)")
    parser.add_argument("--results-dir", help="where results go (default: the recipe's results_dir)")
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help="only these runs (and finetunes of these models)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check the recipe, print the commands, run nothing"
    )
    parser.add_argument(
        "--collect-only",
        action="store_true",
        help="run nothing; write results from the runs already finished",
    )
    parser.add_argument("--probe-lengths", type=int, nargs="*", default=[16, 32, 64, 128, 512],
                        help="input lengths for the short-input probe of each pretrained model (none: skip)")  # fmt: skip
    return parser


def main(argv: list[str]) -> int:
    from linformer_kit.reproduction import collect, command, load_recipe, run_study, write_results
    from linformer_kit.reproduction.short_input_probe import probe_study

    args = build_parser().parse_args(argv)
    overrides = {k: v for k, v in (("output_dir", args.output_dir), ("results_dir", args.results_dir)) if v}
    recipe = load_recipe(args.recipe, args.data, overrides)
    if args.dry_run:
        for run in recipe.runs:
            print(shlex.join(command(recipe, run, recipe.pretrain[0])))
        return 0
    outcomes = run_study(recipe, only=args.only, run=not args.collect_only)
    import torch

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    results = collect(recipe, outcomes, device)
    if args.probe_lengths:
        results["short_input_probe"] = probe_study(recipe, outcomes, args.probe_lengths)
    paths = write_results(results, recipe.results_dir)
    failed = [o.run.name for o in outcomes if o.returncode != 0]
    print(f"reproduce: {len(outcomes) - len(failed)}/{len(outcomes)} runs have results; wrote "
          + ", ".join(str(p) for p in paths))  # fmt: skip
    if failed:
        print(f"linformer reproduce: error: runs without results: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
