"""Run a reproduction recipe: every run is an ordinary `linformer pretrain` / `finetune` process.

    output_dir/pretrain/<run>/           a pretrained model (metrics.json with the validation curve)
    output_dir/finetune/<task>-<model>-s<seed>/   a finetuned classifier (+ eval_predictions.jsonl)
    output_dir/logs/<run>.log            the run's stdout and stderr
    output_dir/commands.sh               every command, in order, exactly as run

The first pretraining run trains the tokenizer; every other run uses it (`--tokenizer`), so all
models see identical tokens. A run whose directory holds metrics.json is done and is not run again,
so an interrupted study continues where it stopped.

A study outlives a machine (its files: reproduction/study_files.py): its results_dir (committed) holds
results.json and the shared tokenizer (`results_dir/tokenizer/`, copied there once the first run trained it), or the recipe names a committed
tokenizer folder that several studies share (`tokenizer: docs/reproduction/tokenizer`). On another
machine, a run whose record in results.json finished ("ok") with the options the recipe now gives it is
not run again: its record is carried over as it is. A finetuning run whose pretrained model finished on another machine
cannot run here (weights are not committed): run a model's finetunes where it was pretrained. A pretraining run cut before it finished (a time
limit, a kill) continues from its newest complete checkpoint (`--resume`), ending with the weights an
uninterrupted run would have; its curve so far is in its log_history.jsonl meanwhile. A directory
with neither metrics.json nor a complete checkpoint is the debris of a failed or killed run and is
deleted before the run starts again (nothing half-written is reused).

A run with a `trunk: {run: NAME, step: N}` starts at step N of NAME (reproduction/branch.py): NAME keeps
that checkpoint (`--keep_checkpoint N`), and when it is here the study writes the branch's checkpoint-N
from it and runs the branch as a resume (`--resume true`; commands.sh notes where its start came from).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from io import TextIOWrapper
from pathlib import Path
from typing import Any

from linformer_kit.config_parser import config_parser, parse_config, render_options
from linformer_kit.reproduction.branch import branch_equals_step_0, start_branch
from linformer_kit.reproduction.recipe import Recipe, Run, selects, trunk_steps
from linformer_kit.reproduction.study_files import committed_records, keep_tokenizer, run_dir, tokenizer_dir
from linformer_kit.train.checkpoints import TRUNK_PREFIX, checkpoint_problem, last_complete_checkpoint


@dataclass
class Outcome:
    run: Run
    output_dir: Path
    command: list[str]  # as a user types it: `linformer <verb> ...`
    returncode: int | None = None  # None: skipped (already done, or its model failed)
    seconds: float = 0.0
    reused: bool = False  # finished in an earlier invocation
    record: dict[str, Any] | None = None  # its committed record, when it finished on another machine
    selected: bool = True  # asked for in this invocation (`--only`)
    resume: bool = False  # it continues the checkpoint in its directory (a cut run's, or its branch's start)


def command(recipe: Recipe, run: Run, tokenizer: Path | None) -> list[str]:
    """`linformer <verb> --output_dir DIR --option value ...`: `command_options` in recipe order, rendered
    by `render_options` (so parsing it builds the config `command_options` gives)."""
    return ["linformer", run.verb, *render_options(command_options(recipe, run, tokenizer))]


def command_options(recipe: Recipe, run: Run, tokenizer: Path | None) -> dict[str, Any]:
    """The run's options and those the driver sets (output_dir, the model or shared tokenizer, a trunk's
    kept step): the fields of the config the run's command builds.

    `tokenizer`: the study's shared tokenizer, for every pretraining run but the one that trains it (the
    first, unless results_dir/tokenizer is committed: then every run reads that, whichever runs first).
    """
    options = {"output_dir": str(run_dir(recipe, run)), **run.options}
    if run.verb == "finetune" and run.architecture is not None:  # from scratch: its own kind, or the study's
        if "tokenizer" not in options and tokenizer is not None:
            options["tokenizer"] = str(tokenizer)
    elif run.verb == "finetune":
        options["model"] = str(Path(recipe.output_dir) / "pretrain" / str(run.model))
    elif tokenizer is not None and tokenizer != run_dir(recipe, run):
        options["tokenizer"] = str(tokenizer)
        for key in (
            "vocab_size",
            "tokenizer_chars",
        ):  # they size a tokenizer trained here; this run trains none
            options.pop(key, None)
    keep = trunk_steps(recipe).get(run.name)
    if keep is not None:  # a trunk: its branches start from its checkpoint at that step
        options["keep_checkpoint"] = keep
    return options


def run_study(
    recipe: Recipe, *, only: list[str] | None = None, run: bool = True, echo: bool = True
) -> list[Outcome]:
    """Run (or continue) every run of the recipe, `max_parallel` at a time; return what happened.

    run=False runs nothing: the outcomes then say which runs finished earlier (for collecting).
    """
    root = Path(recipe.output_dir)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    first, records = recipe.pretrain[0] if recipe.pretrain else None, committed_records(recipe)
    tokenizer = tokenizer_dir(recipe)
    outcomes = [
        Outcome(r, run_dir(recipe, r), command(recipe, r, tokenizer), record=records.get(r.name),
                selected=selects(r, only))
        for r in recipe.runs
    ]  # fmt: skip
    for o in outcomes:  # finished here earlier, or elsewhere (committed): results without running
        if o.output_dir.exists() and not (o.output_dir / "metrics.json").is_file():
            o.record = None  # begun on this machine: what is here decides (resume or restart)
        if (o.output_dir / "metrics.json").is_file() or o.record is not None:
            o.reused, o.returncode = True, 0
    if not run:
        return outcomes
    stages = [
        [o for o in outcomes if o.run == first],  # trains the tokenizer the others use
        [o for o in outcomes if o.run.verb == "pretrain" and o.run != first],
        [o for o in outcomes if o.run.verb == "finetune"],
    ]
    for stage in stages:
        todo = [o for o in stage if o.selected and not o.reused and _needs_running(o, recipe)]
        if todo:
            with open(root / "commands.sh", "a") as log:
                log.write(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
            _run_parallel(todo, recipe, echo)
        keep_tokenizer(recipe)
        tokenizer = tokenizer_dir(recipe)  # the first run may just have trained it: later stages read it here
        for o in outcomes:
            if o.returncode is None and not o.reused:
                o.command = command(recipe, o.run, tokenizer)
    return outcomes


def _needs_running(outcome: Outcome, recipe: Recipe) -> bool:
    needs = [run_dir(recipe, r) / "metrics.json" for r in recipe.pretrain if r.name == outcome.run.model]
    shared = tokenizer_dir(recipe)
    if shared is not None and outcome.run != recipe.pretrain[0] and "tokenizer" not in outcome.run.options:
        needs.append(shared / "tokenizer_config.json")
    if any(not path.is_file() for path in needs):
        return False  # a run it depends on failed, or finished on another machine: skipped
    checkpoint, _ = last_complete_checkpoint(outcome.output_dir)
    if checkpoint is not None and outcome.run.verb == "pretrain":
        _resume(outcome)  # continue the cut run
    elif outcome.output_dir.exists():
        shutil.rmtree(outcome.output_dir)  # debris of a failed or killed run
    return True


def branch_point(recipe: Recipe, run: Run) -> Path | None:
    """The trunk checkpoint a run starts from: its trunk's trunk-N when that is complete (the trunk ran
    here), else None: the run trains from step 0, which ends in the same weights with the window start
    (reproduction/branch.py); a run whose E and F start random then cannot run here (`needs_its_trunk`)."""
    if run.trunk is None:
        return None
    name, step = run.trunk
    kept = Path(recipe.output_dir) / "pretrain" / name / f"{TRUNK_PREFIX}{step}"
    return kept if kept.is_dir() and checkpoint_problem(kept) is None else None


def needs_its_trunk(run: Run) -> bool:
    """A branch whose E and F are drawn at random is another run than the one from step 0 (its trunk's other
    weights were started by a model without them): it runs from its trunk's checkpoint or not at all."""
    return run.trunk is not None and not branch_equals_step_0(run.options)


