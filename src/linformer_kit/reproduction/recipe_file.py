"""A recipe file read and checked: `load_recipe`, and every check it makes before any run starts.

The format is reproduction/recipe.py's docstring, and what a recipe becomes (`Recipe`, its `Run`s)
is defined there; this room turns the file's sections into runs: the pretraining runs and their
trunks, the finetuning runs (tasks x models x seeds, and from scratch), the panels, the tokenizer.
Each check raises ValueError naming the bad entry, so a typo fails here, not hours into a study.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from linformer_kit.reproduction.recipe import DRIVER_OWNED, PATH_FIELDS, PRETRAIN_OWNED, Recipe, Run


def load_recipe(path: str | Path, data_dir: str | None = None, overrides: dict | None = None) -> Recipe:
    """Read and check a recipe; `data_dir` fills in `{data}`; `overrides` replaces top-level keys (e.g. output_dir)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"recipe: no such file: {str(path)!r}")
    text = path.read_text()
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            raw = yaml.safe_load(text)
        elif path.suffix == ".json":
            raw = json.loads(text)
        else:
            raise ValueError(f"recipe: {str(path)!r} must be a .yaml, .yml or .json file")
    except (json.JSONDecodeError, ImportError) as error:
        raise ValueError(f"recipe: cannot read {str(path)!r}: {error}") from error
    if not isinstance(raw, dict):
        raise ValueError(f"recipe: {str(path)!r} must hold a mapping, got {type(raw).__name__}")
    raw = {**raw, **(overrides or {})}
    return _build(raw, data_dir)


def _build(raw: dict, data_dir: str | None) -> Recipe:
    known = {
        "tier",
        "output_dir",
        "results_dir",
        "tokenizer",
        "max_parallel",
        "pretrain",
        "finetune",
        "panels",
    }
    _no_unknown("recipe", raw, known)
    for key in ("tier", "output_dir", "results_dir"):
        if key not in raw:
            raise ValueError(f"recipe: missing {key!r}")
    if "pretrain" not in raw and not isinstance((raw.get("finetune") or {}).get("from_scratch"), dict):
        raise ValueError(
            "recipe: missing 'pretrain' (only a recipe whose finetune.from_scratch defines its models may omit it)"
        )
    max_parallel = raw.get("max_parallel", 1)
    if not isinstance(max_parallel, int) or max_parallel < 1:
        raise ValueError(f"recipe: max_parallel={max_parallel!r} must be an int >= 1")

    section = raw.get("pretrain", {"runs": {}})
    _no_unknown("pretrain", section, {"defaults", "runs"})
    runs = section.get("runs") or {}
    if not runs and "pretrain" in raw:
        raise ValueError("recipe: pretrain.runs names no run")
    pretrain = [
        Run(name, "pretrain", _options(f"pretrain.runs.{name}", section.get("defaults"),
                                       {k: v for k, v in (spec or {}).items() if k != "trunk"}, data_dir),
            trunk=_trunk(name, spec))
        for name, spec in runs.items()
    ]  # fmt: skip
    _check_trunks(pretrain)
    finetune = _finetune_runs(raw.get("finetune"), pretrain, data_dir)
    _check_panels(raw.get("panels"), {r.name for r in pretrain})
    bag_of_words = (raw.get("finetune") or {}).get("bag_of_words", False)
    if not isinstance(bag_of_words, bool):
        raise ValueError(f"recipe: finetune.bag_of_words={bag_of_words!r} must be true or false")
    recipe = Recipe(
        str(raw["tier"]), str(raw["output_dir"]), str(raw["results_dir"]), pretrain, finetune,
        max_parallel, source=raw, bag_of_words=bag_of_words, tokenizer=_tokenizer(raw.get("tokenizer")),
    )  # fmt: skip
    _check_fields(recipe)
    return recipe


def _tokenizer(value: object) -> str | None:
    """`tokenizer: DIR`: a saved tokenizer (tokenizer_config.json in it), relative like results_dir to where
    `linformer reproduce` runs; every run of the study reads it and none trains one."""
    if value is None:
        return None
    if not isinstance(value, str) or not (Path(value) / "tokenizer_config.json").is_file():
        raise ValueError(f"recipe: tokenizer {value!r} must be a folder that holds a tokenizer_config.json")
    return value


