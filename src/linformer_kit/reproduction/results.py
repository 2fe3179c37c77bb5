"""Collect a study's runs into results.json, Markdown tables and the validation-curve plot.

results.json: {"tier", "device", "recipe", "runs": [...], "finetune_summary": [...]} with one record
per run (name, task, dataset, attention, projected_length, sharing, projection, projection_scaling,
seq_len, seq_len_schedule, short_block_positions, dtype, train_tokens, steps, seed, val_perplexity (and
its no_context_perplexity floor, see train/context_free.py) or accuracy, device, command, and for
finetuning the accuracy by input-length bucket). Everything is read back from the runs' own metrics.json, so
the tables show what the runs wrote, every seed included.
"""

from __future__ import annotations

import json
import math
import shlex
import statistics
import textwrap
from pathlib import Path
from typing import Any

from linformer_kit.nn.options import parse_projected_length
from linformer_kit.reproduction.bag_of_words import bag_of_words_records
from linformer_kit.reproduction.branch import branched_from
from linformer_kit.reproduction.recipe import Recipe
from linformer_kit.reproduction.study import Outcome
from linformer_kit.train.curve import read_curve
from linformer_kit.train.schedule import parse_schedule

# input length in tokens: 1-16, then powers of two up to 65 536 (every input a model here can read)
LENGTH_BUCKETS = ((1, 16), *((2**i + 1, 2 ** (i + 1)) for i in range(4, 16)))


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
            accuracy_by_length=_accuracy_by_length(o.output_dir / "eval_predictions.jsonl"),
            majority_class_accuracy=_majority_share(o.output_dir / "eval_predictions.jsonl"),
            curve=[  # dev accuracy by step, when the run evaluated as it trained
                {"step": e["step"], "accuracy": e["eval_accuracy"]}
                for e in read_curve(o.output_dir)
                if "eval_accuracy" in e
            ],
        )
    return record


def _majority_share(path: Path) -> float | None:
    """The accuracy of always answering the dev set's most frequent label (the line every result needs)."""
    if not path.is_file():
        return None
    labels = [json.loads(line)["label"] for line in path.read_text().splitlines()]
    return max(labels.count(label) for label in set(labels)) / len(labels) if labels else None


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


