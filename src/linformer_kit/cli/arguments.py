"""The training verbs' command lines (`pretrain`, `finetune`, `distill`) and their summary lines.

    build_parser, main = training_verb("pretrain", summary)    # cli/pretrain.py

Each verb's flags are generated from its config by `linformer_kit.config_parser` (the parser of a
config dataclass, `--config FILE`, the short aliases and the grouped `--help`; re-exported here for
the verbs and tests that import it from here). What stays here is the CLI's own: each training
verb's usage line and description (`TRAINING_VERBS`), the run that prints one summary line on rank 0,
and the pieces of those lines the verbs share.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import Any

from transformers import HfArgumentParser

from linformer_kit.config_parser import config_parser as config_parser
from linformer_kit.config_parser import parse_config as parse_config

# The verbs that train: verb -> (its config class in linformer_kit.train.<verb>, usage line, description).
# Their run function is linformer_kit.train.<verb>.<verb>; their summary line is the verb module's.
TRAINING_VERBS: dict[str, tuple[str, str, str]] = {
    "pretrain": (
        "PretrainConfig",
        "linformer pretrain --train PATH [PATH ...] --output-dir DIR [--config FILE] [--OPTION VALUE ...]",
        "Masked-LM pretraining with the Hugging Face Trainer; every Trainer option is a flag. "
        "Also runs under torchrun / accelerate launch.",
    ),
    "finetune": (
        "FinetuneConfig",
        "linformer finetune (--model DIR | --preset NAME --tokenizer bytes|word|DIR) --output-dir DIR "
        "(--train FILE --validation FILE | --dataset NAME | --glue-task TASK) [--config FILE] [--OPTION VALUE ...]",
        "Sequence classification with the Hugging Face Trainer, of a pretrained model or of a "
        "new one trained from scratch; reports dev accuracy (and F1). Every Trainer option is a flag.",
    ),
    "distill": (
        "DistillConfig",
        "linformer distill --teacher DIR --train PATH [PATH ...] --output-dir DIR [--OPTION VALUE ...]",
        "Convert a pretrained encoder to a Linformer and distil it from the original with the Hugging "
        "Face Trainer: end to end by default (attention transfer first with --attention-steps N); every "
        "Trainer option is a flag.",
    ),
}


def training_verb(
    verb: str, summary: Callable[[Any], str]
) -> tuple[Callable[[], HfArgumentParser], Callable[[list[str]], int]]:
    """`build_parser` and `main` of the training verb `verb` (`TRAINING_VERBS`): the flags of its config
    class, and a run of `linformer_kit.train.<verb>.<verb>` that prints `summary(result)` (rank 0).

    Both import the training module only when called: `linformer --help` stays fast.
    """
    config, usage, description = TRAINING_VERBS[verb]

    def build_parser() -> HfArgumentParser:
        config_class = getattr(importlib.import_module(f"linformer_kit.train.{verb}"), config)
        return config_parser(config_class, prog=f"linformer {verb}", usage=usage, description=description)

    def main(argv: list[str]) -> int:
        train = getattr(importlib.import_module(f"linformer_kit.train.{verb}"), verb)
        return run_training_verb(build_parser(), train, summary, argv)

    return build_parser, main


def run_training_verb(
    parser: HfArgumentParser, train: Callable[[Any], Any], summary: Callable[[Any], str], argv: list[str]
) -> int:
    """`linformer pretrain` / `finetune`: parse argv into the config, train, print one summary line.

    Under torchrun / accelerate launch every process trains; only rank 0 prints.
    """
    result = train(parse_config(parser, argv))
    if os.environ.get("RANK", "0") == "0":
        print(summary(result))
    return 0


def train_loss_text(result: Any) -> str:
    """`train loss 2.345`, and after a resume which steps that mean covers (the Trainer's covers this
    invocation's steps only: `train loss 2.345 (steps 1001-2000, resumed at step 1000)`)."""
    text = f"train loss {result.train_loss:.3f}"
    start = getattr(result, "resumed_from_step", 0)
    return text + (f" (steps {start + 1}-{result.steps}, resumed at step {start})" if start else "")


def tokens_per_second(result: Any) -> str:
    """`12,345 tokens/s` of a training result, or `tokens/s n/a` when it was not measured."""
    return f"{result.tokens_per_second:,.0f} tokens/s" if result.tokens_per_second else "tokens/s n/a"
