"""`linformer longdocs MODEL --original DIR --output-dir DIR`: long documents, the model against chunking.

    linformer longdocs runs/distill/minilm-long --original runs/models/all-MiniLM-L6-v2 \
        --data ../shared/data --output-dir runs/longdocs --lengths 256 512 1024 2048 4096

The flags are the fields of `LongDocsConfig` (longdocs/config.py); MODEL is its `model` field, given
first. Writes DIR/longdocs.json (every record), DIR/longdocs.md (the table) and DIR/longdocs.png.
"""

from __future__ import annotations

from transformers import HfArgumentParser

from linformer_kit.cli.positionals import verb_parser
from linformer_kit.config_parser import parse_config


def build_parser() -> HfArgumentParser:
    from linformer_kit.longdocs.config import LongDocsConfig

    return verb_parser(
        LongDocsConfig,
        "longdocs",
        usage="linformer longdocs MODEL_DIR --output-dir DIR [--original DIR] [--data DIR] [--OPTION VALUE ...]",
        description="Passkey, needle, long IMDB reviews and book / article halves at every length: the model "
        "reading the whole text against the original truncated, on 512-token chunks (mean, best), late "
        "chunking and full attention with copied positions; accuracy and seconds per document.",
        positionals={"model": "MODEL_DIR"},
    )


def main(argv: list[str]) -> int:
    config = parse_config(build_parser(), argv)
    # after parsing: `--help` and a bad flag answer without loading torch
    from linformer_kit.longdocs.report import table, write_report
    from linformer_kit.longdocs.suite import run_suite

    records = run_suite(config)
    paths = write_report(config.output_dir)
    print(table([r.__dict__ for r in records]), end="")
    for path in paths.values():
        print(f"wrote {path}")
    return 0
