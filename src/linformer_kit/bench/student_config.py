"""What a run of scope "student" reads, checked before any work, and the sweep it measures.

    Model                a saved model as the benchmark reads it (its longest input, heads, config.json)
    check_student_files  the original and the students as Models; ValueError naming the first folder or
                         length that cannot be read, before any weight is loaded
    batches              texts a call at n: batch_size, and tokens_per_batch // n
    entries              (model, method) at n: every model whole, the original on chunks above chunk_length
    tokens_needed        token ids the inputs take (the largest batch of the largest n)
    max_rows             sequences the largest call holds (the batch an ONNX export must allow)

The options themselves (their names, presets and values) are BenchmarkConfig's: bench/config.py, its
presets bench/presets.py, the checks of scope student's values bench/student_options.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.student_inputs import pieces
from linformer_kit.bench.student_options import named_students


@dataclass(frozen=True)
class Model:
    """A saved model as the benchmark reads it."""

    name: str
    path: str
    longest: int  # its longest input as saved
    heads: int
    config: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # its config.json


def check_student_files(config: BenchmarkConfig) -> tuple[Model, list[Model]]:
    """The original and the students as `Model`s; ValueError naming the first folder or length that cannot be
    read: a missing folder or tokenizer, a student that is no Linformer or has another vocabulary, a
    chunk_length above the original's longest input, an n a student cannot be extended to."""
    from linformer_kit.models.config_rules import longest_input
    from linformer_kit.models.folder_checks import check_model_dir, read_config_json

    if config.scopes != ("student",):
        raise ValueError(f"run_student_benchmark measures scopes ('student',), got scopes {config.scopes}")
    if not config.original:
        raise ValueError("original: missing; give the encoder the students replace (--original DIR)")
    if not config.students:
        raise ValueError("students: none given; give a saved student (--student DIR or --student NAME=DIR)")
    check_model_dir(config.original, "original", tokenizer=True)
    original_config = read_config_json(config.original, "original")
    original = _model("original", config.original, original_config)
    if config.chunk_length > original.longest:
        raise ValueError(
            f"chunk_length={config.chunk_length} is above what the original reads ({original.longest} tokens, "
            f"{config.original!r}): a chunk must fit its longest input"
        )
    students = []
    for name, path in named_students(config.students).items():
        what = f"student {name!r}"
        check_model_dir(path, what)
        student_config = read_config_json(path, what)
        if student_config["model_type"] != "linformer":
            raise ValueError(
                f"{what}: {path!r} is a {student_config['model_type']!r} model, not a Linformer (a student is "
                "what `linformer distill` or `linformer convert` writes)"
            )
        if student_config.get("vocab_size") != original_config.get("vocab_size"):
            raise ValueError(
                f"{what}: vocab_size {student_config.get('vocab_size')} in {path!r}, the original's is "
                f"{original_config.get('vocab_size')}: the inputs are the original's token ids (a student of "
                "another encoder?)"
            )
        student = _model(name, path, student_config)
        for n in sorted(set(config.seq_lens)):
            if n > longest_input(student_config):
                _check_readable(student, n)
        students.append(student)
    if config.text_file is not None:
        from linformer_kit.data_files import check_data_file, file_format

        if not Path(config.text_file).is_file():
            raise ValueError(f"text_file: no such file: {config.text_file!r}")
        json_records = file_format(config.text_file) in ("json", "jsonl")
        check_data_file(config.text_file, "text_file", columns=("text",) if json_records else ())
    return original, students


def _model(name: str, path: str, config: dict[str, Any]) -> Model:
    from linformer_kit.models.config_rules import longest_input

    return Model(name, path, longest_input(config), int(config.get("num_attention_heads", 1)), config)


def _check_readable(student: Model, n: int) -> None:
    """ValueError unless the student's options hold at n (e.g. a pooling k must divide n): what `linformer
    extend` would refuse, found from config.json, before any weight is read."""
    from transformers import AutoConfig

    import linformer_kit.models  # noqa: F401  (registers model_type "linformer")
    from linformer_kit.models.conversion import CONVERSION_OPTIONS
    from linformer_kit.models.convert import converted_config

    saved = AutoConfig.from_pretrained(student.path)
    try:
        converted_config(saved, **{name: getattr(saved, name) for name in CONVERSION_OPTIONS}, max_length=n)
    except ValueError as err:
        raise ValueError(
            f"student {student.name!r} cannot read n={n} (its longest input is {student.longest}; read "
            f"longer, as `linformer extend` would): {err}"
        ) from None


# --- the sweep ------------------------------------------------------------------------------------------


def batches(config: BenchmarkConfig, n: int) -> list[int]:
    """Texts a call at n, largest first: batch_size, and tokens_per_batch // n (at least 1) if set."""
    sizes = {config.batch_size}
    if config.tokens_per_batch is not None:
        sizes.add(max(1, config.tokens_per_batch // n))
    return sorted(sizes, reverse=True)


def entries(original: Model, students: list[Model], n: int, chunk_length: int) -> list[tuple[Model, str]]:
    """(model, method) at n: every student and the original whole, and the original on chunks above chunk_length."""
    found = [(student, "whole") for student in students] + [(original, "whole")]
    return found + ([(original, "chunks")] if n > chunk_length else [])


def tokens_needed(config: BenchmarkConfig) -> int:
    """Token ids the inputs take: the largest batch of texts at the largest n."""
    return max(n * batches(config, n)[0] for n in config.seq_lens)


def max_rows(config: BenchmarkConfig) -> int:
    """The most sequences one call holds (the batch dimension an export must allow)."""
    return max(
        b * (pieces(n, config.chunk_length) if n > config.chunk_length else 1)
        for n in config.seq_lens
        for b in batches(config, n)
    )
