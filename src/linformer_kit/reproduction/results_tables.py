"""results.md: the Markdown tables of a study's results, from results.json's dict.

Pretraining (validation perplexity, no-context floor), finetuning (mean ± std over seeds, every seed,
the majority class), accuracy by input length, perplexity by position in the block, and the
short-input probe. Formatting only: the numbers are collected by reproduction/results.py, which
writes this text beside results.json.
"""

from __future__ import annotations

import statistics
from typing import Any

from linformer_kit.reproduction.finetune_summary import LENGTH_BUCKETS


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
