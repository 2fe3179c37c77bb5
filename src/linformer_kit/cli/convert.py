"""`linformer convert SRC DST`: a RoBERTa/BERT directory -> a ready-to-use Linformer model directory.

    linformer convert ./roberta-base ./linformer-base --projected-length 128
    linformer convert ./bert-base ./linformer-bert --projected-length 256 --sharing kv --projection conv
    linformer convert ./roberta-base ./lin --projected-length 256,256,128,128,64,64,64,64,64,64,64,64

DST gets model.safetensors, config.json (model_type "linformer") and the tokenizer files of SRC.
SRC must hold safetensors weights (pickled .bin checkpoints are refused).
"""

from __future__ import annotations

import argparse

# The choices of linformer_kit.nn (Sharing, ProjectionKind) and models.convert (ProjectionInit),
# repeated here so that `linformer --help` does not import torch; a test keeps them in sync.
SHARING_CHOICES = ("none", "headwise", "kv", "layerwise")
PROJECTION_CHOICES = ("linear", "mean", "max", "conv", "random")
PROJECTION_INIT_CHOICES = ("window", "default")


def parse_projected_length(text: str) -> int | list[int] | None:
    """'128' -> 128, '256,128' -> [256, 128] (one per layer), 'none' -> None (full attention)."""
    if text.lower() == "none":
        return None
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an int, a comma-separated list of ints or 'none', got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "convert",
        help="Convert a RoBERTa/BERT checkpoint into a Linformer model directory.",
        description="Copy every weight of a local RoBERTa or BERT model (safetensors) into a Linformer with "
        "the same head, add the E/F projections, and write model, config and tokenizer files to DST.",
    )
    p.add_argument(
        "source", metavar="SRC", help="local RoBERTa or BERT model directory (config.json + safetensors)"
    )
    p.add_argument("output_dir", metavar="DST", help="directory to write the Linformer model to")
    p.add_argument(
        "--projected-length", type=parse_projected_length, default=256,
        help="k: an int, one per layer as a comma-separated list, or 'none' for full attention (default 256)",
    )  # fmt: skip
    p.add_argument(
        "--sharing", choices=SHARING_CHOICES, default="headwise", help="E/F sharing (default headwise)"
    )
    p.add_argument(
        "--projection", choices=PROJECTION_CHOICES, default="linear", help="projection kind (default linear)"
    )
    p.add_argument(
        "--projection-init", choices=PROJECTION_INIT_CHOICES, default="window",
        help="initial E/F: 'window' = mean of n/k consecutive positions (identity when k = n), "
        "'default' = the from-scratch N(0, 1/n) (default window)",
    )  # fmt: skip
    p.add_argument(
        "--overwrite", action="store_true", help="replace DST if it exists and is not empty (all of it)"
    )
    return p


def run(args: argparse.Namespace) -> int:
    from linformer_kit.models import ConvertConfig, convert_checkpoint

    config = ConvertConfig(
        source=args.source,
        output_dir=args.output_dir,
        projected_length=args.projected_length,
        sharing=args.sharing,
        projection=args.projection,
        projection_init=args.projection_init,
        overwrite=args.overwrite,
    )
    try:
        out = convert_checkpoint(config)
    except ValueError as err:
        print(f"linformer convert: error: {err}")
        return 2
    print(f"wrote a Linformer (projected_length={config.projected_length}, sharing={config.sharing}, "
          f"projection={config.projection}) to {out}")  # fmt: skip
    return 0
