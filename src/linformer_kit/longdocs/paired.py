"""Paired differences: does a reading of the model beat a reading of the original on the same queries?

`uncertainty` (longdocs/report.py) says how far apart two scores must be when the methods are taken as
independent. They are not: every method of a run reads the same pairs and keys, and where two methods hit and
miss the same queries their difference varies far less than either score. Each record of an accuracy keeps its
per-query outcomes (`Record.hits`, in query order), so a model reading m and an original reading o of the same
(task, length, seed) give, query by query,

    d_i = hit_m(i) - hit_o(i)  in {-1, 0, 1}        difference = 100 · mean_i d_i  (points)
    95 % interval = difference ± 1.96 · 100 · sd(d) / sqrt(n)     (normal approximation, n = every seed's queries)

A difference whose interval holds 0 is not told apart from no difference. Seeds draw their pairs apart, so two
seeds can share a pair (at 4 096 tokens the held-out books hold 115 pairs, and three seeds draw 50 each): the
queries are then not all independent and the interval is a little narrower than it should be.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict

from linformer_kit.models.readings import METHODS, MODEL_METHODS

ORIGINAL_READINGS = tuple(m for m in METHODS if m not in MODEL_METHODS)  # truncation, chunks, full-extended
Z95 = 1.96


def outcomes(records: list[dict]) -> dict[tuple[str, int, str], dict[int, list[int]]]:
    """{(task, length, method): {seed: per-query hits}} of the records that keep them (no depth subsets)."""
    out: dict[tuple[str, int, str], dict[int, list[int]]] = defaultdict(dict)
    for r in records:
        if r.get("depth") is None and r.get("hits") is not None:
            out[(r["task"], r["length"], r["method"])][r["seed"]] = list(r["hits"])
    return out


def difference(
    model_hits: dict[int, list[int]], original_hits: dict[int, list[int]]
) -> tuple[float, float, int]:
    """(difference, half-width of its 95 % interval, n), in points, over the seeds both hold; a seed whose
    queries differ in number is a ValueError (two runs of other settings, not one run's methods)."""
    d: list[int] = []
    for seed in sorted(set(model_hits) & set(original_hits)):
        a, b = model_hits[seed], original_hits[seed]
        if len(a) != len(b):
            raise ValueError(
                f"seed {seed}: {len(a)} and {len(b)} queries; a paired difference needs the same queries"
            )
        d += [x - y for x, y in zip(a, b, strict=True)]
    if not d:
        return math.nan, math.nan, 0
    spread = statistics.stdev(d) if len(d) > 1 else 0.0
    return 100 * statistics.mean(d), Z95 * 100 * spread / math.sqrt(len(d)), len(d)


def differences(records: list[dict]) -> list[dict]:
    """One entry per (task, length, model reading, original reading) both of which keep their hits:
    {"task", "length", "method", "against", "difference", "interval" (half-width), "queries"}."""
    hits = outcomes(records)
    out = []
    for (task, length, method), mine in sorted(hits.items()):
        if method not in MODEL_METHODS:
            continue
        for against in ORIGINAL_READINGS:
            theirs = hits.get((task, length, against))
            if theirs is None:
                continue
            diff, half, n = difference(mine, theirs)
            if n:
                entry = {"task": task, "length": length, "method": method, "against": against}
                out.append({**entry, "difference": round(diff, 2), "interval": round(half, 2), "queries": n})
    return out


def paired_table(records: list[dict]) -> str:
    """A Markdown table of `differences`: a row per task, length and model reading, a column per original
    reading, each cell "difference [low, high]" in points, bold where the interval leaves out 0; empty where
    no record keeps its hits."""
    entries = differences(records)
    if not entries:
        return ""
    against = [m for m in ORIGINAL_READINGS if any(e["against"] == m for e in entries)]
    rows: dict[tuple[str, int, str], dict[str, dict]] = defaultdict(dict)
    for e in entries:
        rows[(e["task"], e["length"], e["method"])][e["against"]] = e
    lines = []
    for (task, length, method), cells in rows.items():
        n = max(e["queries"] for e in cells.values())
        lines.append(
            f"| {task} | {length} | {method} | {n} | "
            + " | ".join(_cell(cells.get(m)) for m in against)
            + " |"
        )
    return (
        "Paired differences, in points (the model's reading minus the original's on the same queries, every "
        "seed's; 95 % interval; bold: the interval leaves out 0, the two are told apart):\n\n"
        "| task | length | reading | n | " + " | ".join(f"vs {m}" for m in against) + " |\n"
        "|---|---|---|---|" + "---|" * len(against) + "\n" + "\n".join(lines) + "\n"
    )


def _cell(entry: dict | None) -> str:
    if entry is None:
        return "–"
    diff, half = entry["difference"], entry["interval"]
    text = f"{diff:+.1f} [{diff - half:+.1f}, {diff + half:+.1f}]"
    return f"**{text}**" if diff - half > 0 or diff + half < 0 else text
