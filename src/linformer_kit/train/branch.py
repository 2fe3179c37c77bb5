"""Branch a pretraining run from another run's checkpoint: the steps both runs share are trained once.

Under a length schedule whose short phases are attended exactly (`short_inputs="exact"`, every block
n <= k), a Linformer never uses its E and F: until its first step at a length above its smallest k it
*is* the full-attention run of the same options (same weights, optimizer state, data, masks), and E
and F get no gradient, so the optimizer never touches them. A study that compares k, sharing or the
projection's start therefore trains that trunk once and branches every variant at its end:

    trunk run (any attention that was exact before step N), --keep-checkpoint N
        └── output_dir/trunk-N/  (checkpoint-N, kept apart from save_total_limit's rotation)
    branch run, --branch-from .../trunk-N
        └── output_dir/checkpoint-N/ = the trunk's weights, optimizer state by parameter name,
            scheduler, RNG states and trainer_state (step, curve, data position), with this run's own
            E and F as its model builds them; then `Trainer.train(resume_from_checkpoint=...)`.

With a deterministic start of E and F (the window start) the branch ends with the weights a run
from step 0 would have (tests/train/test_branch.py checks it bit for bit); with the random start, E
and F are drawn from this run's seed as a model built at step 0 draws them, but the trunk's other
weights were started by a model without them: the same distribution, not the same draw, so such a
branch is a run of its own (`branch_equals_step_0`; the study runs it only from its trunk).

What the checkpoint cannot say (seed, learning rate, data) must be the same as the trunk's: the
reproduction study (`linformer reproduce`) branches only runs of one recipe whose options differ in
attention alone. What it can say is checked before any work: the step is in both runs' exact phase,
the model shapes, max_steps and batch size agree.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import TrainerCallback

from linformer_kit.models import LinformerConfig
from linformer_kit.nn.options import LinformerOptions
from linformer_kit.nn.projection import SequenceProjection
from linformer_kit.train.checkpoints import checkpoint_problem
from linformer_kit.train.curve import CURVE_FILE
from linformer_kit.train.schedule import Schedule

# the Linformer attention options: the only config fields in which a branch may differ from its trunk
ATTENTION_FIELDS = tuple(f.name for f in dataclasses.fields(LinformerOptions))
METADATA_FIELDS = ("transformers_version", "auto_map", "architectures", "_name_or_path", "dtype")
TRUNK_PREFIX = "trunk-"
BRANCH_FILE = "branched_from.json"  # in a branched run's output_dir: where it started


def branch_equals_step_0(options: dict) -> bool:
    """Whether a branch of a run with these pretrain options ends as the run from step 0 would: E and F
    start deterministically (the window start, pretrain's default), so building them draws no random numbers."""
    from linformer_kit.train.pretrain import PretrainConfig  # the option's one default

    default = {f.name: f.default for f in dataclasses.fields(PretrainConfig)}["projection_init"]
    return options.get("projection_init", default) != "random"


def exact_steps(config: dict, schedule: Schedule, max_steps: int) -> int:
    """How many first optimizer steps a model of `config` (a config.json dict) attends every block exactly.

    A layer with k projects a block longer than k; a block of n <= k is attended exactly only with
    short_inputs="exact". Phase i of the schedule covers steps [round(F_{i-1} T), round(F_i T)).
    """
    layers = config.get("num_hidden_layers", 1)
    k = config.get("projected_length")
    ks = [x for x in (k if isinstance(k, list) else [k] * layers) if x is not None]
    if not ks:
        return max_steps  # full attention in every layer
    if config.get("short_inputs", "project") != "exact":
        return 0  # E and F are used at every length
    end = 0.0
    for length, fraction in schedule:
        if length > min(ks):
            return round(end * max_steps)
        end += fraction
    return max_steps


def check_branch_source(
    source: Path, wanted: LinformerConfig, schedule: Schedule, max_steps: int, batch_size: int
) -> int:
    """The step of checkpoint folder `source`, after every check a branch at it must pass (ValueError)."""
    problem = checkpoint_problem(source)
    if problem is not None:
        raise ValueError(f"branch_from: {str(source)!r} is not a complete checkpoint: {problem}")
    state = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))
    step = state["global_step"]
    for name, theirs, mine in (("max_steps", state.get("max_steps"), max_steps),
                               ("per_device_train_batch_size", state.get("train_batch_size"), batch_size)):  # fmt: skip
        if theirs != mine:
            raise ValueError(
                f"branch_from: {name}={mine} differs from the trunk's {theirs} ({source}): a branch continues "
                "the trunk's run, so everything but the attention must be the same"
            )
    trunk, mine = LinformerConfig.from_pretrained(source).to_dict(), wanted.to_dict()  # both with defaults
    drop = {*ATTENTION_FIELDS, *METADATA_FIELDS}
    for key in sorted((set(trunk) | set(mine)) - drop):
        if trunk.get(key) != mine.get(key):
            raise ValueError(
                f"branch_from: the model's {key}={mine.get(key)!r} differs from the trunk's {trunk.get(key)!r} "
                f"({source / 'config.json'}): a branch may differ from its trunk in attention only "
                f"({', '.join(ATTENTION_FIELDS)})"
            )
    for who, config in (("this run", mine), ("the trunk", trunk)):
        exact = exact_steps(config, schedule, max_steps)
        if step > exact:
            raise ValueError(
                f"branch_from: {source.name} is at step {step}, but {who} attends every block exactly only in "
                f"its first {exact} steps (k={config.get('projected_length')}, short_inputs="
                f"{config.get('short_inputs')!r}, schedule {schedule}): after that the runs differ"
            )
    return step


