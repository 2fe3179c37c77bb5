"""Command lines generated from a config dataclass by `HfArgumentParser`, plus `--config FILE`.

    linformer pretrain --config run.yaml --max_steps 100     # the file's options, then the flags

Every field of the config is a flag under its own name, spelled with `_` or `-` (`--output_dir`,
`--output-dir`); a bool field takes `--bf16` or `--bf16 false`; the help text and the default are
the field's. `--config FILE` reads a YAML (.yaml, .yml) or JSON (.json) mapping of field names to
values; flags given on the command line override it. A few short names stay as aliases
(`--batch-size`, `--epochs`, `--no-progress`); nothing else is hand-written here.

`--help` lists the verb's own options first (data, model, Linformer), then the Trainer options a
run usually sets (`TRAINING_ESSENTIALS`), the aliases, and last every other `TrainingArguments`
field under its own heading: the parser is the same, only the help is grouped.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import yaml
from transformers import HfArgumentParser

# Trainer fields most runs set: shown right after the verb's own options in --help
TRAINING_ESSENTIALS: tuple[str, ...] = (
    "output_dir", "max_steps", "num_train_epochs", "per_device_train_batch_size", "per_device_eval_batch_size",
    "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay",
    "adam_beta2", "bf16", "seed", "eval_strategy", "eval_steps", "save_steps", "save_total_limit",
    "logging_steps", "report_to",
)  # fmt: skip

# short flag -> (field, argparse options): the names of the first CLI, kept because scripts use them
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "--batch-size": ("per_device_train_batch_size", {"type": int, "metavar": "N"}),
    "--epochs": ("num_train_epochs", {"type": float, "metavar": "E"}),
    "--no-progress": ("disable_tqdm", {"action": "store_const", "const": True}),
}


def config_parser(config_class: type, prog: str, usage: str | None, description: str) -> HfArgumentParser:
    """The parser of every field of the dataclass `config_class` and `--config FILE`.

    Any config dataclass works (Literal fields become choices, bools `--flag [true|false]`, tuples and
    lists `nargs`); a `TrainingArguments` subclass also gets the short aliases and its help grouped.
    """
    from transformers import TrainingArguments

    parser = HfArgumentParser(
        config_class, prog=prog, usage=usage, description=description, allow_abbrev=False
    )
    parser.add_argument(
        "--config", metavar="FILE", help="YAML or JSON file of options (flags on the command line win)"
    )
    if not issubclass(config_class, TrainingArguments):
        return parser
    essentials = parser.add_argument_group("training (the Trainer options most runs set)")
    aliases = parser.add_argument_group("short aliases")
    for flag, (name, options) in ALIASES.items():
        aliases.add_argument(flag, dest=name, default=argparse.SUPPRESS, help=f"= --{name}", **options)
    others = parser.add_argument_group("every other Trainer option (transformers.TrainingArguments)")
    _group_trainer_options(parser, essentials, others)
    return parser


def _group_trainer_options(
    parser: argparse.ArgumentParser, essentials: argparse._ArgumentGroup, others: argparse._ArgumentGroup
) -> None:
    """Move the Trainer's fields out of the first help section into `essentials` and `others`."""
    from transformers import TrainingArguments

    trainer_fields = {field.name for field in dataclasses.fields(TrainingArguments)}
    for action in list(parser._optionals._group_actions):  # help layout only: parsing is unchanged
        if action.dest not in trainer_fields:
            continue
        parser._optionals._group_actions.remove(action)
        group = essentials if action.dest in TRAINING_ESSENTIALS else others
        group._group_actions.append(action)
    essentials._group_actions.sort(key=lambda action: TRAINING_ESSENTIALS.index(action.dest))


def parse_config(parser: HfArgumentParser, argv: list[str]) -> Any:
    """argv (and the `--config` file it names) -> one validated config; ValueError names a bad value."""
    (config_class,) = parser.dataclass_types
    names = {field.name for field in dataclasses.fields(config_class) if field.init}
    peek = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    peek.add_argument("--config")
    config_file = peek.parse_known_args(argv)[0].config
    if config_file is not None:
        parser.set_defaults(**read_config_file(config_file, names, parser.prog))
    values = vars(parser.parse_args(argv))  # argparse errors exit here (code 2, on stderr)
    return config_class(**{name: value for name, value in values.items() if name in names})


def read_config_file(path: str, names: set[str], prog: str) -> dict[str, Any]:
    """A YAML / JSON mapping of field names (`-` or `_`) to values, every name checked."""
    file = Path(path)
    if not file.is_file():
        raise ValueError(f"config: no such file: {path!r}")
    if file.suffix not in (".yaml", ".yml", ".json"):
        raise ValueError(f"config: {path!r} is not a .yaml, .yml or .json file")
    text = file.read_text()
    try:
        values = json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        raise ValueError(f"config: {path!r} does not parse: {error}") from None
    if not isinstance(values, dict):
        raise ValueError(f"config: {path!r} must hold a mapping of option names to values")
    values = {str(key).replace("-", "_"): value for key, value in values.items()}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(f"config: {path!r}: unknown options {unknown} (see `{prog} --help`)")
    return values
