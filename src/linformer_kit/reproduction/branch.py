"""Branch a study's pretraining run from another run's checkpoint: the steps both runs share are trained once.

Under a length schedule whose short phases are attended exactly (`short_inputs="exact"`, every block
n <= k), a Linformer never uses its E and F: until its first step at a length above its smallest k it
*is* the full-attention run of the same options (same weights, optimizer state, data, masks), and E
and F get no gradient, so the optimizer never touches them. A study that compares k, sharing or the
projection's start therefore trains that trunk once and branches every variant at its end (a recipe's
`trunk: {run: NAME, step: N}`, reproduction/recipe.py):

    trunk run: linformer pretrain ... --keep-checkpoint N
        └── output_dir/trunk-N/  (checkpoint-N, kept apart from save_total_limit's rotation:
                                  train/checkpoints.py, `KeepCheckpoint`)
    branch run: the study writes its start (`start_branch`), then runs linformer pretrain ... --resume true
        └── output_dir/checkpoint-N/ = the trunk's weights, optimizer state by parameter name,
            scheduler, RNG states and trainer_state (step, curve, data position), with this run's own
            E and F as its model builds them; the resume is `Trainer.train(resume_from_checkpoint=...)`.

With a deterministic start of E and F (the window start) the branch ends with the weights a run
from step 0 would have (tests/reproduction/test_branch.py checks it bit for bit); with the random start, E
and F are drawn from this run's seed as a model built at step 0 draws them, but the trunk's other
weights were started by a model without them: the same distribution, not the same draw, so such a
branch is a run of its own (`branch_equals_step_0`; the study runs it only from its trunk).

What the checkpoint cannot say (seed, learning rate, data) must be the same as the trunk's: the
study branches only runs of one recipe whose options differ in attention alone. What it can say is
checked before anything is written: the step is in both runs' exact phase, the model shapes,
max_steps and batch size agree.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import cast

import torch
from safetensors.torch import load_file
from torch import nn
from transformers import PreTrainedModel, Trainer, set_seed

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.models.convert import TOKENIZER_FILES
from linformer_kit.models.folder_checks import read_config_json
from linformer_kit.nn.options import OPTION_NAMES
from linformer_kit.nn.projection import SequenceProjection
from linformer_kit.train.checkpoints import checkpoint_problem
from linformer_kit.train.curve import CURVE_FILE
from linformer_kit.train.pretrain.config import PretrainConfig
from linformer_kit.train.schedule import Schedule

# the only config fields in which a branch may differ from its trunk: the Linformer options (OPTION_NAMES),
# and the fields a save writes without describing the model
METADATA_FIELDS = ("transformers_version", "auto_map", "architectures", "_name_or_path", "dtype")
BRANCH_FILE = "branched_from.json"  # in a branched run's output_dir: where it started


def branch_equals_step_0(options: dict) -> bool:
    """Whether a branch of a run with these pretrain options ends as the run from step 0 would: E and F
    start deterministically (the window start, pretrain's default), so building them draws no random numbers."""
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


def start_branch(config: PretrainConfig, source: Path) -> int:
    """Write config.output_dir/checkpoint-N, the start of a branch at the trunk's checkpoint folder `source`
    (a trunk-N), for the run `config` describes to resume from (`resume=True`, `linformer pretrain
    --resume true`). Every check comes first: a refused branch writes nothing. Returns N.

    The branch's model is built as `pretrain` builds it at step 0 (this run's seed, then the model), so
    its E and F are the ones the run from step 0 starts with; its other weights are the trunk's.
    """
    if config.init_from is not None:
        raise ValueError(
            f"trunk {str(source)!r} and init_from={config.init_from!r} both give the starting weights: drop one"
        )
    if not source.is_dir():
        raise ValueError(f"trunk: no such checkpoint folder: {str(source)!r}")
    wanted = config.continued_model_config(read_config_json(source, "trunk"))
    step = check_branch_source(source, wanted, config.phases, config.max_steps,
                               config.per_device_train_batch_size)  # fmt: skip
    set_seed(config.seed)  # pretrain's start: the seed, then the model (`build_model`)
    model = LinformerForMaskedLM(wanted)
    write_branch_checkpoint(model, source, Path(config.output_dir))
    return step


def check_branch_source(
    source: Path, wanted: LinformerConfig, schedule: Schedule, max_steps: int, batch_size: int
) -> int:
    """The step of checkpoint folder `source`, after every check a branch at it must pass (ValueError)."""
    problem = checkpoint_problem(source)
    if problem is not None:
        raise ValueError(f"trunk: {str(source)!r} is not a complete checkpoint: {problem}")
    state = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))
    step = state["global_step"]
    for name, theirs, ours in (("max_steps", state.get("max_steps"), max_steps),
                               ("per_device_train_batch_size", state.get("train_batch_size"), batch_size)):  # fmt: skip
        if theirs != ours:
            raise ValueError(
                f"trunk: {name}={ours} differs from the trunk's {theirs} ({source}): a branch continues "
                "the trunk's run, so everything but the attention must be the same"
            )
    trunk, mine = LinformerConfig.from_pretrained(source).to_dict(), wanted.to_dict()  # both with defaults
    drop = {*OPTION_NAMES, *METADATA_FIELDS}
    for key in sorted((set(trunk) | set(mine)) - drop):
        if trunk.get(key) != mine.get(key):
            raise ValueError(
                f"trunk: the model's {key}={mine.get(key)!r} differs from the trunk's {trunk.get(key)!r} "
                f"({source / 'config.json'}): a branch may differ from its trunk in attention only "
                f"({', '.join(OPTION_NAMES)})"
            )
    for who, config in (("this run", mine), ("the trunk", trunk)):
        exact = exact_steps(config, schedule, max_steps)
        if step > exact:
            raise ValueError(
                f"trunk: {source.name} is at step {step}, but {who} attends every block exactly only in "
                f"its first {exact} steps (k={config.get('projected_length')}, short_inputs="
                f"{config.get('short_inputs')!r}, schedule {[list(phase) for phase in schedule]}): after that the runs differ"
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


def write_branch_checkpoint(model: PreTrainedModel, source: Path, output_dir: Path) -> None:
    """output_dir/checkpoint-N: the trunk's state at step N (its tokenizer too) with `model` (its own E and F).

    The optimizer state moves by parameter name (the Trainer's optimizer groups, decay and no decay, in
    `named_parameters` order); E and F start with none, as in a run whose optimizer never stepped them.
    Written under a temporary name and renamed when whole: a kill leaves no checkpoint-N behind.
    """
    trunk_weights = load_file(source / "model.safetensors")
    trunk_model = _trunk_skeleton(source)
    new, gone = projection_names(model), projection_names(trunk_model)
    mine = {n: p for n, p in model.named_parameters()}
    theirs = {n for n, _ in trunk_model.named_parameters()}
    unmatched = sorted((set(mine) - new) ^ (theirs - gone))
    if unmatched:
        raise ValueError(f"trunk: parameter {unmatched[0]!r} is in only one of the two models ({source})")
    with torch.no_grad():
        for name, parameter in mine.items():
            if name not in new:
                parameter.copy_(trunk_weights[name])
    state = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))
    target = output_dir / f"checkpoint-{state['global_step']}"
    partial = output_dir / f".partial-{target.name}"
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial)
    optimizer = torch.load(source / "optimizer.pt", map_location="cpu", weights_only=True)
    torch.save(_moved_optimizer(optimizer, _groups(trunk_model), _groups(model)),
               partial / "optimizer.pt")  # fmt: skip
    tokenizer = [
        source / name for name in TOKENIZER_FILES if (source / name).is_file()
    ]  # as a checkpoint has it
    for file in [
        source / "scheduler.pt",
        source / "trainer_state.json",
        *source.glob("rng_state*.pth"),
        *tokenizer,
    ]:
        shutil.copyfile(file, partial / file.name)
    os.replace(partial, target)
    # the trunk's curve up to the step (trainer_state holds it for metrics.json; the file is the live copy)
    lines = [json.dumps(entry) + "\n" for entry in state["log_history"]]  # each entry has its step
    (output_dir / CURVE_FILE).write_text("".join(lines), encoding="utf-8")
    record = {"trunk": source.parent.name, "checkpoint": source.name, "step": state["global_step"]}
    (output_dir / BRANCH_FILE).write_text(json.dumps(record) + "\n", encoding="utf-8")


