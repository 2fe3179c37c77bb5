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
files (`share_saved_weights`). It also holds the one rule for a model's longest input
(`longest_input`, and its inverse `position_rows`), for what a tokenizer or pipeline saved with it
reads (`input_limit`), and for which task head a saved model holds (`head_of`). This module is part of the code a saved
directory carries (models/remote_code.py), so it imports only transformers, safetensors and the
standard library.
"""

from __future__ import annotations

import json
import logging
import os
import struct
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, get_args

from safetensors import SafetensorError
from transformers import PreTrainedConfig, PreTrainedModel
from transformers.utils import logging as hf_logging

logger = logging.getLogger(__name__)

# Where a saved model keeps its weights; pickled checkpoints (pytorch_model.bin) are never loaded.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
VOCABULARY_FILES = ("tokenizer.json", "vocab.txt", "vocab.json", "sentencepiece.bpe.model", "spiece.model")


def check_model_dir(path: str | Path, what: str = "model", *, tokenizer: bool = False) -> Path:
    """A local model folder with config.json and safetensors weights (and tokenizer files if asked).

    Raises ValueError naming the folder and what it lacks; reads nothing but the file names.
    """
    folder = Path(path).expanduser()
    if not folder.exists():
        raise ValueError(f"{what}: no such directory: {str(path)!r}")
    if not folder.is_dir():
        raise ValueError(f"{what}: {str(path)!r} is a file; give the model's directory")
    if not (folder / "config.json").is_file():
        raise ValueError(f"{what}: {str(path)!r} is not a model directory (no config.json)")
    check_safetensors(folder, what)
    problem = weights_problem(folder)
    if problem is not None:  # named here: from_pretrained would say only that the directory fails
        name, detail = problem.split(" ", 1)  # "model.safetensors is truncated (700 of 9164 bytes)"
        raise ValueError(
            f"{what}: cannot read the weights in {str(folder / name)!r} (truncated or corrupt?): it {detail}; "
            "save or copy the model again"
        )
    if tokenizer and not any((folder / name).is_file() for name in VOCABULARY_FILES):
        raise ValueError(
            f"{what}: {str(path)!r} has no tokenizer files ({', '.join(VOCABULARY_FILES)}): its text would "
            "be tokenized with nothing but unknown tokens; copy the tokenizer the model was trained with "
            "into it (`tokenizer.save_pretrained(dir)`)"
        )
    return folder


def check_safetensors(folder: Path, what: str = "model") -> None:
    """ValueError unless the folder holds safetensors weights (pickled ones are named, never loaded)."""
    if any((folder / name).is_file() for name in WEIGHT_FILES):
        return
    pickled = sorted(p.name for p in (*folder.glob("*.bin"), *folder.glob("*.pt")))
    also = f" (only pickled {pickled})" if pickled else ""
    raise ValueError(
        f"{what}: {str(folder)!r} has no .safetensors weights{also}; linformer-kit never unpickles "
        "checkpoints. Convert it once with transformers (`model.save_pretrained(dir)` writes "
        "safetensors) on a machine you trust"
    )


def weights_problem(checkpoint: Path) -> str | None:
    """What is wrong with a folder's safetensors weights ('model.safetensors is truncated ...'), or None."""
    index = checkpoint / "model.safetensors.index.json"
    if index.is_file():
        try:
            shards = sorted(set(json.loads(index.read_text(encoding="utf-8"))["weight_map"].values()))
        except (OSError, ValueError, KeyError):
            return "model.safetensors.index.json is truncated or not JSON"
    else:
        shards = ["model.safetensors"]
    for name in shards:
        problem = safetensors_problem(checkpoint / name)
        if problem is not None:
            return f"{name} {problem}"
    return None


def safetensors_problem(path: Path) -> str | None:
    """'is missing' / 'is truncated' / ... for a safetensors file, from its header and size only."""
    try:
        with open(path, "rb") as f:
            (header_size,) = struct.unpack("<Q", f.read(8))
            size = path.stat().st_size
            if 8 + header_size > size:
                return "is truncated (its header is cut off)"
            header = json.loads(f.read(header_size))
    except FileNotFoundError:
        return "is missing"
    except (OSError, ValueError, struct.error):
        return "is truncated or not a safetensors file"
    end = max((t["data_offsets"][1] for k, t in header.items() if k != "__metadata__"), default=0)
    if 8 + header_size + end > size:
        return f"is truncated ({size} of {8 + header_size + end} bytes)"
    return None