def _finetune_runs(section: dict | None, pretrain: list[Run], data_dir: str | None) -> list[Run]:
    """tasks x models x seeds; a task may name its own `models` (a subset to finetune, e.g. a variant);
    then tasks x from_scratch x seeds: a new classifier shaped as that pretraining run, no pretraining."""
    if not section:
        return []
    _no_unknown("finetune", section, {"defaults", "tasks", "models", "seeds", "from_scratch", "bag_of_words"})
    pretrained = {r.name for r in pretrain}
    section_scratch = _scratch_shapes(section.get("from_scratch"), pretrained, "finetune.from_scratch")
    seeds, tasks = section.get("seeds") or [], section.get("tasks") or {}
    if not (seeds and tasks):
        raise ValueError("recipe: finetune needs tasks, seeds, and models or from_scratch (each non-empty)")
    if not all(isinstance(s, int) for s in seeds):
        raise ValueError(f"recipe: finetune.seeds must be ints, got {seeds}")
    runs = []
    for task, spec in tasks.items():
        spec = dict(spec or {})
        models = spec.pop("models", None) or section.get("models") or []
        scratch = section_scratch
        if "from_scratch" in spec:  # a task's own list replaces the section's
            scratch = _scratch_shapes(
                spec.pop("from_scratch"), pretrained, f"finetune.tasks.{task}.from_scratch"
            )
        unknown = [m for m in models if m not in pretrained]
        if unknown:
            raise ValueError(
                f"recipe: finetune.models {unknown} are not pretraining runs {sorted(pretrained)}"
            )
        if not (models or scratch):
            raise ValueError(
                "recipe: finetune needs tasks, seeds, and models or from_scratch (each non-empty)"
            )
        options = _options(f"finetune.tasks.{task}", section.get("defaults"), spec, data_dir)
        runs += [
            Run(f"{task}-{model}-s{seed}", "finetune", {**options, "seed": seed}, task=task, model=model, seed=seed)
            for model in models for seed in seeds
        ]  # fmt: skip
        for arch, own in scratch.items():
            base = next((r.options for r in pretrain if r.name == arch), {})  # a pretraining run's shape
            shape = {**{k: base[k] for k in _architecture_fields() if k in base}, **(own or {})}
            runs += [
                Run(f"{task}-scratch-{arch}-s{seed}", "finetune", {**options, **shape, "seed": seed},
                    task=task, seed=seed, architecture=arch)
                for seed in seeds
            ]  # fmt: skip
    return runs


def _scratch_shapes(value: object, pretrained: set[str], where: str) -> dict[str, dict | None]:
    """`from_scratch` as name -> own options: a list names pretraining runs (their shapes), a mapping
    gives a name its options (on top of the pretraining run of that name, if any)."""
    if value is None:
        return {}
    if isinstance(value, list):
        unknown = [m for m in value if m not in pretrained]
        if unknown:
            raise ValueError(f"recipe: {where} {unknown} are not pretraining runs {sorted(pretrained)}")
        return dict.fromkeys(value)
    if not isinstance(value, dict):
        raise ValueError(f"recipe: {where} must list pretraining runs or map names to options, got {value!r}")
    return value


def _architecture_fields() -> tuple[str, ...]:
    """A pretraining run's fields that shape its model (a from-scratch classifier of its shape takes them):
    the preset, every `NewModelFields` field pretrain and finetune share, and how short inputs are attended."""
    from linformer_kit.train.model_fields import NewModelFields  # imported when a recipe is checked, as below

    return ("preset", *(f.name for f in dataclasses.fields(NewModelFields)), "short_inputs")


def _trunk(name: str, spec: object) -> tuple[str, int] | None:
    """A run's `trunk: {run: NAME, step: N}`: it starts at step N of run NAME (reproduction/branch.py)."""
    if not isinstance(spec, dict) or "trunk" not in spec:
        return None
    trunk = spec["trunk"]
    _no_unknown(f"pretrain.runs.{name}.trunk", trunk, {"run", "step"})
    run, step = trunk.get("run"), trunk.get("step")
    if not isinstance(run, str) or isinstance(step, bool) or not isinstance(step, int) or step < 1:
        raise ValueError(
            f"recipe: pretrain.runs.{name}.trunk must be {{run: NAME, step: N}} with N >= 1, got {trunk!r}"
        )
    return run, step


