"""Collect a study's runs into results.json, Markdown tables and the validation-curve plot.

results.json: {"tier", "device", "recipe", "runs": [...], "finetune_summary": [...]} with one record
per run (name, task, dataset, attention, projected_length, sharing, projection, projection_scaling,
seq_len, seq_len_schedule, short_block_positions, dtype, train_tokens, steps, seed, val_perplexity (and
its no_context_perplexity floor, see train/context_free.py) or accuracy, device, command, and for
finetuning the accuracy by input-length bucket). Everything is read back from the runs' own metrics.json, so
the tables show what the runs wrote, every seed included. The summary over seeds is
reproduction/finetune_summary.py, the tables reproduction/results_tables.py, the figures
reproduction/results_plots.py; collecting the records and writing the files is here.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any

from linformer_kit.nn.options import parse_projected_length
from linformer_kit.reproduction.bag_of_words import bag_of_words_records
from linformer_kit.reproduction.branch import branched_from
from linformer_kit.reproduction.finetune_summary import (
    accuracy_by_length,
    majority_share,
    summarise_finetuning,
)
from linformer_kit.reproduction.recipe import Recipe
from linformer_kit.reproduction.results_plots import plot_curves, plot_panels
from linformer_kit.reproduction.results_tables import format_tables
from linformer_kit.reproduction.study import Outcome
from linformer_kit.train.curve import read_curve
from linformer_kit.train.schedule import parse_schedule


def collect(recipe: Recipe, outcomes: list[Outcome], device: str) -> dict[str, Any]:
    pretrained = {  # a run finished elsewhere (or not yet): its options say what it is
        o.run.name: _read(o.output_dir / "metrics.json") or {"config": _as_config(o.run.options)}
        for o in outcomes
        if o.run.verb == "pretrain"
    }
    runs = []
    for o in outcomes:
        metrics = _read(o.output_dir / "metrics.json")
        if metrics is None and o.record is not None:  # finished on another machine: its committed record
            if o.run.verb == "pretrain":  # records committed before these fields: from their options
                runs.append({**_training_fields(_as_config(o.record.get("options") or {})), **o.record})
            else:
                runs.append(o.record)
            continue
        record = {
            "name": o.run.name,
            "task": o.run.verb,
            "status": _status(o, metrics),
            "device": device,
            "command": shlex.join(o.command),
            "seconds": round(o.seconds, 1) if not o.reused else (o.record or {}).get("seconds"),
            "options": o.run.options,  # what distinguishes it; a later machine reuses the record if unchanged
        }
        if o.run.verb == "pretrain":
            record.update(_pretrain_record(o, metrics))
        else:
            shape = pretrained.get(str(o.run.model or o.run.architecture))  # a scratch run: its shape's
            record.update(_finetune_record(o, metrics, shape))
        runs.append(record)
    if recipe.bag_of_words:
        runs += bag_of_words_records(recipe)
    return {
        "tier": recipe.tier,
        "device": device,
        "recipe": recipe.source,
        "runs": runs,
        "finetune_summary": summarise_finetuning(runs),
    }


def _status(o: Outcome, metrics: dict[str, Any] | None) -> str:
    if metrics:
        return "ok"
    if o.returncode:
        return "failed"
    return "unfinished" if read_curve(o.output_dir) else "not run"


def _read(path: Path) -> dict[str, Any] | None:
    return json.loads(path.read_text()) if path.is_file() else None


def _model_fields(config: dict[str, Any] | None) -> dict[str, Any]:
    """A record's model columns. Not OPTION_NAMES: the tables' columns, in results.json's key order, each with
    the value runs recorded before it existed had (short_inputs and projection_order are not columns)."""
    config = config or {}
    k = config.get("projected_length")
    return {
        "attention": "full" if k is None else "linformer",
        "projected_length": k,
        "sharing": None if k is None else config.get("sharing"),
        "projection": None if k is None else config.get("projection"),
        "projection_scaling": None if k is None else config.get("projection_scaling", "none"),
        # absent from runs made before these options existed: their values then were these
        "projection_init": None if k is None else config.get("projection_init", "random"),
        "layer_norm": config.get("layer_norm", "post"),
        # the window beside the projection (nn/local.py): absent from runs made before it existed
        "local_window": None if k is None else config.get("local_window"),
        "global_tokens": None if k is None else config.get("global_tokens", 0),
        "seq_len": config.get("seq_len"),
        "seq_len_schedule": config.get("seq_len_schedule"),
    }


def _pretrain_record(o: Outcome, metrics: dict[str, Any] | None) -> dict[str, Any]:
    config = (metrics or {}).get("config") or _as_config(o.run.options)
    # the recipe's path names the dataset: metrics.json keeps no absolute path (train/publish.py)
    train = o.run.options.get("train") or config.get("train")
    record: dict[str, Any] = {"dataset": _dataset(train), **_model_fields(config)}
    saved = _read(o.output_dir / "config.json") or {}  # the model's own (init_from keeps its layout)
    for key in ("layer_norm", "projection_init"):
        if key in saved and record.get(key) is not None:
            record[key] = saved[key]
    record.update(seed=config.get("seed", 42), **_training_fields(config))
    if metrics:
        steps = metrics["steps"]
        batch = config["per_device_train_batch_size"] * config.get("gradient_accumulation_steps", 1)
        record.update(
            steps=steps,
            train_tokens=steps * batch * config["seq_len"],
            val_perplexity=metrics["perplexity"],
            val_loss=metrics["eval_loss"],
            no_context_perplexity=metrics.get("no_context_perplexity"),  # absent before it was measured
            perplexity_by_position=metrics.get("perplexity_by_position"),  # likewise
            tokens_per_second=metrics.get("tokens_per_second"),
            num_parameters=metrics.get("num_parameters"),
            learned_context=metrics.get("learned_context"),
            # started at its trunk's step: the file the study wrote (reproduction/branch.py), which runs
            # of the time pretrain branched kept in their metrics.json too
            branched_from=branched_from(o.output_dir) or metrics.get("branched_from"),
            # the step this process started at (a resume or a branch): `seconds` covers the steps after it
            resumed_from_step=metrics.get("resumed_from_step", 0),
            curve=_curve(metrics.get("log_history", [])),
        )
    else:  # cut before it finished: the curve it wrote as it went (train/curve.py)
        record.update(curve=_curve(read_curve(o.output_dir)))
    return record


def _training_fields(config: dict[str, Any]) -> dict[str, Any]:
    schedule = config.get("seq_len_schedule")  # a run's metrics: phases; options: text, or its words
    if isinstance(schedule, list) and schedule and all(isinstance(part, str) for part in schedule):
        schedule = ",".join(schedule)  # as PretrainConfig reads them
    if isinstance(schedule, str):
        schedule = parse_schedule(schedule, config["seq_len"])
    short_blocks = schedule is not None and len(schedule) > 1  # 'none' is one phase at seq_len
    return {
        # where the short blocks sit; absent from runs made before the option: 'restart', its behaviour
        "short_block_positions": config.get("short_block_positions", "restart") if short_blocks else None,
        "dtype": "bf16" if config.get("bf16") else "fp16" if config.get("fp16") else "fp32",
    }


def _curve(log_history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Validation perplexity (and block length) by step; the final evaluation repeats the last step's, keep one."""
    by_step = {
        e["step"]: {"val_perplexity": math.exp(min(e["eval_loss"], 100.0)), "seq_len": e.get("seq_len")}
        for e in log_history
        if "eval_loss" in e
    }
    return [{"step": step, **point} for step, point in sorted(by_step.items())]


