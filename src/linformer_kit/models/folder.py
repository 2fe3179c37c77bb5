"""Model folders: the one writer of a model directory, and the check of where it may go.

What `convert`, `extend` and `distill` leave (and what `pretrain` / `finetune` complete after the
Trainer's `save_model`, train/publish.py) is one layout:

    output_dir/  model.safetensors, config.json (+ modeling_linformer.py: a Linformer's own code)
                 tokenizer files, model_max_length = what the model reads (`input_limit`, models/config_rules.py)
                 a sentence-transformers folder's pipeline files (models/sentence_transformers_folder.py)
                 metrics.json (a run's results, no absolute path: `portable`) and README.md (the model card)

`check_target_dir` refuses a target before any weight is read: not empty (without `overwrite`), or the
source's own folder. `write_model_dir` writes the whole folder into a hidden sibling and renames it into
place (output_dir.py), so it appears complete or not at all; a run that keeps its checkpoints in its
output_dir writes into it as it is (`staged=False`).

The tokenizer's limit follows one rule, `input_limit`: the writer sets it in the saved
tokenizer_config.json, whether the tokenizer came as a source folder's files (copied as they are) or
as a tokenizer object (saved); `limit_tokenizer` sets it on the tokenizer a Trainer run saves itself.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from linformer_kit.models.config_rules import input_limit, longest_input
from linformer_kit.models.sentence_transformers_folder import carry_sentence_transformers_files
from linformer_kit.output_dir import check_output_dir, is_same_or_inside, saved_files, staged_output_dir

if TYPE_CHECKING:
    from transformers import PreTrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

# a model folder's tokenizer files: copied as they are from the folder a model was made from
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "sentencepiece.bpe.model",
    "spiece.model",
)


def check_target_dir(source: str | Path, output_dir: str | Path, overwrite: bool) -> None:
    """ValueError unless `output_dir` may receive a model made from `source`: new or empty (or `overwrite`),
    and neither the source directory nor one holding it (even with `overwrite`)."""
    out = check_output_dir(output_dir, "output_dir")
    if is_same_or_inside(source, out):
        raise ValueError(
            f"output_dir {str(output_dir)!r} is (or contains) the source directory {str(source)!r}: "
            "writing there would overwrite or delete the model being converted; choose another output_dir"
        )
    if out.is_dir() and any(out.iterdir()) and not overwrite:
        held = saved_files(out) or sorted(p.name for p in out.iterdir())[:5]
        raise ValueError(
            f"output_dir {str(output_dir)!r} is not empty (it holds {', '.join(held)}): choose a new "
            "directory, or pass --overwrite to replace all of it"
        )


def write_model_dir(
    model: PreTrainedModel,
    output_dir: str | Path,
    *,
    source: str | Path | None = None,
    tokenizer: PreTrainedTokenizerBase | None = None,
    max_length: int | None = None,
    metrics: dict[str, Any] | None = None,
    card: str | None = None,
    overwrite: bool = False,
    staged: bool = True,
) -> Path:
    """Write `model` and what goes with it to `output_dir` (the module docstring's layout); returns it.

    source      the folder the model was made from: its tokenizer files are copied (unless `tokenizer`
                is given) and its sentence-transformers pipeline is carried
    tokenizer   a tokenizer to save with the model instead of `source`'s files
    max_length  the length the model was made for (`--max-length`): the tokenizer and pipeline then read
                exactly the model's longest input; without it, their own limit capped at that
    metrics     written to metrics.json, paths made `portable`; `card`: README.md
    staged      True: written beside output_dir and renamed into place (complete or not at all;
                `overwrite` replaces an existing folder, which `check_target_dir` allowed); False:
                written into output_dir as it is (a run's folder, beside its checkpoints)
    """
    longest = longest_input(model.config)  # a Linformer's max_seq_len
    if not staged:
        folder = Path(output_dir)
        folder.mkdir(parents=True, exist_ok=True)
        _write(model, folder, source, tokenizer, longest, max_length, metrics, card)
        return folder
    with staged_output_dir(output_dir, replace=overwrite) as staging:
        _write(model, staging, source, tokenizer, longest, max_length, metrics, card)
    return Path(output_dir)


def _write(
    model: PreTrainedModel,
    folder: Path,
    source: str | Path | None,
    tokenizer: PreTrainedTokenizerBase | None,
    longest: int,
    max_length: int | None,
    metrics: dict[str, Any] | None,
    card: str | None,
) -> None:
    model.save_pretrained(folder)  # safetensors
    if tokenizer is not None:
        tokenizer.save_pretrained(folder)
    elif source is not None:
        for name in TOKENIZER_FILES:
            if (Path(source) / name).is_file():
                shutil.copy2(Path(source) / name, folder / name)
    _limit_saved_tokenizer(folder / "tokenizer_config.json", longest, exact=max_length is not None)
    if source is not None:
        carry_sentence_transformers_files(source, folder, longest, max_length)
    write_metrics_and_card(folder, metrics, card)


def _limit_saved_tokenizer(path: Path, longest: int, exact: bool) -> None:
    """The saved tokenizer's model_max_length by `input_limit`, so `truncation=True` truncates to what runs."""
    if not path.is_file():
        return
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings["model_max_length"] = input_limit(settings.get("model_max_length"), longest, exact)
    path.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def limit_tokenizer(tokenizer: PreTrainedTokenizerBase, model_config: PreTrainedConfig) -> None:
    """Give a tokenizer the model's longest input (`input_limit`), so `truncation=True` truncates to a
    length that runs, before it is saved with the model (and its checkpoints) by a Trainer.

    A freshly trained tokenizer has no limit (`model_max_length` ~1e30): pipelines and
    sentence-transformers then pass over-long inputs through and the model raises. Models without
    a `max_seq_len` (not Linformer) keep their tokenizer's own limit.
    """
    longest = getattr(model_config, "max_seq_len", None)
    if longest is not None:
        tokenizer.model_max_length = input_limit(tokenizer.model_max_length, longest)


def write_metrics_and_card(folder: str | Path, metrics: dict[str, Any] | None, card: str | None) -> None:
    """metrics.json (`metrics`, `portable`) and README.md (`card`, the model card) into `folder`, each if given."""
    folder = Path(folder)
    if metrics is not None:
        (folder / "metrics.json").write_text(json.dumps(portable(metrics), indent=2), encoding="utf-8")
    if card is not None:
        (folder / "README.md").write_text(card, encoding="utf-8")


def portable(value: Any) -> Any:
    """A JSON-ready copy of `value` with no absolute path in it.

    Local paths are kept as given when relative, made relative to the working directory when under it,
    and cut to their last component otherwise: a published folder carries no absolute path of the
    machine it was made on. Objects (callbacks, ...) are written by their class name, not their address.
    """
    if isinstance(value, dict):
        return {str(key): portable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable(item) for item in value]
    if isinstance(value, str):
        return _portable_path(value) if os.path.isabs(value) else value
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return type(value).__name__


def _portable_path(path: str) -> str:
    relative = os.path.relpath(path, os.getcwd())
    return Path(path).name if relative.startswith("..") else relative


__all__ = [
    "TOKENIZER_FILES",
    "check_target_dir",
    "limit_tokenizer",
    "portable",
    "write_metrics_and_card",
    "write_model_dir",
]