def branched_from(output_dir: str | Path) -> dict | None:
    """What a branched run started from ({"trunk": run folder, "checkpoint": name, "step": N}), or None."""
    path = Path(output_dir) / BRANCH_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _trunk_skeleton(source: Path) -> nn.Module:
    """The trunk's model without weights (meta tensors): its parameter names and groups."""
    with torch.device("meta"):
        return LinformerForMaskedLM(LinformerConfig.from_pretrained(source))


def _groups(model: nn.Module) -> list[list[str]]:
    """The Trainer's optimizer groups of `model` as parameter names (`Trainer.create_optimizer`'s rule)."""
    # The Trainer's own method, which reads nothing of the Trainer it is called on: building one here would
    # check arguments (an evaluation without its data) that writing a checkpoint has no use for.
    decay = set(Trainer.get_decay_parameter_names(cast(Trainer, None), model))
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    return [[n for n, _ in named if n in decay], [n for n, _ in named if n not in decay]]


def _moved_optimizer(state: dict, trunk: list[list[str]], branch: list[list[str]]) -> dict:
    """The trunk's optimizer state dict re-indexed for the branch's groups (by name; new names: no state)."""
    if len(state["param_groups"]) != len(trunk):
        raise ValueError(
            f"trunk: the optimizer has {len(state['param_groups'])} parameter groups, "
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
