"""`linformer convert SRC DST`: a RoBERTa/BERT directory -> a ready-to-use Linformer model directory.

    linformer convert ./roberta-base ./linformer-base --projected-length 128
    linformer convert ./bert-base ./linformer-bert --projected-length 256 --sharing kv --projection conv
    linformer convert ./roberta-base ./lin --projected-length 256,256,128,128,64,64,64,64,64,64,64,64

DST gets model.safetensors, config.json (model_type "linformer") and the tokenizer files of SRC.
SRC must hold safetensors weights (pickled .bin checkpoints are refused).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import get_args, get_type_hints


def projected_length(text: str) -> int | list[int] | None:
    """argparse's form of `parse_projected_length` (its message, not "invalid value")."""
    from linformer_kit.nn import parse_projected_length

    try:
        return parse_projected_length(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    """Defaults and choices are `ConvertConfig`'s fields and their Literal types."""
    from linformer_kit.models import ConvertConfig

    defaults = {field.name: field.default for field in dataclasses.fields(ConvertConfig)}
    choices = {name: get_args(hint) for name, hint in get_type_hints(ConvertConfig).items()}
    p = argparse.ArgumentParser(
        prog="linformer convert",
        description="Copy every weight of a local RoBERTa or BERT model (safetensors) into a Linformer with "
        "the same head, add the E/F projections, and write model, config and tokenizer files to DST.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument(
        "source", metavar="SRC", help="local RoBERTa or BERT model directory (config.json + safetensors)"
    )
    p.add_argument("output_dir", metavar="DST", help="directory to write the Linformer model to")
    p.add_argument(
        "--projected-length", type=projected_length, default=defaults["projected_length"], metavar="K",
        help="k: an int, one per layer as a comma-separated list, or 'none' for full attention",
    )  # fmt: skip
    p.add_argument("--sharing", choices=choices["sharing"], default=defaults["sharing"], help="E/F sharing")
    p.add_argument(
        "--projection", choices=choices["projection"], default=defaults["projection"], help="projection kind"
    )
    p.add_argument(
        "--projection-init", choices=choices["projection_init"], default=defaults["projection_init"],
        help="initial E/F: 'window' = mean of n/k consecutive positions (identity when k = n), "
        "'default' = the from-scratch N(0, 1/n)",
    )  # fmt: skip
    p.add_argument(
        "--overwrite", action="store_true", help="replace DST if it exists and is not empty (all of it)"
    )
    return p


def main(argv: list[str]) -> int:
    from linformer_kit.models import ConvertConfig, convert_checkpoint

    config = ConvertConfig(**vars(build_parser().parse_args(argv)))
    out = convert_checkpoint(config)
    print(f"wrote a Linformer (projected_length={config.projected_length}, sharing={config.sharing}, "
          f"projection={config.projection}) to {out}")  # fmt: skip
    return 0
