"""Run a reproduction recipe: every run is an ordinary `linformer pretrain` / `finetune` process.

    output_dir/pretrain/<run>/           a pretrained model (metrics.json with the validation curve)
    output_dir/finetune/<task>-<model>-s<seed>/   a finetuned classifier (+ eval_predictions.jsonl)
    output_dir/logs/<run>.log            the run's stdout and stderr
    output_dir/commands.sh               every command, in order, exactly as run

The first pretraining run trains the tokenizer; every other run uses it (`--tokenizer`), so all
models see identical tokens. A run whose directory holds metrics.json is done and is not run again,
so an interrupted study continues where it stopped. A pretraining run cut before it finished (a time
limit, a kill) continues from its newest complete checkpoint (`--resume`), ending with the weights an
uninterrupted run would have; its curve so far is in its log_history.jsonl meanwhile. A directory
with neither metrics.json nor a complete checkpoint is the debris of a failed or killed run and is
deleted before the run starts again (nothing half-written is reused).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from linformer_kit.reproduction.recipe import Recipe, Run
from linformer_kit.train.checkpoints import last_complete_checkpoint


@dataclass
class Outcome:
    run: Run
    output_dir: Path
    command: list[str]  # as a user types it: `linformer <verb> ...`
    returncode: int | None = None  # None: skipped (already done, or its model failed)
    seconds: float = 0.0
    reused: bool = False  # finished in an earlier invocation


def run_dir(recipe: Recipe, run: Run) -> Path:
    return Path(recipe.output_dir) / run.verb / run.name


def command(recipe: Recipe, run: Run, tokenizer_from: Run | None) -> list[str]:
    """`linformer <verb> --output_dir DIR --option value ...`, the options in recipe order."""
    options = {"output_dir": str(run_dir(recipe, run)), **run.options}
    if run.verb == "finetune":
        options["model"] = str(Path(recipe.output_dir) / "pretrain" / str(run.model))
    elif tokenizer_from is not None and tokenizer_from != run:
        options["tokenizer"] = str(run_dir(recipe, tokenizer_from))
        for key in (
            "vocab_size",
            "tokenizer_chars",
        ):  # they size a tokenizer trained here; this run trains none
            options.pop(key, None)
    argv = ["linformer", run.verb]
    for key, value in options.items():
        argv.append(f"--{key}")
        if isinstance(value, list | tuple):
            argv += [str(v) for v in value]
        elif value is None:
            argv.append("none")
        elif isinstance(value, bool):
            argv.append("true" if value else "false")
        else:
            argv.append(str(value))
    return argv


def run_study(
    recipe: Recipe, *, only: list[str] | None = None, run: bool = True, echo: bool = True
) -> list[Outcome]:
    """Run (or continue) every run of the recipe, `max_parallel` at a time; return what happened.

    run=False runs nothing: the outcomes then say which runs finished earlier (for collecting).
    """
    root = Path(recipe.output_dir)
    (root / "logs").mkdir(parents=True, exist_ok=True)
    first = recipe.pretrain[0]
    selected = [r for r in recipe.runs if only is None or r.name in only or r.model in (only or [])]
    outcomes = [Outcome(r, run_dir(recipe, r), command(recipe, r, first)) for r in selected]
    if not run:
        for o in outcomes:
            if (o.output_dir / "metrics.json").is_file():
                o.reused, o.returncode = True, 0
        return outcomes
    stages = [
        [o for o in outcomes if o.run == first],  # trains the tokenizer the others use
        [o for o in outcomes if o.run.verb == "pretrain" and o.run != first],
        [o for o in outcomes if o.run.verb == "finetune"],
    ]
    for stage in stages:
        todo = [o for o in stage if _needs_running(o, recipe)]
        if todo:
            with open(root / "commands.sh", "a") as log:  # what runs, as it runs (--resume included)
                log.write(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n")
                log.writelines(shlex.join(o.command) + "\n" for o in todo)
            _run_parallel(todo, recipe.max_parallel, root, echo)
    return outcomes


def _needs_running(outcome: Outcome, recipe: Recipe) -> bool:
    if (outcome.output_dir / "metrics.json").is_file():
        outcome.reused, outcome.returncode = True, 0
        return False
    needs = [run_dir(recipe, r) for r in recipe.pretrain if r.name == outcome.run.model]
    needs += [] if outcome.run == recipe.pretrain[0] else [run_dir(recipe, recipe.pretrain[0])]
    if any(not (d / "metrics.json").is_file() for d in needs):
        return False  # a run it depends on failed: leave returncode None (skipped)
    checkpoint, _ = last_complete_checkpoint(outcome.output_dir)
    if checkpoint is not None and outcome.run.verb == "pretrain":
        outcome.command = [*outcome.command, "--resume", "true"]  # continue the cut run
    elif outcome.output_dir.exists():
        shutil.rmtree(outcome.output_dir)  # debris of a failed or killed run
    return True


def _run_parallel(outcomes: list[Outcome], max_parallel: int, root: Path, echo: bool) -> None:
    pending, running = list(outcomes), []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    while pending or running:
        while pending and len(running) < max_parallel:
            outcome = pending.pop(0)
            argv = [sys.executable, "-m", "linformer_kit.cli.main", *outcome.command[1:]]
            log = open(root / "logs" / f"{outcome.run.verb}-{outcome.run.name}.log", "w")  # noqa: SIM115
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


def _say(echo: bool, line: str) -> None:
    if echo:
        print(f"[reproduce] {line}", flush=True)  # noqa: T201