# position ids start after the pad id in these (fairseq's numbering): the longest input is shorter by pad + 1
PAD_OFFSET_TYPES = ("roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "data2vec-text")


def first_position_row(config: Mapping[str, Any] | PreTrainedConfig) -> int:
    """The position-table row of position 0: the one numbering rule, for every model type.

    RoBERTa-style numbering (the types above, and a Linformer with position_style "roberta") starts
    after the pad row, at pad_token_id + 1; BERT-style at row 0. `config` is a config object or
    config.json as a dict: the callers that check a folder before loading anything have only the dict.
    """
    model_type = _setting(config, "model_type")
    roberta_numbering = model_type in PAD_OFFSET_TYPES or (
        model_type == "linformer" and _setting(config, "position_style", "roberta") == "roberta"
    )
    return int(_setting(config, "pad_token_id") or 0) + 1 if roberta_numbering else 0


def longest_input(config: Mapping[str, Any] | PreTrainedConfig) -> int:
    """The longest input a model's config allows: its position rows from position 0 on (514 -> 512 in
    RoBERTa's numbering, max_position_embeddings in BERT's)."""
    return int(_setting(config, "max_position_embeddings", 512)) - first_position_row(config)


def position_rows(config: Mapping[str, Any] | PreTrainedConfig, longest: int) -> int:
    """max_position_embeddings for inputs up to `longest` tokens in `config`'s numbering: `longest_input`'s
    inverse, for a model built or extended to a length."""
    return first_position_row(config) + longest


def input_limit(own: int | None, longest: int, exact: bool = False) -> int:
    """What a tokenizer (`model_max_length`) or sentence-transformers pipeline (`max_seq_length`) saved
    with a model reads up to, given its own limit and the model's longest input.

    `exact` (the model was made for a length: `convert` / `extend --max-length`): the longest input, so
    an extended model reads that long. Otherwise its own limit capped at the longest input, so that
    `truncation=True` truncates to a length that runs; no limit of its own (None, 0) is the longest input.
    """
    return longest if exact or not own else min(own, longest)


# the task heads a saved model can hold, as the suffix of its class name ("Model": the bare encoder)
Head = Literal["Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification"]
HEAD_NAMES: tuple[Head, ...] = get_args(Head)


def head_of(config: Mapping[str, Any] | PreTrainedConfig) -> Head:
    """The task head of the model a config (or config.json as a dict) was saved from: the suffix of the
    first class in its `architectures` that ends in one ("BertForMaskedLM" -> "ForMaskedLM"), else
    "Model" (no architectures, or only other heads: the bare encoder). The one rule of every reader of
    a model folder (convert's source, extend's Linformer, distill's teacher)."""
    for name in _setting(config, "architectures") or []:
        for head in HEAD_NAMES[1:]:
            if name.endswith(head):
                return head
    return "Model"


def auto_class_of(config: Mapping[str, Any] | PreTrainedConfig) -> Any:
    """The transformers Auto class that loads the model of `config` with the head it holds (`head_of`):
    `AutoModel`, `AutoModelForMaskedLM`, `AutoModelForSequenceClassification` or
    `AutoModelForTokenClassification` (the class within it follows the config's model_type)."""
    import transformers

    head = head_of(config)
    return getattr(transformers, "AutoModel" if head == "Model" else f"AutoModel{head}")


def _setting(config: Mapping[str, Any] | PreTrainedConfig, name: str, default: Any = None) -> Any:
    """A field of a config object, or of config.json read as a dict."""
    return config.get(name, default) if isinstance(config, Mapping) else getattr(config, name, default)


def read_config_json(path: str | Path, what: str = "model") -> dict[str, Any]:
    """config.json of a model folder as a dict; ValueError naming the file if it is not JSON."""
    file = Path(path).expanduser() / "config.json"
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{what}: cannot read {str(file)!r}: {err}") from None
    if not isinstance(config, dict) or "model_type" not in config:
        raise ValueError(f"{what}: {str(file)!r} names no model_type")
    return config


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
