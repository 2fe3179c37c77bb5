"""`linformer convert SRC DST`: a RoBERTa/BERT directory -> a ready-to-use Linformer model directory.

    linformer convert ./roberta-base ./linformer-base --projected-length 128
    linformer convert ./bert-base ./linformer-bert --projected-length 256 --sharing kv --projection conv
    linformer convert ./roberta-base ./lin --projected-length 256,256,128,128,64,64,64,64,64,64,64,64
    linformer convert ./roberta-base ./lin-4k --projected-length 256 --max-length 4096   # positions wrap

DST gets model.safetensors, config.json (model_type "linformer") and the tokenizer files of SRC.
SRC must hold safetensors weights (pickled .bin checkpoints are refused).

The flags are the fields of `ConvertConfig` (`--projected-length`, `--sharing`, `--projection`,
`--projection-init`, `--local-window`, `--global-tokens`, `--max-length`, `--new-positions`,
`--overwrite`, and `--config FILE`); SRC and DST are its `source` and `output_dir`. `--max-length N`
above SRC's longest input extends the position table (position p takes the trained row of p mod that
length, or a new row with `--new-positions random`) and prints one line saying so.

A Linformer SRC (e.g. a distilled student) is refused: `linformer extend SRC DST --max-length N` reads it
at longer inputs with its own weights and options.
"""

from __future__ import annotations

from transformers import HfArgumentParser

from linformer_kit.cli.positionals import source_and_destination
from linformer_kit.config_parser import parse_config


def build_parser() -> HfArgumentParser:
    """Flags, defaults, choices and help are `ConvertConfig`'s fields; SRC and DST are positional."""
    from linformer_kit.models import ConvertConfig

    return source_and_destination(
        ConvertConfig,
        "convert",
        usage="linformer convert SRC DST [--projected-length K] [--config FILE] [--OPTION VALUE ...]",
        description="Copy every weight of a local RoBERTa or BERT model (safetensors) into a Linformer with "
        "the same head, add the E/F projections, and write model, config and tokenizer files to DST.",
    )


def main(argv: list[str]) -> int:
    from linformer_kit.models import convert_checkpoint

    config = parse_config(build_parser(), argv)
    out = convert_checkpoint(config)
    options = ", ".join(f"{name}={value}" for name, value in config.conversion().options().items())
    print(f"wrote a Linformer ({options}) to {out}")
    return 0
