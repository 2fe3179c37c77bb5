"""A field of a config as a positional argument of the parser `config_parser` generated from it.

    positional(parser, "model", "MODEL_DIR_OR_NAME")    # `linformer spectrum MODEL`, not `--model MODEL`
    source_and_destination(ConvertConfig, "convert", usage, description)    # `linformer convert SRC DST`
    verb_parser(SpectrumConfig, "spectrum", usage, description, {"model": "MODEL_DIR_OR_NAME"})

`HfArgumentParser` makes every field a flag; a verb whose documented form takes some of them by
position (convert's and extend's SRC DST, spectrum's MODEL, reproduce's RECIPE) turns those flags
into positional arguments here.
"""

from __future__ import annotations

import argparse

from transformers import HfArgumentParser

from linformer_kit.config_parser import config_parser


def positional(parser: argparse.ArgumentParser, dest: str, metavar: str) -> None:
    """Replace the generated flag of field `dest` by a required positional argument (same type and help).

    A `--config` file may still give the field (`parse_config` lifts `required` for what it gives).
    """
    action = next(action for action in parser._actions if action.dest == dest and action.option_strings)
    # argparse sets `container` on every action; typeshed's Action leaves it out
    action.container._remove_action(action)  # type: ignore[attr-defined]
    for option in action.option_strings:
        del parser._option_string_actions[option]
    # type None reads the text as it is, as str does
    parser.add_argument(dest, metavar=metavar, type=action.type or str, help=action.help)


def verb_parser(
    config_class: type, verb: str, usage: str, description: str, positionals: dict[str, str]
) -> HfArgumentParser:
    """The parser of `linformer <verb>`: every field of `config_class` a flag, but the fields named in
    `positionals` (field -> metavar, in order), given first by position."""
    parser = config_parser(config_class, prog=f"linformer {verb}", usage=usage, description=description)
    for dest, metavar in positionals.items():
        positional(parser, dest, metavar)
    return parser


def source_and_destination(config_class: type, verb: str, usage: str, description: str) -> HfArgumentParser:
    """The parser of `linformer <verb> SRC DST`, a verb that reads the model at SRC and writes one to DST
    (`convert`, `extend`): every field of `config_class` a flag, but `source` and `output_dir`, given first."""
    return verb_parser(config_class, verb, usage, description, {"source": "SRC", "output_dir": "DST"})
