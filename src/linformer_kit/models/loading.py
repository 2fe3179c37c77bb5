"""Loading saved weights without silent re-initialisation, and with errors that name the file.

`from_pretrained` fills every weight the checkpoint lacks with fresh random values and only logs a
report. That is right for a new task head (a classifier on top of an MLM checkpoint) and wrong
everywhere else: a config.json whose model_type disagrees with the weights, or Linformer options
(k, sharing, projection) that differ from the checkpoint's, would give a random encoder that
trains without complaint. `check_loading_info` lets head weights be new or dropped (and the
pooler be new) and refuses every other missing or unused weight.

The file policy of the Linformer classes lives here too, so `modeling_linformer.py` stays model
code: their `from_pretrained` reads safetensors only and names the Linformer options a call changes
(`strict_from_pretrained`), their `save_pretrained` gives the weights the mode of the other saved
files (`share_saved_weights`). What is read before any load has rooms of its own: a folder's files
(`check_model_dir`, `read_config_json`: models/folder_checks.py) and the rules a config gives (its
longest input, the tokenizer's limit, its task head: models/config_rules.py). This module is part of
the code a saved directory carries (models/remote_code.py), so it imports only transformers,
safetensors, the standard library and those two rooms.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from safetensors import SafetensorError
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.utils import logging as hf_logging

from linformer_kit.models.config_rules import head_of, longest_input
from linformer_kit.models.folder_checks import check_model_dir, check_safetensors, read_config_json

logger = logging.getLogger(__name__)


def load_pretrained(
    model_class: Any, path: str | Path, what: str = "model", *, report_head: bool = True, **kwargs: Any
) -> PreTrainedModel:
    """`model_class.from_pretrained(path, **kwargs)` from safetensors, refusing silent re-initialisation.

    `model_class` is a model class or an `AutoModel*` class. Errors are ValueErrors naming `path`.
    `report_head`: log one INFO line on task-head tensors that are new (to be trained) or not used;
    False for a caller that uses only the encoder (the spectrum), where it would be noise.
    """
    kwargs = {**kwargs, "use_safetensors": True, "output_loading_info": True}
    try:
        with _quiet_transformers():  # its load report is replaced by our check and one line below
            model, info = model_class.from_pretrained(path, **kwargs)
    except SafetensorError as err:
        raise ValueError(
            f"{what}: cannot read the weights in {str(path)!r} (truncated or corrupt?): {err}"
        ) from None
    except (OSError, RuntimeError) as err:
        raise ValueError(f"{what}: cannot load {str(path)!r}: {str(err).splitlines()[0]}") from None
    check_loading_info(model, info, path, what)
    head = _head_report(model, info) if report_head else ""
    if head:
        logger.info(f"{what}: {type(model).__name__} from {path}: {head}")
    return model


_QUIET = threading.Lock()  # one quiet load at a time: each restores exactly what it found


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' INFO / WARNING lines and progress bars off for one call (its errors stay)."""
    with _QUIET:
        verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        try:
            yield
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()


def _head_report(model: PreTrainedModel, info: dict) -> str:
    """What loading did outside the encoder (checked separately): new task-head tensors, unused ones."""
    parts = []
    new = [key for key in info.get("missing_keys", ()) if key not in encoder_keys(model, [key])]
    unused = [key for key in info.get("unexpected_keys", ()) if key not in encoder_keys(model, [key])]
    if new:
        parts.append(f"new task head ({len(new)} tensors, trained from scratch: {_some(sorted(new))})")
    if unused:
        parts.append(f"the checkpoint's {len(unused)} head tensors not used ({_some(sorted(unused))})")
    return "; ".join(parts)


def check_loading_info(
    model: PreTrainedModel, info: dict, path: str | Path, what: str = "model", hint: str = ""
) -> None:
    """Refuse encoder weights that the checkpoint lacks, holds unused, or holds in another shape."""
    missing = encoder_keys(model, info.get("missing_keys", ()))
    unused = encoder_keys(model, info.get("unexpected_keys", ()))
    if not (missing or unused):
        return
    problems = []
    if missing:
        problems.append(
            f"{len(missing)} weights are not in the checkpoint and would be randomly initialised ({_some(missing)})"
        )
    if unused:
        problems.append(f"{len(unused)} weights of the checkpoint would be dropped ({_some(unused)})")
    model_type = getattr(model.config, "model_type", "?")
    raise ValueError(
        f"{what}: the weights in {str(path)!r} do not fit a {type(model).__name__} built from its config "
        f"(model_type={model_type!r}): "
        + "; ".join(problems)
        + (f". {hint}" if hint else ". Check that config.json belongs to these weights")
    )


