"""`linformer reproduce RECIPE`: run a reproduction study (a recipe of `pretrain` / `finetune` runs).

    linformer reproduce recipes/reproduction/cpu.yaml --data ../shared/data  # the CPU tier
    linformer reproduce recipes/reproduction/gpu.yaml --data /data           # the GPU tier
    linformer reproduce RECIPE --data DIR --dry-run       # check it and print the commands

`{data}` in a recipe's paths stands for the data folder: `--data DIR`, or the LINFORMER_DATA
environment variable when --data is not given; a recipe that uses `{data}` without either is refused.

Runs already finished (metrics.json in their directory) are not run again: rerun the same command to
continue an interrupted study. Results go to the recipe's results_dir (results.json, results.md, plot).

The flags are the fields of `ReproduceConfig` (`--data`, `--only`, `--dry-run`, `--probe-lengths`, ...,
and `--config FILE`); RECIPE is its `recipe` field.
"""

from __future__ import annotations

import shlex
import sys

from transformers import HfArgumentParser

from linformer_kit.cli.positionals import verb_parser
from linformer_kit.config_parser import parse_config


def build_parser() -> HfArgumentParser:
    """The flags of `ReproduceConfig`; RECIPE is its `recipe` field, given first."""
    from linformer_kit.reproduction import ReproduceConfig

    return verb_parser(
        ReproduceConfig,
        "reproduce",
        usage="linformer reproduce RECIPE [--data DIR] [--dry-run | --collect-only] [--OPTION VALUE ...]",
        description=__doc__.splitlines()[0],
        positionals={"recipe": "RECIPE"},
    )


def main(argv: list[str]) -> int:
    from linformer_kit.reproduction import collect, command, load_recipe, run_study, write_results
    from linformer_kit.reproduction.recipe import check_only, selects
    from linformer_kit.reproduction.short_input_probe import probe_study
    from linformer_kit.reproduction.study_files import committed_probes, tokenizer_dir

    config = parse_config(build_parser(), argv)
    overrides = {
        k: v for k, v in (("output_dir", config.output_dir), ("results_dir", config.results_dir)) if v
    }
    recipe = load_recipe(config.recipe, config.data, overrides)
    only = list(config.only) if config.only is not None else None
    check_only(recipe, only)
    if config.dry_run:
        for run in recipe.runs:
            if selects(run, only):
                print(shlex.join(command(recipe, run, tokenizer_dir(recipe))))
        return 0
    outcomes = run_study(recipe, only=only, run=not config.collect_only)
    import torch

    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    results = collect(recipe, outcomes, device)
    probes = probe_study(recipe, outcomes, list(config.probe_lengths)) if config.probe_lengths else []
    probed = {p["name"] for p in probes}  # models whose weights are here; the rest as committed
    probes += [p for p in committed_probes(recipe) if p["name"] not in probed]
    if probes:
        results["short_input_probe"] = probes
    paths = write_results(results, recipe.results_dir)
    failed = [o.run.name for o in outcomes if o.selected and o.returncode != 0]
    done = sum(o.returncode == 0 for o in outcomes)
    print(f"reproduce: {done}/{len(outcomes)} runs have results; wrote "
          + ", ".join(str(p) for p in paths))  # fmt: skip
    if failed:
        print(f"linformer reproduce: error: runs without results: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