def _finetune_record(o: Outcome, metrics: dict | None, pretrained: dict | None) -> dict[str, Any]:
    model_config = (pretrained or {}).get("config") or {}
    if o.run.architecture is not None and not pretrained:  # a shape of its own: the options say it
        model_config = _as_config(o.run.options)
    record: dict[str, Any] = {
        "dataset": o.run.task,
        "pretrained": o.run.classifier,  # a pretraining run, or scratch:ARCH (no pretraining)
        **_model_fields(model_config),
    }
    record["seed"] = o.run.seed
    if metrics:
        config = metrics.get("config", {})
        record.update(
            steps=metrics["steps"],
            train_examples=metrics["train_examples"],
            eval_examples=metrics["eval_examples"],
            max_length=config.get("max_length"),
            accuracy=metrics["accuracy"],
            f1=metrics.get("f1"),
            accuracy_by_length=accuracy_by_length(o.output_dir / "eval_predictions.jsonl"),
            majority_class_accuracy=majority_share(o.output_dir / "eval_predictions.jsonl"),
            curve=[  # dev accuracy by step, when the run evaluated as it trained
                {"step": e["step"], "accuracy": e["eval_accuracy"]}
                for e in read_curve(o.output_dir)
                if "eval_accuracy" in e
            ],
        )
    return record


# what a run's model is, beside k: a new model takes pretrain's defaults, an `init_from` run its source model's
# (the `_model_fields` columns a source config can give, not the Linformer options: layer_norm, no window)
MODEL_OPTIONS = ("sharing", "projection", "projection_scaling", "projection_init", "layer_norm")


def _as_config(options: dict[str, Any]) -> dict[str, Any]:
    """A recipe run's options as its config: k parsed (nn/options.py), absent = `linformer pretrain`'s default;
    the model options an `init_from` run does not name are its source model's (None: that model is not here)."""
    from linformer_kit.train.pretrain import PretrainConfig

    fields = PretrainConfig.__dataclass_fields__
    defaults = {
        name: f.default_factory() if callable(f.default_factory) else f.default for name, f in fields.items()
    }
    source = options.get("init_from")
    saved = defaults if source is None else _read(Path(source) / "config.json") or {}
    k = options.get("projected_length", defaults["projected_length"])
    return {
        "seq_len": defaults["seq_len"],
        "seq_len_schedule": defaults["seq_len_schedule"],
        "short_block_positions": defaults["short_block_positions"],
        **{name: saved.get(name) for name in MODEL_OPTIONS},
        **options,
        "projected_length": parse_projected_length(k) if isinstance(k, str) else k,
    }


def _dataset(train: Any) -> str | None:
    first = train[0] if isinstance(train, list) and train else train
    return Path(first).parent.name if first else None


# --- writing ----------------------------------------------------------------------------------------


def write_results(results: dict[str, Any], results_dir: str | Path) -> list[Path]:
    out = Path(results_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "results.md"]
    paths[0].write_text(json.dumps(results, indent=1) + "\n")
    paths[1].write_text(format_tables(results))
    # a run evaluated without training (max_steps: 0) has one point: its table row says it, a plot would not
    curves = [r for r in results["runs"] if r["task"] == "pretrain" and len(r.get("curve") or []) > 1]
    if curves:
        paths.append(plot_curves(curves, out / "validation_perplexity.png", results["tier"]))
    panels = (results.get("recipe") or {}).get("panels")
    if curves and panels:
        paths.append(plot_panels(curves, panels, out / "panels.png"))
    return paths
