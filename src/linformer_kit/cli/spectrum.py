"""`linformer spectrum MODEL --text FILE --output-dir DIR`: the paper's Figure 1 and a k per layer.

    linformer spectrum runs/mlm-full --text valid.jsonl.gz --output-dir runs/spectrum --keep 0.9 --index 128
    linformer spectrum runs/mlm-full --config spectrum.yaml     # options from a YAML / JSON file, flags on top

The flags are the fields of `SpectrumConfig` (`--seq-len`, `--method`, `--thresholds 0.9 0.99`, ...),
`--text` standing for `--text-file`; MODEL is its `model` field, given as the first argument.
"""

from __future__ import annotations

from transformers import HfArgumentParser

from linformer_kit.cli.arguments import config_parser, parse_config
from linformer_kit.cli.positionals import positional

# needed by the CLI (the library's SpectrumConfig leaves them empty for `compute_spectrum`); a
# `--config` file may give them, so they are checked after parsing, with argparse's message
REQUIRED = {"--text": "text_file", "--output-dir": "output_dir"}


def build_parser() -> HfArgumentParser:
    from linformer_kit.analysis import SpectrumConfig

    parser = config_parser(
        SpectrumConfig,
        prog="linformer spectrum",
        usage="linformer spectrum MODEL_DIR_OR_NAME --text FILE --output-dir DIR [--config FILE] "
        "[--OPTION VALUE ...]",
        description="Run a full-attention encoder (ours with projected_length=None, or any Hugging Face "
        "RoBERTa/BERT-like encoder) on real text; write DIR/spectrum.json, DIR/spectrum_curves.png and "
        "DIR/spectrum_heatmap.png.",
    )
    positional(parser, "model", "MODEL_DIR_OR_NAME")
    return parser


def main(argv: list[str]) -> int:
    parser = build_parser()
    config = parse_config(parser, argv)
    missing = [flag for flag, name in REQUIRED.items() if not getattr(config, name)]
    if missing:
        parser.error(f"the following arguments are required: {', '.join(missing)}")
    # after parsing: `--help` and a bad flag answer without loading torch and transformers' models
    from linformer_kit.analysis import spectrum_from_pretrained, write_spectrum_report
    from linformer_kit.nn.options import format_projected_length

    result = spectrum_from_pretrained(config)
    paths = write_spectrum_report(result, config.output_dir)
    at_index = result.at_index()
    print(f"{result.num_inputs} inputs, {result.num_layers} layers x {result.num_heads} heads")
    for t in config.thresholds:
        ranks = result.effective_rank_mean[t].mean(-1)  # (L,) head-averaged
        print(f"effective rank at {t:g} per layer (mean over heads): " + " ".join(f"{r:.0f}" for r in ranks))
    print(
        f"c({result.config.index}) per layer (mean over heads): "
        + " ".join(f"{v:.3f}" for v in at_index.mean(-1))
    )
    recommended, by_rank = result.recommended_projected_length, result.rank_projected_length
    flag = format_projected_length(recommended)
    print(f"recommended projected_length (keep={config.keep:g}): {recommended}  (--projected-length {flag})")
    if recommended != by_rank:
        print(
            f"  (the spectrum alone: {by_rank}; layers whose heads copy a neighbour: full attention, notes below)"
        )
    for note in result.notes:
        print(f"note: {note}")
    for path in paths.values():
        print(f"wrote {path}")
    return 0
