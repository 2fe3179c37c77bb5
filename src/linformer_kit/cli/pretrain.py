"""`linformer pretrain`: masked-LM pretraining of a Linformer (or the full-attention baseline).

linformer pretrain --train books/ --output-dir runs/mlm --preset small --seq-len 512 --projected-length 128
torchrun --nproc_per_node 2 -m linformer_kit.cli.main pretrain --train books/ --output-dir runs/mlm
"""

from __future__ import annotations

import argparse
import os

from linformer_kit.nn import PROJECTION_KINDS, SHARING_MODES


def projected_length(text: str) -> int | list[int]:
    """`128` (every layer) or `256,256,128,128` (one k per layer)."""
    values = [int(part) for part in text.split(",")]
    return values[0] if len(values) == 1 else values


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from linformer_kit.train.pretrain import PRESETS

    parser = subparsers.add_parser(
        "pretrain",
        help="Pretrain a Linformer masked language model on raw text.",
        description="Masked-LM pretraining with the Hugging Face Trainer. Also runs under torchrun / accelerate launch.",
    )
    data = parser.add_argument_group("data")
    data.add_argument(
        "--train",
        nargs="+",
        required=True,
        metavar="PATH",
        help=".txt / .jsonl / .jsonl.gz files or folders, or one Hub dataset NAME[:CONFIG]",
    )
    data.add_argument(
        "--validation",
        nargs="+",
        metavar="PATH",
        help="held-out text (default: hold out --validation-percent of the training blocks)",
    )
    data.add_argument("--validation-percent", type=float, default=5.0)
    data.add_argument(
        "--text-column", default="text", help="JSON / Hub field holding the text (default: text)"
    )
    data.add_argument(
        "--max-train-documents",
        type=int,
        metavar="N",
        help="quick runs: use only the first N documents (books, paragraphs) of --train",
    )
    data.add_argument(
        "--tokenizer", metavar="DIR", help="a saved tokenizer (default: train a byte-level BPE)"
    )
    data.add_argument(
        "--vocab-size", type=int, help="BPE vocabulary when training one (default: the preset's)"
    )
    data.add_argument("--max-eval-blocks", type=int, default=512, help="evaluate on at most this many blocks")
    model = parser.add_argument_group("model")
    model.add_argument(
        "--preset",
        choices=list(PRESETS),
        default=None,
        help="encoder shape: tiny, small (256 wide, 4 layers; the default) or base (RoBERTa-base)",
    )
    model.add_argument(
        "--init-from",
        metavar="DIR",
        help="start from this checkpoint (Linformer, RoBERTa or BERT); the options below convert it",
    )
    model.add_argument("--seq-len", type=int, default=512, help="block length n (default: 512)")
    attention = model.add_mutually_exclusive_group()
    attention.add_argument(
        "--projected-length",
        type=projected_length,
        default=128,
        metavar="K[,K...]",
        help="Linformer k, or one k per layer (default: 128)",
    )
    attention.add_argument(
        "--full-attention", action="store_true", help="standard quadratic attention: the Transformer baseline"
    )
    model.add_argument("--sharing", choices=SHARING_MODES, default="headwise")
    model.add_argument("--projection", choices=PROJECTION_KINDS, default="linear")
    train = parser.add_argument_group("training")
    train.add_argument("--output-dir", required=True, metavar="DIR")
    train.add_argument("--max-steps", type=int, help="optimizer steps (0: only evaluate and save)")
    train.add_argument(
        "--epochs", type=float, default=1.0, help="passes over the data when --max-steps is absent"
    )
    train.add_argument("--batch-size", type=int, default=8, help="per device")
    train.add_argument("--gradient-accumulation-steps", type=int, default=1)
    train.add_argument("--learning-rate", type=float, default=5e-4)
    train.add_argument("--save-steps", type=int, default=500, help="checkpoint interval")
    train.add_argument("--logging-steps", type=int, default=50)
    train.add_argument(
        "--resume", action="store_true", help="continue from the last checkpoint in --output-dir"
    )
    train.add_argument("--seed", type=int, default=42)
    train.add_argument("--no-progress", action="store_true", help="no progress bars")
    return parser


def run(args: argparse.Namespace) -> int:
    from linformer_kit.train.pretrain import PretrainConfig, pretrain

    try:
        config = PretrainConfig(
            train=args.train,
            validation=args.validation,
            validation_percent=args.validation_percent,
            text_column=args.text_column,
            max_train_documents=args.max_train_documents,
            output_dir=args.output_dir,
            preset=args.preset,
            init_from=args.init_from,
            seq_len=args.seq_len,
            projected_length=None if args.full_attention else args.projected_length,
            sharing=args.sharing,
            projection=args.projection,
            tokenizer=args.tokenizer,
            vocab_size=args.vocab_size,
            max_steps=args.max_steps,
            epochs=args.epochs,
            batch_size=args.batch_size,
            gradient_accumulation_steps=args.gradient_accumulation_steps,
            learning_rate=args.learning_rate,
            save_steps=args.save_steps,
            logging_steps=args.logging_steps,
            max_eval_blocks=args.max_eval_blocks,
            resume=args.resume,
            seed=args.seed,
            progress=not args.no_progress,
        )
        result = pretrain(config)
    except ValueError as error:
        print(f"linformer pretrain: error: {error}")
        return 2
    if os.environ.get("RANK", "0") != "0":  # under torchrun / accelerate, one summary line
        return 0
    speed = f"{result.tokens_per_second:,.0f} tokens/s" if result.tokens_per_second else "tokens/s n/a"
    loss = f"train loss {result.train_loss:.3f}, " if result.train_loss is not None else ""
    print(
        f"pretrain done: {result.steps} steps, {loss}validation loss {result.eval_loss:.3f}, "
        f"perplexity {result.perplexity:.2f}, {speed}; model saved to {result.output_dir}"
    )
    return 0
