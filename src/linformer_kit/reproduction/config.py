"""What one `linformer reproduce RECIPE` call does: the recipe, its data folder, and what to run or collect.

The fields are the CLI's flags (`cli/reproduce.py` generates it with `config_parser`); `data` defaults
to the LINFORMER_DATA environment variable, read when the config (or the parser) is made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field


def _data_from_environment() -> str | None:
    return os.environ.get("LINFORMER_DATA") or None


@dataclass(frozen=True)
class ReproduceConfig:
    """One reproduce call; `load_recipe` checks the recipe and `data` itself."""

    recipe: str = field(
        metadata={"help": "a recipe file (.yaml / .json), e.g. recipes/reproduction/cpu.yaml"}
    )
    data: str | None = field(
        default_factory=_data_from_environment,
        metadata={
            "help": "the data folder {data} stands for in the recipe, needed when the recipe uses "
            "{data}; not given: $LINFORMER_DATA",
            "metavar": "DIR",
        },
    )
    output_dir: str | None = field(
        default=None,
        metadata={"help": "where the runs go; not given: the recipe's output_dir", "metavar": "DIR"},
    )
    results_dir: str | None = field(
        default=None,
        metadata={"help": "where results go; not given: the recipe's results_dir", "metavar": "DIR"},
    )
    only: tuple[str, ...] | None = field(
        default=None,
        metadata={
            "help": "only these runs (and finetunes of these models; scratch:ARCH: the from-scratch ones)",
            "metavar": "NAME",
        },
    )
    dry_run: bool = field(
        default=False, metadata={"help": "check the recipe, print the commands, run nothing"}
    )
    collect_only: bool = field(
        default=False, metadata={"help": "run nothing; write results from the runs already finished"}
    )
    probe_lengths: tuple[int, ...] = field(
        default=(16, 32, 64, 128, 512),
        metadata={
            "help": "input lengths for the short-input probe of each pretrained model (none: skip)",
            "metavar": "N",
            "nargs": "*",
        },
    )

    def __post_init__(self) -> None:
        if not isinstance(self.recipe, str) or not self.recipe:
            raise ValueError(f"recipe must be a file path, got {self.recipe!r}")
        if self.dry_run and self.collect_only:
            raise ValueError("dry_run and collect_only exclude each other: give one")
        if self.only is not None and (not self.only or not all(isinstance(n, str) and n for n in self.only)):
            raise ValueError(f"only must name one or more runs, got {self.only!r}")
        bad = [n for n in self.probe_lengths if not isinstance(n, int) or isinstance(n, bool) or n < 1]
        if bad:
            raise ValueError(f"probe_lengths must be lengths >= 1, got {list(self.probe_lengths)}")