def projection_names(model: nn.Module) -> set[str]:
    """Names of the E / F parameters (every parameter of a `SequenceProjection`), shared ones once."""
    return {
        f"{prefix}.{name}" if prefix else name
        for prefix, module in model.named_modules()
        if isinstance(module, SequenceProjection)
        for name, _ in module.named_parameters()
    } & {name for name, _ in model.named_parameters()}


def write_branch_checkpoint(trainer, source: Path, output_dir: Path) -> None:
    """output_dir/checkpoint-N: the trunk's state at step N with this trainer's model (its own E and F).

    The optimizer state moves by parameter name (the Trainer's two groups, decay and no decay, in
    `named_parameters` order); E and F start with none, as in a run whose optimizer never stepped them.
    Written under a temporary name and renamed when whole: a kill leaves no checkpoint-N behind.
    """
    model = trainer.model
    trunk_weights = load_file(source / "model.safetensors")
    trunk_model = _trunk_skeleton(source)
    new, gone = projection_names(model), projection_names(trunk_model)
    mine = {n: p for n, p in model.named_parameters()}
    theirs = {n for n, _ in trunk_model.named_parameters()}
    unmatched = sorted((set(mine) - new) ^ (theirs - gone))
    if unmatched:
        raise ValueError(
            f"branch_from: parameter {unmatched[0]!r} is in only one of the two models ({source})"
        )
    with torch.no_grad():
        for name, parameter in mine.items():
            if name not in new:
                parameter.copy_(trunk_weights[name])
    state = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))
    target = branch_checkpoint(source, output_dir)
    partial = output_dir / f".partial-{target.name}"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    optimizer = torch.load(source / "optimizer.pt", map_location="cpu", weights_only=True)
    torch.save(_moved_optimizer(optimizer, _groups(trainer, trunk_model), _groups(trainer, model)),
               partial / "optimizer.pt")  # fmt: skip
    for file in [source / "scheduler.pt", source / "trainer_state.json", *source.glob("rng_state*.pth")]:
        shutil.copyfile(file, partial / file.name)
    os.replace(partial, target)
    # the trunk's curve up to the step (trainer_state holds it for metrics.json; the file is the live copy)
    lines = [json.dumps(entry) + "\n" for entry in state["log_history"]]  # each entry has its step
    (output_dir / CURVE_FILE).write_text("".join(lines), encoding="utf-8")
    record = {"trunk": source.parent.name, "checkpoint": source.name, "step": state["global_step"]}
    (output_dir / BRANCH_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")


def branch_checkpoint(source: Path, output_dir: Path) -> Path:
    """Where a branch from `source` (the trunk's checkpoint at step N) writes its start: checkpoint-N."""
    step = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))["global_step"]
    return output_dir / f"checkpoint-{step}"


def branched_from(output_dir: str | Path) -> dict | None:
    """What a branched run started from ({"trunk": run folder, "checkpoint": name, "step": N}), or None."""
    path = Path(output_dir) / BRANCH_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _trunk_skeleton(source: Path) -> nn.Module:
    """The trunk's model without weights (meta tensors): its parameter names and groups."""
    from linformer_kit.models import LinformerForMaskedLM

    with torch.device("meta"):
        return LinformerForMaskedLM(LinformerConfig.from_pretrained(source))


def _groups(trainer, model: nn.Module) -> list[list[str]]:
    """The Trainer's optimizer groups of `model` as parameter names (`Trainer.create_optimizer`'s rule)."""
    decay = set(trainer.get_decay_parameter_names(model))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [[n for n, _ in named if n in decay], [n for n, _ in named if n not in decay]]


def _moved_optimizer(state: dict, trunk: list[list[str]], branch: list[list[str]]) -> dict:
    """The trunk's optimizer state dict re-indexed for the branch's groups (by name; new names: no state)."""
    if len(state["param_groups"]) != len(trunk):
        raise ValueError(
            f"branch_from: the trunk's optimizer has {len(state['param_groups'])} parameter groups, "
            f"expected the Trainer's {len(trunk)}"
        )
    old_index = {name: i for i, name in enumerate(n for group in trunk for n in group)}
    names = [n for group in branch for n in group]
    moved = {new: state["state"][old_index[n]] for new, n in enumerate(names)
             if n in old_index and old_index[n] in state["state"]}  # fmt: skip
    groups, start = [], 0
    for group, members in zip(state["param_groups"], branch, strict=True):
        groups.append({**group, "params": list(range(start, start + len(members)))})
        start += len(members)
    return {"state": moved, "param_groups": groups}


class KeepCheckpoint(TrainerCallback):
    """Keeps checkpoint-`step` as output_dir/trunk-`step` (hard links; the rotation never removes it)."""

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
