"""Which checkpoint-* folder a run resumes from: the newest *complete* one.

`Trainer` writes checkpoint-N/ file by file (config and weights, optimizer, scheduler, RNG states,
trainer_state.json last), and `transformers.trainer_utils.get_last_checkpoint` takes the highest
N whether or not that writing finished. A run killed (SIGKILL, power loss, a full disk) while
writing checkpoint-N could then never resume. Here a checkpoint counts only if every file a resume
reads is there and whole: config.json and trainer_state.json parse, the safetensors header is
complete and the data it announces is all there, and the torch archives (optimizer, scheduler, RNG
states) end in their zip directory, which torch writes last. Only headers and file ends are read.
Resuming from an older complete checkpoint redoes a few steps and ends with the same weights.

`KeepCheckpoint` (`linformer pretrain --keep-checkpoint N`) keeps one checkpoint out of the Trainer's
rotation as output_dir/trunk-N: the folder a study starts other runs from (reproduction/branch.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zipfile
from pathlib import Path

from transformers import TrainerCallback

from linformer_kit.models.folder_checks import weights_problem

CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")
TRUNK_PREFIX = "trunk-"  # output_dir/trunk-N: checkpoint-N kept out of the rotation (`KeepCheckpoint`)


def checkpoint_folders(output_dir: str | Path) -> list[Path]:
    """checkpoint-N folders of `output_dir`, newest (highest N) first."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return []
    steps = {p: int(match[1]) for p in folder.iterdir() if p.is_dir() and (match := CHECKPOINT.match(p.name))}
    return sorted(steps, key=steps.__getitem__, reverse=True)


def last_complete_checkpoint(output_dir: str | Path) -> tuple[Path | None, dict[str, str]]:
    """(newest complete checkpoint or None, {newer incomplete checkpoint: what is wrong with it})."""
    skipped: dict[str, str] = {}
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
    problem = weights_problem(checkpoint)
    if problem is not None:
        return problem
    rng_states = sorted(p.name for p in checkpoint.glob("rng_state*.pth"))
    for name in ("optimizer.pt", "scheduler.pt", *(rng_states or ["rng_state.pth"])):
        if not (checkpoint / name).is_file():
            return f"{name} is missing"
        if not zipfile.is_zipfile(checkpoint / name):  # torch.save archives end in their zip directory
            return f"{name} is truncated"
    return None


class KeepCheckpoint(TrainerCallback):
    """Keeps checkpoint-`step` as output_dir/trunk-`step` (hard links; save_total_limit's rotation never
    removes it). Written under a temporary name and renamed when whole: a kill leaves no half a trunk-N."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step != self.step or not state.is_world_process_zero:
            return
        source = Path(args.output_dir) / f"checkpoint-{self.step}"
        target = Path(args.output_dir) / f"{TRUNK_PREFIX}{self.step}"
        partial = target.with_name(f".partial-{target.name}")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(source, partial, copy_function=os.link)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
