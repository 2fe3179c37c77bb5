"""A model folder checked before anything loads: config.json, safetensors weights, tokenizer files.

`check_model_dir` reads nothing but file names and the safetensors headers, so a command refuses a
wrong folder (no config.json, pickled weights only, a weight file cut off while copied) before it
loads a model, with an error that names the file. `read_config_json` reads config.json alone, for
the checks that need a config's fields and no model. Their own room apart from models/loading.py
(which loads the weights): checkpoints (train/checkpoints.py) and every command's preflight read
them without loading anything. Part of the code a saved directory carries (models/remote_code.py):
standard library only.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

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
