"""The file checks of `linformer finetune`: what `FinetuneConfig.preflight` reads before any work.

A config is built from values alone (train/finetune/config.py); these functions look at the files and
folders it names, at the start of the run (`guarded_run`, train/guards.py), and raise a ValueError
naming the path and what is wrong with it. They take values, not the config, so the config module
imports them and nothing imports back.
"""

from __future__ import annotations

from pathlib import Path

from linformer_kit.data_files import check_data_file, has_examples, has_suffix, peek_columns
from linformer_kit.models.config_rules import longest_input
from linformer_kit.models.folder_checks import check_model_dir, read_config_json
from linformer_kit.train.data import TABLE_SUFFIXES

LOCAL_SUFFIXES = (*TABLE_SUFFIXES, ".jsonl", ".jsonl.gz", ".json")


def check_table_files(train: str, validation: str, columns: list[str]) -> None:
    """Both files exist, read as their suffix says, hold examples and the columns asked for, and differ."""
    for what, path in (("train", train), ("validation", validation)):
        if Path(path).is_dir():
            raise ValueError(f"{what}: {path!r} is a directory; give a .csv / .tsv / .jsonl file")
        if not Path(path).is_file():
            raise ValueError(f"{what}: no such file: {path!r}")
        if not has_suffix(path, LOCAL_SUFFIXES):
            raise ValueError(f"{what}: {path!r} is not a .csv / .tsv / .jsonl / .json file")
        check_data_file(path, what)
        if not has_examples(path):
            raise ValueError(f"{what}: {path!r} holds no examples (a header at most)")
        found = peek_columns(path)
        missing = [c for c in columns if found is not None and c not in found]
        if missing:
            raise ValueError(
                f"{what}: no column {missing} in {path!r} (columns: {found}); "
                f"set --text-column / --text-pair-column / --label-column"
            )
    if Path(train).resolve() == Path(validation).resolve():
        raise ValueError(
            f"validation: {validation!r} is the training file: dev accuracy would be measured "
            "on the examples the model trained on"
        )


def check_pretrained_model(
    model: str, changed_local: list[str], classifier_pooling: str | None, max_length: int | None
) -> None:
    """`model` is a model directory with a tokenizer (without one it would see only [UNK]); the Linformer
    options given (`changed_local`, classifier_pooling) need a Linformer; max_length fits its positions."""
    check_model_dir(model, "model", tokenizer=True)
    saved = read_config_json(model)
    if changed_local and saved.get("model_type") != "linformer":
        raise ValueError(
            f"{', '.join(changed_local)}: options of Linformer models; {model!r} is a "
            f"{saved.get('model_type')!r} model (convert it first: linformer convert --local-window ...)"
        )
    if classifier_pooling is not None and saved.get("model_type") != "linformer":
        raise ValueError(
            f"classifier_pooling={classifier_pooling!r} is an option of Linformer models; "
            f"{model!r} is a {saved.get('model_type')!r} model"
        )
    if max_length is not None:
        limit = longest_input(saved)
        if not 2 <= max_length <= limit:
            raise ValueError(
                f"max_length={max_length} must be between 2 and the model's longest input {limit}"
            )