def _run_parallel(outcomes: list[Outcome], recipe: Recipe, echo: bool) -> None:
    running: list[tuple[Outcome, subprocess.Popen, TextIOWrapper, float]] = []
    pending, root = list(outcomes), Path(recipe.output_dir)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    while pending or running:
        while pending and len(running) < recipe.max_parallel:
            outcome = pending.pop(0)
            # decided at launch (its trunk may have just run); a cut run, a branch too, resumes its own
            kept = None if outcome.resume else branch_point(recipe, outcome.run)
            trunk = outcome.run.trunk  # (set where it needs its trunk)
            if kept is None and trunk is not None and needs_its_trunk(outcome.run) and not outcome.resume:
                _say(echo, f"skipped  {outcome.run.verb} {outcome.run.name}: it starts from its trunk "
                           f"{trunk[0]}'s checkpoint at step {trunk[1]}, not on this "
                           "machine (run the trunk here first)")  # fmt: skip
                continue
            log_path = root / "logs" / f"{outcome.run.verb}-{outcome.run.name}.log"
            if kept is not None and not _branch(outcome, kept, root, log_path):
                _say(
                    echo, f"FAILED   {outcome.run.verb} {outcome.run.name}: no start from {kept} ({log_path})"
                )
                continue
            with open(root / "commands.sh", "a") as log:  # what runs, as it starts (--resume included)
                log.write(shlex.join(outcome.command) + "\n")
            argv = [sys.executable, "-m", "linformer_kit.cli.main", *outcome.command[1:]]
            log = open(log_path, "w")  # noqa: SIM115
            process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
            running.append((outcome, process, log, time.perf_counter()))
            _say(echo, f"started  {outcome.run.verb} {outcome.run.name}")
        time.sleep(0.5)
        for item in list(running):
            outcome, process, log, start = item
            if process.poll() is None:
                continue
            log.close()
            outcome.returncode, outcome.seconds = process.returncode, time.perf_counter() - start
            running.remove(item)
            status = (
                "done" if process.returncode == 0 else f"FAILED (exit {process.returncode}, see {log.name})"
            )
            _say(echo, f"{status:8} {outcome.run.verb} {outcome.run.name} in {outcome.seconds:.0f} s")


