"""`linformer spectrum MODEL --text FILE --output-dir DIR`: the paper's Figure 1 and a k per layer."""

from __future__ import annotations

import argparse
import dataclasses
from typing import get_args, get_type_hints


def build_parser() -> argparse.ArgumentParser:
    """Defaults and choices are `SpectrumConfig`'s fields and their Literal types."""
    from linformer_kit.analysis import SpectrumConfig

    default = {field.name: field.default for field in dataclasses.fields(SpectrumConfig)}
    choices = {name: get_args(hint) for name, hint in get_type_hints(SpectrumConfig).items()}
    parser = argparse.ArgumentParser(
        prog="linformer spectrum",
        description=(
            "Run a full-attention encoder (ours with projected_length=None, or any Hugging Face "
            "RoBERTa/BERT-like encoder) on real text; write DIR/spectrum.json, "
            "DIR/spectrum_curves.png and DIR/spectrum_heatmap.png."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("model", metavar="MODEL_DIR_OR_NAME", help="model directory (or Hub name)")
    parser.add_argument(
        "--text",
        required=True,
        metavar="FILE",
        help='text to cut into inputs: .txt, or .jsonl / .json records with a "text" field (each may be .gz), as pretrain reads',
    )
    parser.add_argument("--output-dir", required=True, metavar="DIR")
    parser.add_argument(
        "--keep", type=float, default=default["keep"], help="share of the spectrum k must keep"
    )
    parser.add_argument(
        "--index",
        type=int,
        default=default["index"],
        help="heatmap at this 1-based index (None: 128, or n/4 if shorter)",
    )
    parser.add_argument(
        "--seq-len", type=int, default=default["seq_len"], help="tokens per input (None: model max)"
    )
    parser.add_argument(
        "--max-inputs", type=int, default=default["max_inputs"], help="at most this many inputs"
    )
    parser.add_argument("--batch-size", type=int, default=default["batch_size"])
    parser.add_argument(
        "--thresholds", type=float, nargs="+", default=list(default["thresholds"]), metavar="T",
        help="effective rank reported at each",
    )  # fmt: skip
    for name in ("normalization", "method", "head_reduction", "dtype"):
        parser.add_argument(f"--{name.replace('_', '-')}", choices=choices[name], default=default[name])
    parser.add_argument(
        "--rank", type=int, default=default["rank"], help="top singular values for --method randomized"
    )
    parser.add_argument(
        "--device", default=default["device"], help="cpu, cuda, ... (None: cuda if available)"
    )
    parser.add_argument("--seed", type=int, default=default["seed"])
    return parser


def main(argv: list[str]) -> int:
    from linformer_kit.analysis import SpectrumConfig, spectrum_from_pretrained, write_spectrum_report

    args = build_parser().parse_args(argv)
    config = SpectrumConfig(
        model=args.model,
        text_file=args.text,
        output_dir=args.output_dir,
        seq_len=args.seq_len,
        max_inputs=args.max_inputs,
        batch_size=args.batch_size,
        keep=args.keep,
        index=args.index,
        thresholds=tuple(args.thresholds),
        normalization=args.normalization,
        method=args.method,
        rank=args.rank,
        head_reduction=args.head_reduction,
        dtype=args.dtype,
        device=args.device,
        seed=args.seed,
    )
    result = spectrum_from_pretrained(config)
    paths = write_spectrum_report(result, args.output_dir)
    at_index = result.at_index()
    print(f"{result.num_inputs} inputs, {result.num_layers} layers x {result.num_heads} heads")
    for t in config.thresholds:
        ranks = result.effective_rank_mean[t].mean(-1)  # (L,) head-averaged
        print(f"effective rank at {t:g} per layer (mean over heads): " + " ".join(f"{r:.0f}" for r in ranks))
    print(
        f"c({result.config.index}) per layer (mean over heads): "
        + " ".join(f"{v:.3f}" for v in at_index.mean(-1))
    )
    print(f"recommended projected_length (keep={config.keep:g}): {result.recommended_projected_length}")
    for note in result.notes:
        print(f"note: {note}")
    for path in paths.values():
        print(f"wrote {path}")
    return 0
