"""`linformer spectrum MODEL --text FILE --output-dir DIR`: the paper's Figure 1, a k and a window per layer.

    linformer spectrum runs/mlm-full --text valid.jsonl.gz --output-dir runs/spectrum --keep 0.9 --index 128
    linformer spectrum runs/mlm-full --config spectrum.yaml     # options from a YAML / JSON file, flags on top

The flags are the fields of `SpectrumConfig` (`--seq-len`, `--method`, `--thresholds 0.9 0.99`, ...),
`--text` standing for `--text-file`; MODEL is its `model` field, given as the first argument.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from transformers import HfArgumentParser

from linformer_kit.cli.positionals import verb_parser
from linformer_kit.config_parser import parse_config

if TYPE_CHECKING:
    from linformer_kit.analysis.spectrum_result import SpectrumResult

# needed by the CLI (the library's SpectrumConfig leaves them empty for `compute_spectrum`); a
# `--config` file may give them, so they are checked after parsing, with argparse's message
REQUIRED = {"--text": "text_file", "--output-dir": "output_dir"}


def build_parser() -> HfArgumentParser:
    from linformer_kit.analysis import SpectrumConfig

    return verb_parser(
        SpectrumConfig,
        "spectrum",
        usage="linformer spectrum MODEL_DIR_OR_NAME --text FILE --output-dir DIR [--config FILE] "
        "[--OPTION VALUE ...]",
        description="Run a full-attention encoder (ours with projected_length=None, or any Hugging Face "
        "RoBERTa/BERT-like encoder) on real text; write DIR/spectrum.json, DIR/spectrum_curves.png and "
        "DIR/spectrum_heatmap.png.",
        positionals={"model": "MODEL_DIR_OR_NAME"},
    )


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
    print_window(result)
    for note in result.notes:
        print(f"note: {note}")
    for path in paths.values():
        print(f"wrote {path}")
    return 0


def print_window(result: SpectrumResult) -> None:
    """The attention mass by distance (the most local head of each layer) and the window flags."""
    from linformer_kit.analysis.spectrum_result import WINDOW_RADII
    from linformer_kit.nn.options import format_projected_length

    config = result.config
    radii = " ".join(f"±{r}" for r in WINDOW_RADII)

    def row(mass, first) -> str:
        return " ".join(f"{float(m):.2f}" for m in mass) + f"  {float(first):.2f}"

    print(f"attention mass within {radii} and on token 0, per layer (max over heads):")
    print(f"  uniform attention: {row(result.uniform_distance_mass, result.uniform_first_token_mass)}")
    most = result.distance_mass.amax(1), result.first_token_mass.amax(1)  # (L, R), (L,)
    for layer, (mass, first) in enumerate(zip(*most, strict=True)):
        print(f"  layer {layer}: {row(mass, first)}")
    window, tokens = result.recommended_local_window, result.recommended_global_tokens
    flags = f"--local-window {format_projected_length(window)}"
    flags += f" --global-tokens {tokens}" if tokens else ""
    print(
        f"recommended local_window (window_mass={config.window_mass:g}): {window}, global_tokens "
        f"(global_mass={config.global_mass:g}): {tokens}  ({flags})"
    )
    if result.windowed_projected_length != result.recommended_projected_length:
        k = format_projected_length(result.windowed_projected_length)
        print(
            f"  with the window, a layer whose heads read a neighbour takes the spectrum's k instead of "
            f"full attention: --projected-length {k} {flags}"
        )