def _check_trunks(pretrain: list[Run]) -> None:
    """A trunk is another pretraining run of the recipe whose options differ in attention alone, kept at one step."""
    from linformer_kit.nn.options import OPTION_NAMES  # the Linformer options: a branch's attention

    runs = {r.name: r for r in pretrain}
    steps: dict[str, int] = {}
    for run in pretrain:
        if run.trunk is None:
            continue
        name, step = run.trunk
        trunk = runs.get(name)
        if trunk is None or trunk is run or trunk.trunk is not None:
            raise ValueError(
                f"recipe: pretrain.runs.{run.name}.trunk names {name!r}: it must be another pretraining run "
                f"without a trunk of its own, one of {sorted(n for n, r in runs.items() if r.trunk is None)}"
            )
        options = {k: v for k, v in run.options.items() if k not in OPTION_NAMES}
        theirs = {k: v for k, v in trunk.options.items() if k not in OPTION_NAMES}
        differ = sorted(k for k in options.keys() | theirs.keys() if options.get(k) != theirs.get(k))
        if differ:
            raise ValueError(
                f"recipe: pretrain.runs.{run.name} and its trunk {name!r} differ in {differ}: a branch may differ "
                f"from its trunk in attention only ({', '.join(OPTION_NAMES)})"
            )
        if steps.setdefault(name, step) != step:
            raise ValueError(
                f"recipe: {name!r} is the trunk of runs at steps {steps[name]} and {step}: a trunk keeps one step"
            )


def _check_panels(panels: object, pretrained: set[str]) -> None:
    """`panels`: plot title -> pretraining runs drawn together (results_dir/panels.png)."""
    if panels is None:
        return
    for title, names in _mapping("panels", panels).items():
        if not isinstance(names, list) or not names:
            raise ValueError(f"recipe: panels[{title!r}] must list pretraining runs, got {names!r}")
        unknown = [n for n in names if n not in pretrained]
        if unknown:
            raise ValueError(
                f"recipe: panels[{title!r}] names {unknown}, not pretraining runs {sorted(pretrained)}"
            )


def _options(where: str, defaults: dict | None, spec: dict | None, data_dir: str | None) -> dict[str, Any]:
    options = {**(defaults or {}), **(spec or {})}
    owned = [
        key for key in options if key in (PRETRAIN_OWNED if where.startswith("pretrain") else DRIVER_OWNED)
    ]
    if owned:
        raise ValueError(f"recipe: {where} sets {owned}, which the driver sets for every run")
    for key in PATH_FIELDS:
        value = options.get(key)
        if not isinstance(value, str):
            continue
        if "{data}" in value:
            if data_dir is None:
                raise ValueError(
                    f"recipe: {where}.{key} {value!r} uses {{data}}, and no data folder was given: "
                    "pass --data DIR (or set LINFORMER_DATA)"
                )
            options[key] = value = value.replace("{data}", data_dir)
        if not Path(value).exists():
            raise ValueError(f"recipe: {where}.{key}: no such file or folder: {value!r}")
    return options


def _check_fields(recipe: Recipe) -> None:
    """Every option must be a field of the verb's config: a typo fails here, not after hours."""
    from linformer_kit.train.finetune import FinetuneConfig
    from linformer_kit.train.pretrain import PretrainConfig

    fields = {
        "pretrain": {f.name for f in dataclasses.fields(PretrainConfig)},
        "finetune": {f.name for f in dataclasses.fields(FinetuneConfig)},
    }
    for run in recipe.runs:
        unknown = sorted(set(run.options) - fields[run.verb])
        if unknown:
            raise ValueError(
                f"recipe: run {run.name!r} has options {unknown} that `linformer {run.verb}` does not know"
            )


def _mapping(where: str, value: object) -> dict:
    """`value`, a mapping, or a ValueError naming `where`."""
    if not isinstance(value, dict):
        raise ValueError(f"recipe: {where} must be a mapping, got {type(value).__name__}")
    return value


def _no_unknown(where: str, mapping: object, known: set[str]) -> None:
    unknown = sorted(set(_mapping(where, mapping)) - known)
    if unknown:
        raise ValueError(f"recipe: {where} has unknown keys {unknown}; expected some of {sorted(known)}")
