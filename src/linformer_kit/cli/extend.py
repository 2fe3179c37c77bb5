"""`linformer extend SRC DST --max-length N`: a saved Linformer -> the same model reading N tokens.

    linformer extend runs/distill/minilm-k128-w64-g1 runs/distill/minilm-k128-w64-g1-2048 --max-length 2048

Every weight and Linformer option of SRC is kept; the position table grows (position p takes the trained
row of p mod SRC's longest input, or `--new-positions random`) and E, F are sized for N, starting per the
model's projection_init (models/extend.py). DST gets the model, SRC's tokenizer files and its
sentence-transformers pipeline, all reading N tokens. A RoBERTa / BERT source is `linformer convert`'s.
"""

from __future__ import annotations

from transformers import HfArgumentParser

from linformer_kit.cli.positionals import source_and_destination
from linformer_kit.config_parser import parse_config


def build_parser() -> HfArgumentParser:
    """Flags, defaults, choices and help are `ExtendConfig`'s fields; SRC and DST are positional."""
    from linformer_kit.models.extend import ExtendConfig

    return source_and_destination(
        ExtendConfig,
        "extend",
        usage="linformer extend SRC DST --max-length N [--new-positions copy|random] [--overwrite]",
        description="Write the Linformer at SRC, every weight and option kept, sized for inputs of up to N "
        "tokens (longer position table, E and F sized for N) to DST, with its tokenizer files.",
    )


def main(argv: list[str]) -> int:
    from linformer_kit.models.extend import extend_checkpoint

    config = parse_config(build_parser(), argv)
    out = extend_checkpoint(config)
    print(f"wrote the Linformer of {config.source} reading up to {config.max_length} tokens to {out}")
    return 0
