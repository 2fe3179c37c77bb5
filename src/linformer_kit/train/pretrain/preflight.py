"""The file checks of `linformer pretrain`: what `PretrainConfig.preflight` reads before any work.

A config is built from values alone (train/pretrain/config.py); these functions look at the paths it
names, at the start of the run (`guarded_run`, train/guards.py), and raise a ValueError naming the path
and what is wrong with it:

    check_text_sources     the train / validation files or folders (the first 64 KiB of each file)
    check_tokenizer_folder a --tokenizer folder holds a saved tokenizer
    check_init_from        the init_from model folder: its files, its type, how its positions extend
    check_resumed_model    the checkpoint a --resume continues holds the model this run builds

They take values, not the config, so the config module imports them and nothing imports back.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from transformers import PreTrainedConfig

from linformer_kit.data_files import has_suffix
from linformer_kit.models import LinformerConfig
from linformer_kit.models.config_rules import longest_input
from linformer_kit.models.configuration_linformer import SAVED_OPTIONS
from linformer_kit.models.convert import NewPositions, check_new_positions
from linformer_kit.models.folder_checks import check_model_dir, read_config_json
from linformer_kit.models.key_mapping import SOURCE_TYPES
from linformer_kit.models.presets import PRESETS
from linformer_kit.output_dir import is_same_or_inside
from linformer_kit.train.data import TEXT_SUFFIXES, expand_text_files, is_hub_name
from linformer_kit.train.model_fields import PER_LAYER_OPTIONS

# What a resume compares with the checkpoint: every Linformer option a config saves but projection_init,
# which says only how new E and F start (a resume loads them), and the LayerNorm placement.
RESUMED_OPTIONS = (*(name for name in SAVED_OPTIONS if name != "projection_init"), "layer_norm")


def check_text_sources(
    train: list[str], validation: list[str] | None, text_column: str, output_dir: str
) -> None:
    """Local files exist and read as text; a text_column needs structured data; output_dir does not
    overlap the data; no file is both a training and a validation file. Hub names are not looked up."""
    local: dict[str, list[Path]] = {}
    given = {"train": train, "validation": validation or []}
    for what, sources in given.items():
        if sources and not (len(sources) == 1 and is_hub_name(sources[0])):  # first 64 KiB of each file
            local[what] = expand_text_files(sources, what, text_column)
    structured = [f for files in local.values() for f in files if not has_suffix(f, TEXT_SUFFIXES)]
    every_source_local = len(local) == sum(bool(sources) for sources in given.values())
    if text_column != "text" and every_source_local and not structured:
        raise ValueError(
            f"text_column={text_column!r} names a field of JSON lines or Hub data, but every "
            "--train / --validation file is plain .txt (one record per line, no fields)"
        )
    for what in local:
        for source in given[what]:
            if is_same_or_inside(output_dir, source) or is_same_or_inside(source, output_dir):
                raise ValueError(
                    f"output_dir {output_dir!r} and the {what} data {source!r} overlap: checkpoints "
                    "(JSON files) would become training text of the next run; choose another --output-dir"
                )
    train_files, validation_files = ({f.resolve() for f in local.get(what, [])} for what in given)
    shared = train_files & validation_files
    if shared:
        raise ValueError(
            f"validation: {sorted(map(str, shared))[0]!r} is also a training file: the held-out loss "
            "would be measured on text the model trained on"
        )


def check_tokenizer_folder(tokenizer: str | None) -> None:
    if tokenizer is not None and not (Path(tokenizer) / "tokenizer_config.json").is_file():
        raise ValueError(
            f"tokenizer: {tokenizer!r} is not a saved tokenizer folder (no tokenizer_config.json)"
        )


def check_init_from(init_from: str, own_tokenizer: bool, seq_len: int, new_positions: NewPositions) -> None:
    """A model folder we convert (with its tokenizer unless --tokenizer is given); a seq_len above its
    longest input extends its position table, as `new_positions` says."""
    check_model_dir(init_from, "init_from", tokenizer=not own_tokenizer)
    source = read_config_json(init_from, "init_from")
    if source["model_type"] != "linformer" and source["model_type"] not in SOURCE_TYPES:
        raise ValueError(
            f"init_from: {init_from!r} is a {source['model_type']!r} model; expected linformer, "
            f"{', '.join(SOURCE_TYPES)}"
        )
    check_new_positions(new_positions, seq_len > longest_input(source))


def check_resumed_model(
    checkpoint: Path, saved: dict, wanted: PreTrainedConfig, given: Mapping[str, object], preset: str | None,
    seq_len: int,
) -> None:  # fmt: skip
    """--resume must build the model the checkpoint holds (`saved`, its config.json): name what differs.

    `wanted` is the config this run builds, `given` the run's values of `RESUMED_OPTIONS` (as the user
    wrote them, for the message), `preset` a new model's shape (None: init_from's, which the checkpoint
    then holds).
    """
    where = f"({checkpoint / 'config.json'}): resume with the options of the run that wrote it"
    layers = saved.get("num_hidden_layers", 0)
    for name in RESUMED_OPTIONS:
        mine = getattr(wanted, name)
        theirs = saved.get(name, getattr(LinformerConfig, name))  # older checkpoints: the default
        if name in PER_LAYER_OPTIONS:  # 8 and [8, 8] are one model
            mine, theirs = (v if isinstance(v, list) else [v] * layers for v in (mine, theirs))
        if mine != theirs:
            raise ValueError(
                f"resume: {name}={given[name]!r} differs from the checkpoint's {name}={saved.get(name)!r} {where}"
            )
    if preset is None:
        return
    shape = {key: saved.get(key) for key in PRESETS[preset] if key != "vocab_size"}
    if shape != {key: getattr(wanted, key) for key in shape}:
        raise ValueError(f"resume: preset={preset!r} differs from the checkpoint's shape {shape} {where}")
    if wanted.max_position_embeddings != saved.get("max_position_embeddings"):
        raise ValueError(
            f"resume: seq_len={seq_len} differs from the checkpoint's longest input {longest_input(saved)} {where}"
        )