def _accuracy_by_length(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    buckets = []
    for low, high in LENGTH_BUCKETS:
        inside = [r for r in rows if low <= r["tokens"] <= high]
        if inside:
            correct = sum(r["label"] == r["predicted"] for r in inside)
            buckets.append(
                {"tokens": f"{low}-{high}", "examples": len(inside), "accuracy": correct / len(inside)}
            )
    return buckets


def summarise_finetuning(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mean ± sample std of accuracy over seeds, per (task, pretrained model); every seed listed."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in runs:
        if r["task"] == "finetune" and r.get("accuracy") is not None:
            groups.setdefault((r["dataset"], r["pretrained"]), []).append(r)
    summary = []
    for (dataset, model), members in groups.items():
        accuracies = [m["accuracy"] for m in members]
        summary.append(
            {
                "dataset": dataset,
                "pretrained": model,
                "seeds": [m["seed"] for m in members],
                "accuracies": accuracies,
                "mean": statistics.mean(accuracies),
                "std": statistics.stdev(accuracies) if len(accuracies) > 1 else 0.0,
                # the line to read every accuracy against (the same evaluation examples for every seed)
                "majority_class_accuracy": next(
                    (
                        m["majority_class_accuracy"]
                        for m in members
                        if m.get("majority_class_accuracy") is not None
                    ),
                    None,
                ),
                "accuracy_by_length": _pooled_buckets(members),
            }
        )
    return summary


def _pooled_buckets(members: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pooled: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for m in members:
        for b in m.get("accuracy_by_length", []):
            pooled.setdefault(b["tokens"], []).append(b["accuracy"])
            counts[b["tokens"]] = b["examples"]
    return [
        {"tokens": t, "examples": counts[t], "mean_accuracy": statistics.mean(a)} for t, a in pooled.items()
    ]


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


def format_tables(results: dict[str, Any]) -> str:
    lines = [
        f"# Reproduction study, {results['tier']} tier ({results['device']})"
    ]  # each section opens with ""
    pretraining = [r for r in results["runs"] if r["task"] == "pretrain"]
    if pretraining:  # a finetune-only tier (LRA: classifiers from scratch) has no such table
        lines += _pretrain_table(pretraining)
    summary = results["finetune_summary"]
    if summary:
        lines += ["", "## Finetuning (dev accuracy, mean ± std over seeds; every seed listed)", ""]
        lines += [
            "| task | pretrained model | mean ± std | majority class | seeds: accuracy |",
            "|---|---|---|---|---|",
        ]
        for s in summary:
            each = ", ".join(f"{seed}: {a:.4f}" for seed, a in zip(s["seeds"], s["accuracies"]))
            majority = s.get("majority_class_accuracy")
            majority = f"{100 * majority:.1f}" if majority is not None else "–"
            lines.append(
                f"| {s['dataset']} | {s['pretrained']} | {100 * s['mean']:.2f} ± {100 * s['std']:.2f} | {majority} "
                f"| {each} |"
            )
        lines += ["", "## Accuracy by input length (tokens; mean over seeds)", ""]
        buckets = [b for b, _ in _bucket_order(summary)]
        lines += ["| task | model | " + " | ".join(buckets) + " |", "|---|---|" + "---|" * len(buckets)]
        for s in summary:
            cells = {b["tokens"]: b for b in s["accuracy_by_length"]}
            row = [
                f"{100 * cells[b]['mean_accuracy']:.1f} ({cells[b]['examples']})" if b in cells else "–"
                for b in buckets
            ]
            lines.append(f"| {s['dataset']} | {s['pretrained']} | " + " | ".join(row) + " |")
    lines += _position_table(pretraining)
    lines += _probe_table(results.get("short_input_probe") or [])
    failed = [r["name"] for r in results["runs"] if r["status"] != "ok"]
    if failed:
        lines += ["", f"Runs without results: {', '.join(failed)}."]
    return "\n".join(lines) + "\n"


def _pretrain_table(runs: list[dict[str, Any]]) -> list[str]:
    lines = ["", "## Pretraining (masked LM, validation perplexity)", ""]
    lines += [
        "| run | attention | k | sharing | projection | E start | scaling | LayerNorm | n (schedule) | steps "
        "| train tokens | val perplexity | no-context floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        ppl = f"{r['val_perplexity']:.2f}" if r.get("val_perplexity") else r["status"]
        tokens = f"{r['train_tokens'] / 1e6:.1f} M" if r.get("train_tokens") else "–"
        floor = f"{r['no_context_perplexity']:.2f}" if r.get("no_context_perplexity") else "–"
        lines.append(
            f"| {r['name']} | {_attention_cell(r)} | {r['projected_length'] or '–'} | {r['sharing'] or '–'} | "
            f"{r['projection'] or '–'} | {r['projection_init'] or '–'} | {r['projection_scaling'] or '–'} | "
            f"{r['layer_norm'] or '–'} | {r['seq_len']}{_schedule(r.get('seq_len_schedule'))} | "
            f"{r.get('steps', '–')} | {tokens} | {ppl} | {floor} |"
        )
    return lines


def _attention_cell(r: dict[str, Any]) -> str:
    """'linformer', or with its window beside the projection: 'linformer + window 16 (+ 1 global)'."""
    window, global_tokens = r.get("local_window"), r.get("global_tokens") or 0
    text = r["attention"]
    if window is not None:
        text += f" + window {window if not isinstance(window, list) else ','.join(map(str, window))}"
    return text + (f" (+ {global_tokens} global)" if global_tokens else "")


def _position_table(runs: list[dict[str, Any]]) -> list[str]:
    """Validation perplexity by position range (train/position_loss.py), for runs at n >= 1 024."""
    rows = [r for r in runs if len(r.get("perplexity_by_position") or {}) > 1 and r["seq_len"] >= 1024]
    if not rows:
        return []
    names = list(rows[0]["perplexity_by_position"])
    lines = ["", "## Validation perplexity by position in the block", ""]
    lines += ["| run | n | " + " | ".join(names) + " | whole block | no-context floor |"]
    lines += ["|---|---|" + "---|" * (len(names) + 2)]
    for r in rows:
        cells = [f"{r['perplexity_by_position'].get(name, float('nan')):.2f}" for name in names]
        floor = f"{r['no_context_perplexity']:.2f}" if r.get("no_context_perplexity") else "–"
        lines.append(
            f"| {r['name']} | {r['seq_len']} | {' | '.join(cells)} | {r['val_perplexity']:.2f} | {floor} |"
        )
    return lines


def _schedule(phases: list | None) -> str:
    """' (128: 70%, 512: 30%)' for a length schedule; nothing for one length."""
    if isinstance(phases, str):  # a run without results: the recipe's text form
        return "" if phases in ("none", "auto") else f" ({phases})"
    if not phases or len(phases) == 1:
        return ""
    return " (" + ", ".join(f"{length}: {fraction:.0%}" for length, fraction in phases) + ")"


def _probe_table(probes: list[dict[str, Any]]) -> list[str]:
    """Per model and input length: projected-key norm ratio and attention entropy, mean over layers."""
    if not probes:
        return []
    lines = [
        "",
        "## Short inputs: projected-key norm / token-key norm, and attention entropy (mean over layers)",
        "",
    ]
    lines += [
        "| model | k | input tokens | key norm ratio | value norm ratio | entropy / max |",
        "|---|---|---|---|---|---|",
    ]
    for probe in probes:
        for length in sorted({r["length"] for r in probe["rows"]}):
            rows = [r for r in probe["rows"] if r["length"] == length]
            lines.append(
                f"| {probe['name']} | {probe['projected_length'] or 'full'} | {length} | "
                f"{_mean_cell(rows, 'key_norm_ratio')} | {_mean_cell(rows, 'value_norm_ratio')} | "
                f"{_mean_cell(rows, 'entropy')} |"
            )
    return lines


def _mean_cell(rows: list[dict[str, Any]], key: str) -> str:
    values = [r[key] for r in rows if r[key] is not None]
    return f"{statistics.mean(values):.3f}" if values else "–"


def _bucket_order(summary: list[dict[str, Any]]) -> list[tuple[str, int]]:
    seen = {b["tokens"] for s in summary for b in s["accuracy_by_length"]}
    return [(f"{lo}-{hi}", lo) for lo, hi in LENGTH_BUCKETS if f"{lo}-{hi}" in seen]


def plot_curves(runs: list[dict[str, Any]], path: Path, tier: str) -> Path:
    """Validation perplexity vs training steps, one curve per pretraining run (the paper's Figure 3)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    _draw_curves(ax, runs, f"Masked-LM pretraining, {tier} tier")
    return _save(fig, path)


def plot_panels(runs: list[dict[str, Any]], panels: dict[str, list[str]], path: Path) -> Path:
    """The recipe's `panels` (title -> pretraining runs), side by side: Figure 3 as the paper draws it.

    A run without a curve yet is left out of its panel, and its name listed under the panel.
    """
    plt = _pyplot()
    by_name = {r["name"]: r for r in runs if r.get("curve")}
    columns = min(len(panels), 2)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(6.0 * columns, 4.2 * rows), squeeze=False)
    colours = run_colours(list(dict.fromkeys(n for names in panels.values() for n in names)))
    for ax, (title, names) in zip(axes.flat, panels.items()):
        missing = [n for n in names if n not in by_name]
        _draw_curves(ax, [by_name[n] for n in names if n in by_name], title, colours)
        if missing:  # wrapped: a long list would run past the panel
            ax.set_xlabel(textwrap.fill(f"training steps  (not run yet: {', '.join(missing)})", 70))
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    return _save(fig, path)


def run_colours(names: list[str]) -> dict[str, str]:
    """One colour per run, the same in every panel, no two alike: matplotlib's ten-colour cycle for up
    to 10 runs; up to 20, "tab20", its ten strong shades first, then their light pairs; then "turbo"."""
    if len(names) <= 10:
        return {n: f"C{i}" for i, n in enumerate(names)}
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    if len(names) <= 20:  # tab20 alternates strong and light shades of one hue
        return {
            n: to_hex(colormaps["tab20"](2 * i if i < 10 else 2 * (i - 10) + 1)) for i, n in enumerate(names)
        }
    return {n: to_hex(colormaps["turbo"](i / (len(names) - 1))) for i, n in enumerate(names)}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _draw_curves(ax, runs: list[dict[str, Any]], title: str, colours: dict[str, str] | None = None) -> None:
    for r in runs:
        steps = [p["step"] for p in r["curve"]]
        ax.plot(steps, [p["val_perplexity"] for p in r["curve"]], marker="o", markersize=3, label=r["name"],
                color=(colours or {}).get(r["name"]))  # fmt: skip
    floors = [r["no_context_perplexity"] for r in runs if r.get("no_context_perplexity")]
    if floors:  # one tokenizer and one set of masked blocks in a study: one floor
        ax.axhline(floors[0], color="grey", linestyle="--", linewidth=1, label="no-context floor")
    switches = sorted(
        {
            p["step"]
            for r in runs
            for p, q in zip(r["curve"], r["curve"][1:])
            if p.get("seq_len") != q.get("seq_len")
        }
    )
    for step in switches:  # where the length schedule moves to longer blocks
        ax.axvline(step, color="grey", linestyle=":", linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("training steps")
    ax.set_ylabel("validation perplexity (log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    if runs:
        ax.legend(fontsize="small")


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
