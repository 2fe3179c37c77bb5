"""A study's files: where each run's directory is, and what results_dir carries from machine to machine.

    run_dir            output_dir/<verb>/<run>: a run's directory, which everything else here reads
    committed_records  the finished runs of results_dir/results.json whose options are still the recipe's
    committed_probes   the short-input probes recorded there for models pretrained elsewhere
    tokenizer_dir      the study's shared tokenizer: the recipe's folder, the first run's, or its copy
    keep_tokenizer     that copy, results_dir/tokenizer, written once the first run trained it

Apart from reproduction/study.py, which runs the study: these only read and copy files, and
`linformer reproduce` reads them without running anything too (a dry run's commands name the
shared tokenizer; the committed probes join the results).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from linformer_kit.reproduction.recipe import PATH_FIELDS, Recipe, Run

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def committed_records(recipe: Recipe) -> dict[str, dict[str, Any]]:
    """Finished runs recorded in results_dir/results.json whose options are still the recipe's.

    Paths (`train`, `validation`) may differ between machines and are not compared; a record made
    before records kept their options never matches (the run is repeated, not guessed), and a
    finetuning record holds only while its pretrained model's does.
    """
    path = Path(recipe.results_dir) / "results.json"
    if not path.is_file():
        return {}
    records = {r["name"]: r for r in json.loads(path.read_text()).get("runs", [])}
    found = {}
    for run in recipe.runs:  # pretraining first: a finetune's record holds only with its model's
        record = records.get(run.name)
        if run.model is not None and run.model not in found:
            continue
        if record and record.get("status") == "ok" and same_options(record.get("options"), run.options):
            found[run.name] = record
    return found


def committed_probes(recipe: Recipe) -> list[dict[str, Any]]:
    """The short-input probes of results_dir/results.json (of models pretrained on other machines)."""
    path = Path(recipe.results_dir) / "results.json"
    names = {r.name for r in recipe.pretrain}
    probes = json.loads(path.read_text()).get("short_input_probe") or [] if path.is_file() else []
    return [p for p in probes if p.get("name") in names]


def same_options(recorded: dict[str, Any] | None, options: dict[str, Any]) -> bool:
    if recorded is None:
        return False
    drop = set(PATH_FIELDS)
    return {k: v for k, v in recorded.items() if k not in drop} == {
        k: v for k, v in options.items() if k not in drop
    }


def tokenizer_dir(recipe: Recipe) -> Path | None:
    """Where the study's shared tokenizer is: the recipe's `tokenizer` folder when it names one, else the
    first run's directory, or its committed copy results_dir/tokenizer.

    A `tokenizer` folder is committed once and shared by the studies that would each train the same one
    (`docs/reproduction/tokenizer`: the CPU tiers' 1 k BPE); every run reads it, the first one included,
    and the study copies nothing into its results_dir (`keep_tokenizer`).
    None: the study pretrains nothing and names no tokenizer (its from-scratch runs name their kinds).
    """
    if recipe.tokenizer is not None:
        return Path(recipe.tokenizer)
    if not recipe.pretrain:
        return None
    first = run_dir(recipe, recipe.pretrain[0])
    committed = Path(recipe.results_dir) / "tokenizer"
    if not (first / "metrics.json").is_file() and (committed / "tokenizer_config.json").is_file():
        return committed
    return first


def keep_tokenizer(recipe: Recipe) -> None:
    """Copy the first run's tokenizer into results_dir/tokenizer (committed with the results), unless the
    recipe names a shared one."""
    if not recipe.pretrain or recipe.tokenizer is not None:
        return
    source, target = run_dir(recipe, recipe.pretrain[0]), Path(recipe.results_dir) / "tokenizer"
    if (target / "tokenizer_config.json").is_file() or not (source / "metrics.json").is_file():
        return
    target.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, target / name)


def run_dir(recipe: Recipe, run: Run) -> Path:
    return Path(recipe.output_dir) / run.verb / run.name