def encoder_keys(model: PreTrainedModel, keys: Any) -> list[str]:
    """The keys that belong to the encoder, not to a task head (new or dropped) or the pooler (new)."""
    prefix = model.base_model_prefix
    is_base = model.base_model is model
    encoder_modules = {name for name, _ in model.base_model.named_children()}
    found = []
    for key in sorted(keys):
        if key.startswith(f"{prefix}."):
            inner = key[len(prefix) + 1 :]
        elif is_base and key.split(".")[0] in encoder_modules:
            inner = key
        else:
            continue  # a head's weight: a new classifier, or the MLM head of a checkpoint
        if not inner.startswith("pooler."):
            found.append(key)
    return found


def _some(keys: list[str], shown: int = 3) -> str:
    more = f", ... {len(keys) - shown} more" if len(keys) > shown else ""
    return ", ".join(keys[:shown]) + more


# --- the Linformer classes' own from_pretrained and save_pretrained (models/modeling_linformer.py) ---------

# The options that decide which E, F and position weights a Linformer has: a from_pretrained that changes
# one of them cannot use the checkpoint's weights. The other Linformer options change no weight.
WEIGHT_SHAPING_OPTIONS = (
    "projected_length",
    "sharing",
    "projection",
    "max_position_embeddings",
    "position_style",
)


def strict_from_pretrained(load: Callable[..., Any], path: Any, *model_args: Any, **kwargs: Any) -> Any:
    """`load(path, ...)`, a `PreTrainedModel.from_pretrained`, from safetensors only (a pickle is never
    loaded), and never re-initialising encoder weights silently.

    New or dropped task-head weights are fine (a classifier on an MLM checkpoint). Anything else the
    checkpoint lacks or holds unused is a ValueError, which names the Linformer options the call
    changes (`_changed_options`). Returns the model, or (model, loading info) with output_loading_info.
    """
    if kwargs.get("use_safetensors") is False:
        raise ValueError(
            "use_safetensors=False: Linformer checkpoints load from safetensors only (no unpickling)"
        )
    kwargs["use_safetensors"] = True
    wants_info = kwargs.pop("output_loading_info", False)
    if Path(str(path)).is_dir():
        check_safetensors(Path(str(path)), "from_pretrained")
    try:
        model, info = load(path, *model_args, output_loading_info=True, **kwargs)
    except SafetensorError as err:
        raise ValueError(f"cannot read the weights in {str(path)!r} (truncated or corrupt?): {err}") from None
    except RuntimeError as err:  # a weight of another shape (k changed) and ignore_mismatched_sizes=False
        hint = _changed_options(path, kwargs) or str(err).splitlines()[0]
        raise ValueError(
            f"the weights in {str(path)!r} have other shapes than this model's. {hint}"
        ) from None
    check_loading_info(model, info, path, "from_pretrained", hint=_changed_options(path, kwargs))
    return (model, info) if wants_info else model


def _changed_options(path: Any, kwargs: dict[str, Any]) -> str:
    """'sharing='kv' (the checkpoint has 'headwise')...' for the weight-shaping options `kwargs` change."""
    try:
        saved = read_config_json(path)
    except ValueError:
        return ""
    asked = dict(kwargs)
    config = asked.get("config")
    if isinstance(config, PreTrainedConfig) and config.model_type == "linformer":
        asked.update({key: getattr(config, key) for key in WEIGHT_SHAPING_OPTIONS})
    changed = [
        f"{key}={asked[key]!r} (the checkpoint has {saved.get(key)!r})"
        for key in WEIGHT_SHAPING_OPTIONS
        if key in asked and key in saved and asked[key] != saved[key]
    ]
    if not changed:
        return ""
    return (
        f"from_pretrained with {', '.join(changed)} would start E/F from random values; to change the "
        "Linformer options of a trained model, convert it: `linformer pretrain --init-from DIR` "
        "(linformer_kit.train.init_from.linformer_from_checkpoint) starts new E/F from the old model"
    )


def share_saved_weights(save_directory: str | os.PathLike) -> None:
    """The saved weights get the mode of the other files `save_pretrained` writes: 0o666 less the umask.

    safetensors writes a weight file to a temporary file (created `-rw-------`) and renames it, so
    `model.safetensors` came out readable by its owner only, whatever the umask, beside a
    `-rw-r--r--` config.json.
    """
    mode = 0o666 & ~_umask()
    for path in Path(save_directory).glob("model*.safetensors"):
        path.chmod(mode)


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (os.umask can only swap it)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


__all__ = [  # with the names of models/folder_checks.py and models/config_rules.py that train/distill,
    # longdocs and models/configuration_linformer.py import from here
    "WEIGHT_SHAPING_OPTIONS",
    "check_loading_info",
    "check_model_dir",
    "encoder_keys",
    "head_of",
    "load_pretrained",
    "longest_input",
    "read_config_json",
    "share_saved_weights",
    "strict_from_pretrained",
]
