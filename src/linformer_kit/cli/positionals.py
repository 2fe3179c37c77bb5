"""A field of a config as a positional argument of the parser `config_parser` generated from it.

    positional(parser, "source", "SRC")     # `linformer convert SRC DST`, not `--source SRC`

`HfArgumentParser` makes every field a flag; a verb whose documented form takes some of them by
position (convert's SRC DST, spectrum's MODEL) turns those flags into positional arguments here.
"""

from __future__ import annotations

import argparse


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
