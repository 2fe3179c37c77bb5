"""`linformer <verb> ...`: parse, call one library function, print its result.

Each verb lives in its own module `linformer_kit.cli.<verb>` exposing `main(argv) -> int`, where
argv is what follows the verb. Only the verb being run is imported, so `linformer --help` stays
fast and a verb's heavy dependencies (transformers, datasets, matplotlib) load only when it runs.

Errors go to stderr with exit code 2, as `linformer <verb>: error: ...`: argparse's own (unknown
flag, bad choice) and the ValueError a config raises when it checks its values. A training run that
stops for a reason of its own says `linformer <verb>: stopped: ...` with the status of that reason:
75 preempted (SIGTERM / SIGUSR1; resume), 65 non-finite loss, 74 disk full (train/guards.py).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from contextlib import suppress
from importlib.metadata import PackageNotFoundError, version

from linformer_kit import __version__
from linformer_kit.allocator import reuse_freed_memory
from linformer_kit.stopped import RunStopped

VERBS: dict[str, str] = {
    "convert": "Convert a RoBERTa/BERT checkpoint into a Linformer model directory.",
    "extend": "Write a saved Linformer sized for longer inputs, its weights and options kept.",
    "pretrain": "Pretrain a Linformer masked language model on raw text.",
    "finetune": "Finetune a Linformer model for sequence classification.",
    "distill": "Make a Linformer from a pretrained encoder, distilled from it (keeps its quality).",
    "benchmark": "Speed and memory of Linformer vs full attention (the paper's Table 3).",
    "longdocs": "Long documents: a long encoder against truncation and 512-token chunks, each timed.",
    "spectrum": "Singular-value spectrum of attention maps (the paper's Figure 1) and a k recommender.",
    "reproduce": "Run a reproduction study: a recipe of pretrain / finetune runs, tables and plots.",
    "lra": "Prepare Long Range Arena data (ListOps, byte-level IMDB text) as TSV files.",
}


def version_line() -> str:
    """`linformer-kit 0.1.0 (torch 2.13.0, transformers 5.23.0)`: what a bug report needs."""
    found = []
    for package in ("torch", "transformers"):
        with suppress(PackageNotFoundError):
            found.append(f"{package} {version(package)}")
    return f"linformer-kit {__version__} ({', '.join(found)})"


def build_parser() -> argparse.ArgumentParser:
    """The top level: the verbs by name and summary, `--help`, `--version`."""
    parser = argparse.ArgumentParser(
        prog="linformer",
        description="Linformer: self-attention with linear complexity, for real work.",
        epilog="`linformer VERB --help` lists the options of a verb.",
    )
    parser.add_argument("--version", action="version", version=version_line())
    subparsers = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
    for name, summary in VERBS.items():
        subparsers.add_parser(name, help=summary, add_help=False)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    verb = build_parser().parse_args(argv[:1]).verb  # --help, --version and a bad verb exit here
    reuse_freed_memory()  # every verb trains, measures or converts on the CPU (allocator.py)
    module = importlib.import_module(f"linformer_kit.cli.{verb}")
    progress = logging.StreamHandler(sys.stdout)  # the library's INFO lines (e.g. what a run will do)
    progress.setFormatter(logging.Formatter("%(message)s"))
    ours = logging.getLogger("linformer_kit")
    level, propagate = ours.level, ours.propagate
    ours.addHandler(progress)
    ours.setLevel(logging.INFO)
    ours.propagate = False  # printed once, here, even where the root logger has a handler too
    try:
        return int(module.main(argv[1:]))
    except RunStopped as error:  # preempted, non-finite loss, full disk: its own status (train/guards.py)
        print(f"linformer {verb}: stopped: {error}", file=sys.stderr)
        return error.exit_status
    except ValueError as error:  # a bad value, named by the config that checked it
        print(f"linformer {verb}: error: {error}", file=sys.stderr)
        return 2
    finally:
        ours.removeHandler(progress)
        ours.setLevel(level)
        ours.propagate = propagate


if __name__ == "__main__":
    sys.exit(main())
