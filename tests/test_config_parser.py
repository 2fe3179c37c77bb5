"""`linformer_kit.config_parser`: a config dataclass <-> its command line, one the inverse of the other.

`parse_config(parser, render_options(options)) == Config(**options)`: the argv the study writes for a run
(`reproduction/study.py`) builds the very config the run's options describe, for a stand-in config with
every kind of value and for every run of every committed recipe.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import pytest

from linformer_kit.config_parser import config_parser, parse_config, render_options
from tests.reproduction.test_reproduce import COMMITTED_RECIPES, load_with_stand_in_data


@dataclasses.dataclass
class Every:
    """One field of each kind a config has; `k` reads the word `none` as None, as projected_length does."""

    name: str
    steps: int = 10
    rate: float = 1e-3
    bf16: bool = False
    progress: bool = (
        True  # a bool defaulting to True: `--progress false` (HfArgumentParser adds --no_progress)
    )
    sharing: Literal["none", "headwise", "kv"] = "headwise"
    lengths: tuple[int, ...] = (128, 512)
    methods: tuple[Literal["full", "linformer"], ...] = ("full",)
    train: list[str] = dataclasses.field(default_factory=lambda: ["a.txt"])
    note: str | None = None
    k: int | str | None = 8

    def __post_init__(self) -> None:
        if isinstance(self.k, str):
            self.k = None if self.k == "none" else int(self.k)


def parse(config_class: type, argv: list[str]) -> Any:
    return parse_config(config_parser(config_class, prog="test", usage=None, description=""), argv)


@pytest.mark.parametrize(
    "options",
    [
        {"name": "run"},  # every other field its default
        {"name": "run a", "steps": 0, "rate": 1e-05, "bf16": True, "progress": False, "sharing": "none",
         "lengths": (16,), "methods": ("linformer", "full"), "train": ["x y.txt", "z.jsonl.gz"],
         "note": "two  words", "k": None},
        {"name": "-1", "rate": 0.1 + 0.2, "steps": -3, "bf16": False, "progress": True, "k": 128, "note": "none "},
        {"k": "none", "lengths": (1, 2, 3), "name": "true"},  # in any order; a str field keeps the word
    ],
)  # fmt: skip
def test_parsing_the_rendered_options_builds_the_same_config(options: dict[str, Any]) -> None:
    argv = render_options(options)
    assert parse(Every, argv) == Every(**options)
    assert argv[0] == f"--{next(iter(options))}"  # the mapping's order, field names as written


def test_rendered_values_are_the_words_a_user_types() -> None:
    options = {"seq_len": 512, "train": ["a", "b"], "bf16": True, "disable_tqdm": False,
               "projected_length": None, "learning_rate": 1e-05, "lengths": (16, 32)}  # fmt: skip
    assert render_options(options) == [
        "--seq_len", "512", "--train", "a", "b", "--bf16", "true", "--disable_tqdm", "false",
        "--projected_length", "none", "--learning_rate", "1e-05", "--lengths", "16", "32",
    ]  # fmt: skip
    assert render_options({}) == []


@pytest.mark.parametrize(
    ("verb", "options"),
    [
        ("pretrain", {"train": ["books/a.txt", "books/b.jsonl.gz"], "validation": "v.txt", "preset": "tiny",
                      "seq_len": 32, "projected_length": "8,4", "local_window": None, "sharing": "kv",
                      "seq_len_schedule": "16:0.5,32:0.5", "learning_rate": 3e-4, "adam_beta2": 0.98,
                      "max_steps": 4, "save_steps": 2, "bf16": True, "disable_tqdm": True, "report_to": "none",
                      "keep_checkpoint": 2, "resume": True}),
        ("pretrain", {"train": ["t.txt"], "projected_length": None, "seq_len_schedule": "none",
                      "eval_strategy": "steps", "eval_steps": 2, "save_strategy": "no", "vocab_size": 300}),
        ("finetune", {"model": "runs/pretrain/k8", "train": "t.csv", "validation": "d.csv",
                      "text_column": "sentence", "num_train_epochs": 1.5, "per_device_train_batch_size": 8,
                      "seed": 3, "save_strategy": "no"}),
    ],
)  # fmt: skip
def test_a_training_config_parses_back_from_its_rendered_options(
    verb: str, options: dict[str, Any], tmp_path: Path
) -> None:
    from linformer_kit.train import FinetuneConfig, PretrainConfig

    config_class = {"pretrain": PretrainConfig, "finetune": FinetuneConfig}[verb]
    options = {"output_dir": str(tmp_path / "out"), **options}
    assert parse(config_class, render_options(options)) == config_class(**options)


def test_every_committed_recipe_run_parses_back_from_its_command(tmp_path: Path) -> None:
    """The study runs `linformer <verb> <render_options(command_options(...))>` (reproduction/study.py): each
    run of each committed recipe builds the config its options give (a recipe value the renderer could not
    write would differ here)."""
    from linformer_kit.reproduction.study import command, command_options
    from linformer_kit.reproduction.study_files import tokenizer_dir
    from linformer_kit.train import FinetuneConfig, PretrainConfig

    classes = {"pretrain": PretrainConfig, "finetune": FinetuneConfig}
    parsers = {
        verb: config_parser(cls, prog=verb, usage=None, description="") for verb, cls in classes.items()
    }
    checked = 0
    for path in COMMITTED_RECIPES:
        recipe = load_with_stand_in_data(path, tmp_path)
        for run in recipe.runs:
            options = command_options(recipe, run, tokenizer_dir(recipe))
            argv = command(recipe, run, tokenizer_dir(recipe))
            assert argv == ["linformer", run.verb, *render_options(options)]
            assert parse_config(parsers[run.verb], argv[2:]) == classes[run.verb](**options), run.name
            checked += 1
    assert checked > 300  # every run of every recipe (339 when this was written)
