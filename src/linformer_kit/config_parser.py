"""A typed config dataclass <-> its command line: the parser built from its fields, and the argv of values.

    parser = config_parser(PretrainConfig, prog="linformer pretrain", usage=None, description="...")
    config = parse_config(parser, ["--config", "run.yaml", "--max_steps", "100"])  # the file, then the flags
    parse_config(parser, render_options(options)) == PretrainConfig(**options)    # one's inverse the other

Every field of the config is a flag under its own name, spelled with `_` or `-` (`--output_dir`,
`--output-dir`); a bool field takes `--bf16` or `--bf16 false`; the help text and the default are
the field's. `--config FILE` reads a YAML (.yaml, .yml) or JSON (.json) mapping of field names to
values; flags given on the command line override it. A few short names stay as aliases
(`--batch-size`, `--epochs`, `--no-progress`); nothing else is hand-written here. A caller may add
aliases of its own (`linformer benchmark --time-cap`).

`--help` lists the config's own options first (data, model, Linformer), then the Trainer options a
run usually sets (`TRAINING_ESSENTIALS`), the aliases, and last every other `TrainingArguments`
field under its own heading: the parser is the same, only the help is grouped.

`render_options` writes field values as the argv that parses back to them: the study
(`reproduction/study.py`) renders each run's options into the `linformer pretrain` / `finetune`
command it runs, and parses a branch's command back into the config that run will build.

Why here, at the top of the package beside `output_dir.py` and `data_files.py`: both `cli/` (every
verb's flags) and `reproduction/` (a run's command, rendered and parsed back) need it, and the layer
below the study must not import the CLI. It imports nothing of ours, only `transformers.HfArgumentParser`
(argparse over dataclasses; it loads neither torch nor `TrainingArguments`, so `--help` stays fast) and
yaml, so any layer may use it; `train/` would be wrong, as `bench/` and `analysis/` configs are parsed
too and `train/` is the layer of torch and the Trainer.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NoReturn, Union, get_args, get_origin, get_type_hints

import yaml
from transformers import HfArgumentParser
from transformers.hf_argparser import DataClassType

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


def config_parser(
    config_class: type,
    prog: str,
    usage: str | None,
    description: str,
    *,
    aliases: dict[str, tuple[str, dict[str, Any]]] | None = None,
) -> HfArgumentParser:
    """The parser of every field of the dataclass `config_class` and `--config FILE`.

    Any config dataclass works (Literal fields become choices, bools `--flag [true|false]`, tuples and
    lists `nargs`; a field's metadata `help`, `metavar` and `nargs` go to its flag). `aliases` maps
    more flags to fields (default: `ALIASES` for a `TrainingArguments` subclass, whose help is also
    grouped; none otherwise).
    """
    trainer = is_training_arguments(config_class)
    parser = SuggestingParser(
        DataClassType(config_class), prog=prog, usage=usage, description=description, allow_abbrev=False
    )
    tuples = _tuple_fields(config_class)  # HfArgumentParser knows list fields only
    for field in dataclasses.fields(config_class):
        if field.name in tuples:
            _take_a_tuple(parser._option_string_actions[f"--{field.name}"], tuples[field.name], field)
    parser.add_argument(
        "--config", metavar="FILE", help="YAML or JSON file of options (flags on the command line win)"
    )
    essentials = (
        parser.add_argument_group("training (the Trainer options most runs set)") if trainer else None
    )
    aliases = ALIASES if aliases is None and trainer else aliases or {}
    if aliases:
        group = parser.add_argument_group("short aliases")
        for flag, (name, options) in aliases.items():
            group.add_argument(
                flag, dest=name, default=argparse.SUPPRESS, **{"help": f"= --{name}", **options}
            )
    if essentials is not None:
        others = parser.add_argument_group("every other Trainer option (transformers.TrainingArguments)")
        _group_trainer_options(parser, essentials, others)
    return parser


def is_training_arguments(config_class: type) -> bool:
    """Whether `config_class` is a `transformers.TrainingArguments`, without importing it for a class that
    is not: that import (torch, and peft where installed) is most of a verb's start-up time."""
    return any(
        base.__name__ == "TrainingArguments" and base.__module__ == "transformers.training_args"
        for base in config_class.__mro__
    )


class SuggestingParser(HfArgumentParser):
    """`HfArgumentParser` whose "unrecognized arguments" error names the closest flags (difflib).

    `linformer pretrain --projected-lenght 64` -> `unrecognized arguments: --projected-lenght 64
    (--projected-lenght: did you mean --projected-length?)`. The suggestion keeps the spelling the
    user chose (`-` or `_`), among every option string of the parser, the aliases included.
    Python 3.14's argparse has `suggest_on_error` for choices; this covers unknown flags on 3.10 too.
    """

    def error(self, message: str) -> NoReturn:
        prefix = "unrecognized arguments: "
        if message.startswith(prefix):
            hints = [
                f"{flag}: did you mean {' or '.join(close)}?"
                for flag in message[len(prefix) :].split()
                if flag.startswith("--") and (close := self.close_flags(flag.split("=", 1)[0]))
            ]
            if hints:
                message += f" ({'; '.join(hints)})"
        super().error(message)

    def close_flags(self, flag: str, n: int = 2) -> list[str]:
        """Up to n option strings near `flag`, closest first, one per option (a field's `--a_b` and
        `--a-b` are one option; the spelling nearer to `flag` is the one named)."""
        options = [option for option in self._option_string_actions if option.startswith("--")]
        found: list[str] = []
        seen: set[int] = set()
        for close in difflib.get_close_matches(flag, options, n=4 * n, cutoff=0.75):
            action = self._option_string_actions[close]
            if id(action) not in seen:
                seen.add(id(action))
                found.append(close)
        return found[:n]


def _tuple_fields(config_class: type) -> dict[str, Any]:
    """field name -> element type, for the fields typed `tuple[X, ...]` (or `tuple[X, ...] | None`)."""
    found = {}
    for name, hint in get_type_hints(config_class).items():
        if get_origin(hint) in (Union, types.UnionType):
            hint = next((arg for arg in get_args(hint) if arg is not type(None)), hint)
        if get_origin(hint) is tuple:
            found[name] = get_args(hint)[0]
    return found


def _take_a_tuple(action: argparse.Action, element: Any, field: dataclasses.Field) -> None:
    """`--seq-lens 512 1024`: nargs (the field's metadata's, else "+") of the element type or choices.

    HfArgumentParser would call `tuple[int, ...]` on the text, splitting it into characters.
    """
    action.nargs = field.metadata.get("nargs", "+")
    if get_origin(element) is Literal:
        action.choices = get_args(element)
        action.type = type(action.choices[0])
    else:
        action.type = element


def _group_trainer_options(
    parser: argparse.ArgumentParser, essentials: argparse._ArgumentGroup, others: argparse._ArgumentGroup
) -> None:
    """Move the Trainer's fields out of the first help section into `essentials` and `others`."""
    from transformers import TrainingArguments  # imported already: the config is one (is_training_arguments)

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
        from_file = read_config_file(config_file, names, parser.prog)
        parser.set_defaults(**from_file)
        for action in parser._actions:  # a required flag the file gives is no longer required
            action.required = action.required and action.dest not in from_file
    values = vars(parser.parse_args(argv))  # argparse errors exit here (code 2, on stderr)
    tuples = _tuple_fields(config_class)  # nargs and the file's lists -> the field's tuple
    config = config_class(**{name: _as_tuple(value) if name in tuples else value
                             for name, value in values.items() if name in names})  # fmt: skip
    refuse_given = getattr(config, "refuse_given", None)
    if refuse_given is not None:  # options a config takes only beside another: typed at their default too
        refuse_given((typed_options(parser, argv) | set(from_file if config_file else ())) & names)
    return config


def typed_options(parser: HfArgumentParser, argv: list[str]) -> set[str]:
    """The fields argv sets (typed, whatever their value): argv parsed again with every default suppressed,
    so that only what was typed lands in the namespace. A value alone cannot tell `--long-tune layers` (the
    default) from no flag."""
    saved = [(action, action.default, action.required) for action in parser._actions]
    try:
        for action, _, _ in saved:
            action.default, action.required = argparse.SUPPRESS, False
        return set(vars(parser.parse_known_args(argv)[0]))
    finally:
        for action, default, required in saved:
            action.default, action.required = default, required


def _as_tuple(value: Any) -> Any:
    """A tuple field's value: a list (flags, a file's list) or one scalar (a file's `seq_lens: 1024`)."""
    if isinstance(value, (list, tuple)):
        return tuple(value)
    return value if value is None else (value,)


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


def render_options(options: Mapping[str, Any]) -> list[str]:
    """Field name -> value, as the argv `parse_config` reads back into those values, in the mapping's order.

    `{"seq_len": 512, "train": ["a", "b"], "bf16": True, "projected_length": None}` ->
    `--seq_len 512 --train a b --bf16 true --projected_length none`. A list or tuple is its items
    (a field's `nargs`); a bool `true` / `false`; None the word `none`, which the fields that may be
    None read as None (`--projected-length none`, `--local-window none`); anything else its `str()`,
    exact for a float (`0.30000000000000004`). Two values have no argv of their own: a text that
    begins with `-` and is no number (argparse takes it for a flag), and a list for a field of one
    word (`projected_length: [256, 128]`; its text is `256,128`). tests/test_config_parser.py checks
    that every run of every committed recipe renders to the config its options give.
    """
    argv: list[str] = []
    for key, value in options.items():
        argv.append(f"--{key}")
        if isinstance(value, list | tuple):
            argv += [str(v) for v in value]
        elif value is None:
            argv.append("none")
        elif isinstance(value, bool):
            argv.append("true" if value else "false")
        else:
            argv.append(str(value))
    return argv
