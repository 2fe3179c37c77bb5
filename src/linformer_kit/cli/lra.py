"""`linformer lra prepare TASK`: the Long Range Arena data (Tay et al., ICLR 2021) as TSV files.

    linformer lra prepare listops --output-dir data/lra/listops              # 96k / 2k / 2k trees
    linformer lra prepare listops --output-dir /tmp/lo --seed 1 --train-size 2000 --val-size 200 --test-size 200
    linformer lra prepare text --imdb ../shared/data/imdb --output-dir data/lra/text --max-bytes 4000

Each task's flags are the fields of its config (`ListOpsConfig`, `TextConfig` in `linformer_kit.lra`),
spelled with `-` or `_`, plus `--config FILE`. The files (`Source<TAB>Target`) have the format of the
LRA release, so a user who has the official release trains on it the same way:

    linformer finetune --train DIR/basic_train.tsv --validation DIR/basic_val.tsv \\
        --text-column Source --label-column Target ...
"""

from __future__ import annotations

import argparse

from transformers import HfArgumentParser

from linformer_kit.config_parser import config_parser, parse_config

COMMANDS = ("prepare",)
TASKS = ("listops", "text")
USAGE = {
    "listops": "linformer lra prepare listops --output-dir DIR [--seed S] [--train-size N] [--val-size N] "
    "[--test-size N] [--overwrite] [--config FILE]",
    "text": "linformer lra prepare text --imdb DIR --output-dir DIR [--max-bytes 4000] [--overwrite] "
    "[--config FILE]",
}
DESCRIPTION = {
    "listops": "Generate LRA ListOps (nested MIN/MAX/MED/SM expressions of 500-2000 tokens, 10 classes): "
    "DIR/basic_{train,val,test}.tsv and DIR/label_balance.json.",
    "text": "Write the LRA byte-level text task (IMDB reviews cut to --max-bytes UTF-8 bytes, 2 classes): "
    "DIR/train.tsv, DIR/test.tsv and DIR/label_balance.json.",
}


def build_parser(task: str = "listops") -> HfArgumentParser:
    """The flags of the task's config. Its prog is the verb's, as in every error line of the verb
    (`linformer lra: error: ...`); the usage names the whole command."""
    from linformer_kit.lra import ListOpsConfig, TextConfig

    config_class = {"listops": ListOpsConfig, "text": TextConfig}[task]
    return config_parser(config_class, prog="linformer lra", usage=USAGE[task], description=DESCRIPTION[task])


def command_parser() -> argparse.ArgumentParser:
    """`prepare TASK`: the two words read before the task's own parser takes the rest."""
    parser = argparse.ArgumentParser(
        prog="linformer lra",
        usage="linformer lra prepare {listops,text} [--OPTION VALUE ...]",
        description="Prepare the Long Range Arena data (Tay et al., ICLR 2021) as TSV files: `prepare listops` "
        "generates ListOps, `prepare text` writes the byte-level IMDB task.",
        epilog="`linformer lra prepare TASK --help` lists the options of a task.",
        allow_abbrev=False,
    )
    parser.add_argument("command", choices=COMMANDS, metavar="COMMAND", help="prepare: write a task's files")
    parser.add_argument("task", choices=TASKS, metavar="TASK", help="listops or text")
    return parser


def main(argv: list[str]) -> int:
    from linformer_kit.lra import format_label_balance, prepare_listops, prepare_text

    command = command_parser().parse_args(argv[:2])  # --help and a bad command or task exit here
    config = parse_config(build_parser(command.task), argv[2:])
    result = prepare_listops(config) if command.task == "listops" else prepare_text(config)
    print(format_label_balance(result.balance))
    for path in (*result.files.values(), result.balance_file):
        print(f"wrote {path}")
    return 0
