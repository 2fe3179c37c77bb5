"""`linformer finetune`: sequence classification (single sentences or pairs) from a model directory.

linformer finetune --model runs/mlm --train sst2/train.tsv --validation sst2/dev.tsv --output-dir runs/sst2
"""

from __future__ import annotations

import argparse
import os


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from linformer_kit.train.finetune import GLUE_TASKS

    parser = subparsers.add_parser(
        "finetune",
        help="Finetune a Linformer model for sequence classification.",
        description="Sequence classification with the Hugging Face Trainer; reports dev accuracy (and F1).",
    )
    parser.add_argument("--model", required=True, metavar="DIR", help="a pretrained model directory")
    parser.add_argument("--output-dir", required=True, metavar="DIR")
    data = parser.add_argument_group("data (local files, a Hub dataset, or a GLUE task)")
    data.add_argument("--train", metavar="PATH", help="CSV / TSV / JSONL training file")
    data.add_argument(
        "--validation", metavar="PATH", help="CSV / TSV / JSONL dev file (accuracy is reported on it)"
    )
    data.add_argument(
        "--dataset", metavar="NAME[:CONFIG]", help="a Hub dataset with train / validation splits"
    )
    data.add_argument(
        "--glue-task", choices=list(GLUE_TASKS), help="a GLUE task from the Hub (columns preset)"
    )
    data.add_argument("--text-column", default="sentence")
    data.add_argument(
        "--text-pair-column", metavar="C", help="second sentence of pair tasks (QNLI, QQP, ...)"
    )
    data.add_argument("--label-column", default="label")
    data.add_argument(
        "--max-length", type=int, help="tokens per example (default: min(128, the model's limit))"
    )
    data.add_argument("--max-train-samples", type=int, help="train on a seeded random subset of this size")
    train = parser.add_argument_group("training")
    length = train.add_mutually_exclusive_group()
    length.add_argument("--max-steps", type=int)
    length.add_argument("--epochs", type=float, default=3.0)
    train.add_argument("--batch-size", type=int, default=32)
    train.add_argument("--learning-rate", type=float, default=5e-5)
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def run(args: argparse.Namespace) -> int:
    from linformer_kit.train.finetune import FinetuneConfig, finetune

    try:
        config = FinetuneConfig(
            model=args.model,
            output_dir=args.output_dir,
            train=args.train,
            validation=args.validation,
            dataset=args.dataset,
            glue_task=args.glue_task,
            text_column=args.text_column,
            text_pair_column=args.text_pair_column,
            label_column=args.label_column,
            max_length=args.max_length,
            max_train_samples=args.max_train_samples,
            max_steps=args.max_steps,
            epochs=args.epochs,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            seed=args.seed,
            progress=not args.no_progress,
        )
        result = finetune(config)
    except ValueError as error:
        print(f"linformer finetune: error: {error}")
        return 2
    if os.environ.get("RANK", "0") != "0":  # under torchrun / accelerate, one summary line
        return 0
    speed = f"{result.tokens_per_second:,.0f} tokens/s" if result.tokens_per_second else "tokens/s n/a"
    print(
        f"finetune done: {result.steps} steps, train loss {result.train_loss:.3f}, "
        f"{result.metrics_text()} ({result.eval_examples} examples), {speed}; "
        f"model saved to {result.output_dir}"
    )
    return 0
