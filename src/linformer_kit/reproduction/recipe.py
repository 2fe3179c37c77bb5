"""A reproduction study as data: which `linformer pretrain` / `finetune` runs, with which options.

A recipe (YAML or JSON, committed under `recipes/reproduction/`) names pretraining runs that share
`defaults`, and finetuning tasks run on some of those models with several seeds:

    tier: cpu                       # a label recorded with every result
    output_dir: runs/reproduction-cpu
    results_dir: docs/reproduction/cpu
    tokenizer: docs/reproduction/tokenizer   # optional: a committed tokenizer folder every run reads
                                    # (absent: the first pretraining run trains the study's tokenizer)
    max_parallel: 1                 # runs at a time (a GPU fits several small ones)
    panels: {"k at n = 512": [full, k128]}   # optional: curves drawn together in panels.png
    pretrain:
      defaults: {train: "{data}/gutenberg/train.jsonl.gz", preset: small, max_steps: 2000, ...}
      runs: {full: {projected_length: none}, k128: {projected_length: 128}}
    finetune:
      defaults: {num_train_epochs: 1, learning_rate: 1e-4}
      tasks: {sst2: {train: "{data}/sst2/train.tsv", ...}}
      models: [full, k128]          # names of pretraining runs (a task may name its own `models`,
                                    # and its own `from_scratch`)
      seeds: [1, 2, 3]
      from_scratch: [k128]          # the same classifier with no pretraining: TASK-scratch-k128-sSEED
                                    # (or a mapping NAME: {options}: a new shape; then `pretrain` may be absent)
      bag_of_words: true            # and a bag-of-words logistic regression per task and seed

Every option is a field of `PretrainConfig` / `FinetuneConfig` (so of the CLI) under its own name;
`{data}` is the data folder (`data_dir`; `linformer reproduce --data DIR` or $LINFORMER_DATA): a recipe
that uses it with no data folder given is refused. `load_recipe` checks all of it, every path and
every field name, before any run starts, and raises ValueError naming the bad entry
(reproduction/recipe_file.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Options the driver sets itself, per run: a recipe that sets them is refused.
DRIVER_OWNED = ("output_dir", "model", "config", "resume", "overwrite_output_dir")
# and, in pretraining runs, the tokenizer: the first run trains the one all share (a from-scratch
# finetuning run may name its own kind, `tokenizer: bytes`, or gets the study's)
PRETRAIN_OWNED = (*DRIVER_OWNED, "tokenizer")
PATH_FIELDS = ("train", "validation")


@dataclass(frozen=True)
class Run:
    """One invocation of `linformer pretrain` or `linformer finetune`."""

    name: str  # pretrain: the run name; finetune: TASK-MODEL-sSEED (TASK-scratch-ARCH-sSEED from scratch)
    verb: str  # "pretrain" | "finetune"
    options: dict[str, Any]  # PretrainConfig / FinetuneConfig fields, without the driver-owned ones
    task: str | None = None  # finetune: the task name
    model: str | None = None  # finetune: the pretraining run it starts from (None: from scratch)
    seed: int | None = None
    architecture: str | None = None  # finetune from scratch: the pretraining run whose shape it takes
    trunk: tuple[str, int] | None = None  # pretrain: (run, step) it branches from (reproduction/branch.py)

    @property
    def classifier(self) -> str:
        """What a finetuning run starts from: a pretraining run's name, or `scratch:ARCH`."""
        return str(self.model) if self.architecture is None else f"scratch:{self.architecture}"


@dataclass(frozen=True)
class Recipe:
    tier: str
    output_dir: str
    results_dir: str
    pretrain: list[Run]
    finetune: list[Run]
    max_parallel: int = 1
    source: dict[str, Any] = field(default_factory=dict)  # the recipe as written (recorded in results)
    bag_of_words: bool = False  # a bag-of-words baseline per finetuning task and seed (bag_of_words.py)
    tokenizer: str | None = None  # a committed tokenizer folder shared by studies (study_files.tokenizer_dir)

    @property
    def runs(self) -> list[Run]:
        return [*self.pretrain, *self.finetune]


def selects(run: Run, only: Sequence[str] | None) -> bool:
    """Whether `--only` names `run`: by its own name, or a finetuning run by what it starts from (a
    pretraining run's name, `scratch:ARCH`). None selects every run."""
    return only is None or run.name in only or (run.verb == "finetune" and run.classifier in only)


def check_only(recipe: Recipe, only: Sequence[str] | None) -> None:
    """ValueError naming the first of `only` that selects no run of the recipe (a typo would run nothing)."""
    known = {run.name for run in recipe.runs} | {run.classifier for run in recipe.finetune}
    unknown = [name for name in only or () if name not in known]
    if unknown:
        names = ", ".join(run.name for run in recipe.pretrain) or ", ".join(
            sorted({r.classifier for r in recipe.finetune})
        )
        raise ValueError(
            f"only: {unknown[0]!r} names no run of the recipe (tier {recipe.tier!r}); give run names "
            f"({names}, ...) or finetuning runs as `linformer reproduce RECIPE --dry-run` lists them"
        )


def trunk_steps(recipe: Recipe) -> dict[str, int]:
    """{trunk run: the step its branches start at}."""
    return {r.trunk[0]: r.trunk[1] for r in recipe.pretrain if r.trunk is not None}
