"""The file checks of `linformer distill`: what `DistillConfig.preflight` reads before any work.

A config is built from values alone (train/distill/config.py); these functions look at the teacher's
folder and the output_dir it names, at the start of the run (`guarded_run`, train/guards.py), and raise
a ValueError naming the path and what is wrong with it:

    check_teacher     the teacher's folder: a model with a tokenizer; seq_len within its positions
    student_config    the student's LinformerConfig, from the teacher's config.json alone
    check_fresh_run   a new run's output_dir holds no run (final files, stage folders)
    check_stages_from another run's output_dir with a finished stage to take

They take values, not the config, so the config module imports them and nothing imports back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from linformer_kit.models import LinformerConfig
from linformer_kit.models.convert import SOURCE_TYPES
from linformer_kit.models.loading import check_model_dir, longest_input, read_config_json


def check_teacher(teacher: str, seq_len: int | None) -> int:
    """The teacher's folder holds a model and a tokenizer (the student is saved with it); returns seq_len,
    by default the teacher's longest input, which it must not exceed."""
    check_model_dir(teacher, "teacher", tokenizer=True)
    longest = longest_input(read_config_json(teacher, "teacher"))
    if seq_len is None:
        return longest
    if seq_len > longest:
        raise ValueError(
            f"seq_len={seq_len} is longer than the teacher's longest input {longest}: distil at "
            f"<= {longest}, then extend the student (linformer extend STUDENT DST --max-length {seq_len})"
        )
    return seq_len


def student_config(teacher: str, options: dict[str, Any]) -> LinformerConfig:
    """The student's LinformerConfig: the teacher's config.json with the Linformer `options` (a
    `conversion_options()`); ValueError names a bad option or a teacher that is not a full-attention model."""
    from transformers import AutoConfig

    from linformer_kit.models.convert import converted_config
    from linformer_kit.train.init_from import target_config

    source = AutoConfig.from_pretrained(teacher)
    if source.model_type == "linformer":
        if any(k is not None for k in source.projected_lengths()):
            raise ValueError(
                f"teacher: {teacher!r} is a Linformer with projected_length={source.projected_length}; "
                "the teacher must attend fully (projected_length none), as the model it stands for"
            )
        return target_config(source, **options)
    if source.model_type not in SOURCE_TYPES:
        raise ValueError(
            f"teacher: {teacher!r} is a {source.model_type!r} model; expected linformer, {', '.join(SOURCE_TYPES)}"
        )
    return converted_config(source, **options)


def check_fresh_run(output_dir: str, resume: bool) -> None:
    """Stages keep their checkpoints in output_dir/<stage>/; a new run (not `resume`) needs an empty output_dir."""
    out = Path(output_dir)
    # anything at all: a folder of other files would get a model written among them (convert refuses it too)
    held = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if held and not resume:
        raise ValueError(
            f"output_dir {output_dir!r} already holds {', '.join(held)}: pass --resume to continue "
            "that run, or choose another --output-dir"
        )


def check_stages_from(stages_from: str, output_dir: str) -> None:
    """`stages_from` is another run's output_dir holding at least one finished stage (its stage.json)."""
    source = Path(stages_from)
    if source.resolve() == Path(output_dir).resolve():
        raise ValueError(
            f"stages_from={stages_from!r} is this run's output_dir; to continue a run, pass --resume"
        )
    finished = sorted(p.parent.name for p in source.glob("*/stage.json")) if source.is_dir() else []
    if not finished:
        raise ValueError(
            f"stages_from={stages_from!r} holds no finished stage (a folder with stage.json, as a distill run's "
            "output_dir has); give the output_dir of a finished distill run"
        )
