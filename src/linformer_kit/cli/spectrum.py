"""`linformer spectrum MODEL --text FILE --output-dir DIR`: the paper's Figure 1 and a k per layer."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "spectrum",
        help="Singular-value spectrum of attention maps (Figure 1) and a projected_length per layer.",
        description=(
            "Run a full-attention encoder (ours with projected_length=None, or any Hugging Face "
            "RoBERTa/BERT-like encoder) on real text; write DIR/spectrum.json, "
            "DIR/spectrum_curves.png and DIR/spectrum_heatmap.png."
        ),
    )
    parser.add_argument("model", metavar="MODEL_DIR_OR_NAME", help="model directory (or Hub name)")
    parser.add_argument("--text", required=True, metavar="FILE", help="UTF-8 text file to cut into inputs")
    parser.add_argument("--output-dir", required=True, metavar="DIR")
    parser.add_argument("--keep", type=float, default=0.9, help="share of the spectrum k must keep (0.9)")
    parser.add_argument(
        "--index", type=int, default=None, help="heatmap at this 1-based index (128, or n/4 if shorter)"
    )
    parser.add_argument("--seq-len", type=int, default=None, help="tokens per input (default: model max)")
    parser.add_argument("--max-inputs", type=int, default=64, help="at most this many inputs (64)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--thresholds", type=float, nargs="+", default=[0.9, 0.99], metavar="T")
    parser.add_argument("--normalization", choices=["singular", "energy"], default="singular")
    parser.add_argument("--method", choices=["exact", "randomized"], default="exact")
    parser.add_argument("--rank", type=int, default=128, help="top singular values for --method randomized")
    parser.add_argument("--head-reduction", choices=["max", "mean"], default="max")
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--device", default=None, help="cpu, cuda, ... (default: cuda if available)")
    parser.add_argument("--seed", type=int, default=0)
    return parser


def run(args: argparse.Namespace) -> int:
    from linformer_kit.analysis import SpectrumConfig, spectrum_from_pretrained, write_spectrum_report

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
