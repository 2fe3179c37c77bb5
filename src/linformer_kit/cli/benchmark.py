"""`linformer benchmark`: speed and memory of Linformer vs full attention (the paper's Table 3).

    linformer benchmark --quick --output-dir runs/benchmark            # about two minutes on a 2-core CPU
    linformer benchmark --preset training --output-dir runs/training   # encoder training steps, tokens/s
    linformer benchmark --preset window --output-dir runs/window       # local windows w = none 0 16 64 vs SDPA
    linformer benchmark --device cuda --dtype bfloat16 --output-dir runs/gpu
    linformer benchmark --preset student --original runs/models/all-MiniLM-L6-v2 \
        --student runs/distill/minilm-k128-w64-g1 --student k64=runs/distill/minilm-k64-w64-g1 --output-dir runs/student

The flags are the fields of `BenchmarkConfig` (`--seq-lens`, `--time_cap_s`, ...) and `--config FILE`.
`--preset NAME` (`--quick` is `--preset quick`) is read first: its sweep gives the defaults, so any
flag given (or field in the --config file) overrides that field of it, and `--preset training --help`
lists the training sweep's values as the defaults. `--preset student` (scope student, bench/student.py)
measures saved students against their original instead: texts/s and peak memory, torch and ONNX Runtime,
the ratios printed and written to DIR/student.json and DIR/student.md; `--student [NAME=]DIR` adds a student.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import TYPE_CHECKING, Any

from transformers import HfArgumentParser

from linformer_kit.config_parser import config_parser, parse_config

if TYPE_CHECKING:
    from linformer_kit.bench.presets import Preset


class _AddStudent(argparse.Action):
    """`--student DIR --student NAME=DIR`: each adds one to the `students` field (after any `--students`)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        setattr(namespace, self.dest, (*(getattr(namespace, self.dest, None) or ()), values))


# the first CLI's spellings of two fields, kept because scripts and docs use them; --student adds one student
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "--time-cap": ("time_cap_s", {"type": float, "metavar": "SECONDS"}),
    "--no-memory": ("measure_memory", {"action": "store_const", "const": False, "help": "= --measure_memory false"}),
    "--student": ("students", {"action": _AddStudent, "metavar": "[NAME=]DIR",
                               "help": "adds one student to --students (scope student); repeat it for more"}),
}  # fmt: skip


def build_parser(preset_name: Preset = "full") -> HfArgumentParser:
    """The flags of `BenchmarkConfig`, with the values of the preset `preset_name` as their defaults."""
    from linformer_kit.bench.config import BenchmarkConfig
    from linformer_kit.bench.presets import PRESETS, preset

    parser = config_parser(
        BenchmarkConfig,
        prog="linformer benchmark",
        usage="linformer benchmark --output-dir DIR [--preset NAME | --quick] [--config FILE] [--OPTION VALUE ...]\n"
        "       linformer benchmark --preset student --original DIR --student [NAME=]DIR [...] --output-dir DIR",
        description="Time and peak memory of Linformer layers/encoders vs full attention (SDPA and explicit "
        "softmax) and PyPI peers; prints speed-up tables, writes JSON, Markdown and a PNG plot. --preset "
        "student: saved students against the original they replace (texts/s, peak memory, torch and ONNX "
        "Runtime), the ratios printed and written to student.json and student.md. The defaults "
        f"shown are those of --preset {preset_name}; a flag overrides its field of the preset.",
        aliases=ALIASES,
    )
    sweep = preset(preset_name)
    parser.set_defaults(**{
        field.name: getattr(sweep, field.name)
        for field in dataclasses.fields(sweep) if getattr(sweep, field.name) != field.default
    })  # fmt: skip
    parser._option_string_actions["--output_dir"].required = True
    # `--local-windows none 16 64`: each word a window or `none` (the generic parser knows no `int | None`)
    parser._option_string_actions["--local_windows"].type = _local_window
    _add_run_options(parser, PRESETS, preset_name)
    return parser


def _local_window(text: str) -> int | None:
    """One word of `--local-windows`; argparse reports a word that is neither an int nor `none`."""
    from linformer_kit.bench.option_checks import parse_local_window

    try:
        return parse_local_window(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_run_options(
    parser: argparse.ArgumentParser, presets: tuple[str, ...] | None, preset_name: str
) -> None:
    """What is not a field of the sweep: which preset gives the defaults, and the progress bar."""
    parser.add_argument(
        "--preset", choices=presets, default=preset_name, help="the sweep whose values are the defaults"
    )
    parser.add_argument(
        "--quick", dest="preset", action="store_const", const="quick", default=argparse.SUPPRESS,
        help="= --preset quick (about two minutes on a 2-core CPU)",
    )  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _run_options(argv: list[str]) -> argparse.Namespace:
    """--preset / --quick / --no-progress, read before the parser whose defaults the preset sets."""
    peek = argparse.ArgumentParser(prog="linformer benchmark", add_help=False, allow_abbrev=False)
    _add_run_options(peek, None, "full")  # no choices here: the full parser reports a bad name
    return peek.parse_known_args(argv)[0]


def main(argv: list[str]) -> int:
    from linformer_kit.bench.presets import PRESETS

    run = _run_options(argv)
    config = parse_config(build_parser(run.preset if run.preset in PRESETS else "full"), argv)
    # after parsing: `--help` and a bad flag answer without loading torch
    if config.scopes == ("student",):
        return _students(config)
    from linformer_kit.bench import run_benchmark, write_report
    from linformer_kit.bench.report import format_report

    result = run_benchmark(config, progress=not run.no_progress)
    print(format_report(result))
    paths = write_report(result, config.output_dir)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


def _students(config: Any) -> int:
    """Scope student: saved students against their original; prints the report, writes student.json / .md."""
    from linformer_kit.bench import run_student_benchmark, write_student_report
    from linformer_kit.bench.student_report import format_student_report

    result = run_student_benchmark(config)
    print(format_student_report(result))
    paths = write_student_report(result, config.output_dir)
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