def _branch(outcome: Outcome, kept: Path, root: Path, log_path: Path) -> bool:
    """Write the branch's checkpoint-N from its trunk's `kept` (reproduction/branch.py) and make its command
    a resume of it; False (the refusal in its log, exit status 2) when the trunk cannot be branched."""
    from linformer_kit.train.pretrain import PretrainConfig

    _resume(outcome)
    parser = config_parser(PretrainConfig, prog="linformer pretrain", usage=None, description="")
    try:  # the config the run's command builds: the branch's model is the one it will build
        step = start_branch(parse_config(parser, outcome.command[2:]), kept)
    except ValueError as error:
        log_path.write_text(f"linformer {outcome.run.verb}: error: {error}\n")
        outcome.returncode = 2
        return False
    with open(root / "commands.sh", "a") as log:  # the resume below continues what this wrote
        log.write(f"# {outcome.run.name}: checkpoint-{step} written from {kept} (reproduction/branch.py)\n")
    return True


def _resume(outcome: Outcome) -> None:
    """Make the run a resume of the newest complete checkpoint in its directory (`--resume true`)."""
    outcome.resume = True
    outcome.command = [*outcome.command, *render_options({"resume": True})]


def _say(echo: bool, line: str) -> None:
    if echo:
        print(f"[reproduce] {line}", flush=True)  # noqa: T201
