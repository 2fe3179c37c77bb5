"""Which checkpoint-* folder a run resumes from: the newest *complete* one.

`Trainer` writes checkpoint-N/ file by file (config and weights, optimizer, scheduler, RNG states,
trainer_state.json last), and `transformers.trainer_utils.get_last_checkpoint` takes the highest
N whether or not that writing finished. A run killed (SIGKILL, power loss, a full disk) while
writing checkpoint-N could then never resume. Here a checkpoint counts only if every file a resume
reads is there and whole: config.json and trainer_state.json parse, the safetensors header is
complete and the data it announces is all there, and the torch archives (optimizer, scheduler, RNG
states) end in their zip directory, which torch writes last. Only headers and file ends are read.
Resuming from an older complete checkpoint redoes a few steps and ends with the same weights.
"""

from __future__ import annotations

import json
import re
import struct
import zipfile
from pathlib import Path

CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def checkpoint_folders(output_dir: str | Path) -> list[Path]:
    """checkpoint-N folders of `output_dir`, newest (highest N) first."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and CHECKPOINT.match(p.name)]
    return sorted(found, key=lambda p: int(CHECKPOINT.match(p.name)[1]), reverse=True)


def last_complete_checkpoint(output_dir: str | Path) -> tuple[Path | None, dict[str, str]]:
    """(newest complete checkpoint or None, {newer incomplete checkpoint: what is wrong with it})."""
    skipped = {}
    for checkpoint in checkpoint_folders(output_dir):
        problem = checkpoint_problem(checkpoint)
        if problem is None:
            return checkpoint, skipped
        skipped[checkpoint.name] = problem
    return None, skipped


def checkpoint_problem(checkpoint: Path) -> str | None:
    """What makes `checkpoint` unusable for a resume ('optimizer.pt is truncated'), or None."""
    for name in ("config.json", "trainer_state.json"):
        try:
            json.loads((checkpoint / name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return f"{name} is missing"
        except (OSError, ValueError):
            return f"{name} is truncated or not JSON"
    problem = _weights_problem(checkpoint)
    if problem is not None:
        return problem
    rng_states = sorted(p.name for p in checkpoint.glob("rng_state*.pth"))
    for name in ("optimizer.pt", "scheduler.pt", *(rng_states or ["rng_state.pth"])):
        if not (checkpoint / name).is_file():
            return f"{name} is missing"
        if not zipfile.is_zipfile(checkpoint / name):  # torch.save archives end in their zip directory
            return f"{name} is truncated"
    return None


def _weights_problem(checkpoint: Path) -> str | None:
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
