"""`linformer <verb> ...`: parse, call one library function, print its result.

Each verb lives in its own module `linformer_kit.cli.<verb>` exposing
`add_parser(subparsers) -> argparse.ArgumentParser` and `run(args) -> int`.
Only the verb being run is imported, so `linformer --help` stays fast and a verb's heavy
dependencies (transformers, datasets, matplotlib) load only when that verb runs.
"""

from __future__ import annotations

import argparse
import importlib
import sys

VERBS: dict[str, str] = {
    "convert": "Convert a RoBERTa/BERT checkpoint into a Linformer model directory.",
    "pretrain": "Pretrain a Linformer masked language model on raw text.",
    "finetune": "Finetune a Linformer model for sequence classification.",
    "benchmark": "Speed and memory of Linformer vs full attention (the paper's Table 3).",
    "spectrum": "Singular-value spectrum of attention maps (the paper's Figure 1) and a k recommender.",
}


def build_parser(verb: str | None = None) -> argparse.ArgumentParser:
    """The full parser of `verb` (its module imported), the other verbs listed by name and summary."""
    parser = argparse.ArgumentParser(
        prog="linformer",
        description="Linformer: self-attention with linear complexity, for real work.",
    )
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, summary in VERBS.items():
        if name == verb:
            importlib.import_module(f"linformer_kit.cli.{name}").add_parser(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    verb = next((arg for arg in argv if not arg.startswith("-")), None)
    args = build_parser(verb if verb in VERBS else None).parse_args(argv)
    module = importlib.import_module(f"linformer_kit.cli.{args.verb}")
    try:
        return int(module.run(args))
    except ValueError as error:  # bad input, found by a config's or a library function's checks
        print(f"linformer {args.verb}: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
