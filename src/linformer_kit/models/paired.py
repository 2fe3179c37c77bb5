"""Paired differences: does a reading of the model beat a reading of the original on the same queries?

`uncertainty` (longdocs/report.py) says how far apart two scores must be when the methods are taken as
independent. They are not: every method of a run reads the same pairs and keys, and where two methods hit and
miss the same queries their difference varies far less than either score. Each record of an accuracy keeps its
per-query outcomes (`Record.hits`, in query order), so a model reading m and an original reading o of the same
(task, length, seed) give, query by query,

    d_i = hit_m(i) - hit_o(i)  in {-1, 0, 1}        difference = 100 · mean_i d_i = 100 (b - c) / n  (points)

b the queries only m hits, c those only o hits, n every seed's queries. The 95 % interval is Agresti and Min's
(2005) for matched proportions: the Wald interval of the table with a half added to each of its four cells,

    b' = b + 1/2, c' = c + 1/2, n' = n + 2:   100 · ((b' - c') / n' ± 1.96 · sqrt((b' + c') - (b' - c')² / n') / n')

which never has width 0 (a Wald interval does when every d_i is equal, and is too narrow when few queries
differ: 4 of 25 one way and none the other is +16 [-0.4, +30.1] here, where Wald says [+1.6, +30.4] and the
exact McNemar test p = 0.125).
A difference whose interval holds 0 is not told apart from no difference. Seeds draw their pairs apart, so two
seeds can share a pair (at 4 096 tokens the held-out books hold 115 pairs, and three seeds draw 50 each): the
queries are then not all independent and the interval is a little narrower than it should be.
"""

from __future__ import annotations

import math
from collections import defaultdict

from linformer_kit.models.readings import METHODS, base, reads_model

STRONGEST = "strongest chunking"  # `differences`' column against the best of the original's chunk readings
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
) -> tuple[float, float, float, int]:
    """(difference, low, high, n) in points over the seeds both hold with the same number of queries (a seed
    whose counts differ comes from runs of other settings, not one run's methods: it is left out)."""
    b = c = n = 0
    for seed in sorted(set(model_hits) & set(original_hits)):
        mine, theirs = model_hits[seed], original_hits[seed]
        if len(mine) != len(theirs):
            continue
        b += sum(x > y for x, y in zip(mine, theirs, strict=True))
        c += sum(x < y for x, y in zip(mine, theirs, strict=True))
        n += len(mine)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    b2, c2, n2 = b + 0.5, c + 0.5, n + 2
    centre = (b2 - c2) / n2
    half = Z95 * math.sqrt((b2 + c2) - (b2 - c2) ** 2 / n2) / n2
    return 100 * (b - c) / n, 100 * max(-1.0, centre - half), 100 * min(1.0, centre + half), n


def differences(records: list[dict]) -> list[dict]:
    """One entry per (task, length, model reading, original reading) both of which keep their hits:
    {"task", "length", "method", "against", "difference", "low", "high", "queries"}; and per model reading one
    against the strongest chunking (`STRONGEST`: the original's chunk reading, of every chunk length and
    stride the run read, with the most hits on the same queries; chosen on them, so the model's difference
    is if anything understated), its "strongest" naming which."""
    hits = outcomes(records)
    out = []
    for (task, length, method), mine in sorted(hits.items()):
        if not reads_model(method):
            continue
        theirs_all = {
            m: h for (t, n, m), h in hits.items() if (t, n) == (task, length) and not reads_model(m)
        }
        for against in sorted(theirs_all, key=reading_order):
            diff, low, high, n = difference(mine, theirs_all[against])
            if n:
                entry = {"task": task, "length": length, "method": method, "against": against}
                out.append({**entry, "difference": diff, "low": low, "high": high, "queries": n})
        chunked = [m for m in theirs_all if base(m).startswith("chunks-")]
        # most hits on the queries `difference` reads (the seeds `mine` shares, of its counts); of chunkings tied
        # on hits, the one the model's interval is lowest against (never the kinder one)
        if chunked:
            strongest = max(
                chunked,
                key=lambda m: (_shared_hits(mine, theirs_all[m]), -difference(mine, theirs_all[m])[1], m),
            )
            diff, low, high, n = difference(mine, theirs_all[strongest])
            if n:
                entry = {"task": task, "length": length, "method": method, "against": STRONGEST}
                out.append({**entry, "difference": diff, "low": low, "high": high, "queries": n,
                            "strongest": strongest})  # fmt: skip
    return out


def _shared_hits(mine: dict[int, list[int]], theirs: dict[int, list[int]]) -> int:
    """`theirs`' hits on the seeds `difference` pairs with `mine` (shared, of the same query count)."""
    return sum(sum(hits) for seed, hits in theirs.items() if len(mine.get(seed, ())) == len(hits))


def reading_order(labelled: str) -> tuple[int, int, str]:
    """The original's readings in METHODS' order, then by chunk length (consecutive before overlapping)."""
    method = base(labelled)
    order = METHODS.index(method) if method in METHODS else len(METHODS)
    digits = "".join(c for c in labelled if c.isdigit())
    return order, int(digits or 0), labelled


def paired_table(records: list[dict]) -> str:
    """A Markdown table of `differences`: a row per task, length and model reading, a column per original
    reading, each cell "difference [low, high]" in points, bold where the interval leaves out 0; empty where
    no record keeps its hits."""
    entries = differences(records)
    if not entries:
        return ""
    against = list(dict.fromkeys(e["against"] for e in entries if e["against"] != STRONGEST))
    against = sorted(against, key=reading_order) + (
        [STRONGEST] if any(e["against"] == STRONGEST for e in entries) else []
    )
    rows: dict[tuple[str, int, str], dict[str, dict]] = defaultdict(dict)
    for e in entries:
        rows[(e["task"], e["length"], e["method"])][e["against"]] = e
    lines = []
    for (task, length, method), cells in rows.items():
        n = max(e["queries"] for e in cells.values())  # a cell over fewer queries (a seed left out) says so
        shown = [_cell(cells.get(m), n) for m in against]
        lines.append(f"| {task} | {length} | {method} | {n} | " + " | ".join(shown) + " |")
    return (
        "Paired differences, in points (the model's reading minus the original's on the same queries, every "
        "seed's; 95 % interval; bold: the interval leaves out 0, the two are told apart):\n\n"
        "| task | length | reading | n | " + " | ".join(f"vs {m}" for m in against) + " |\n"
        "|---|---|---|---|" + "---|" * len(against) + "\n" + "\n".join(lines) + "\n"
    )


def _cell(entry: dict | None, n: int) -> str:
    if entry is None:
        return "–"
    low, high = entry["low"], entry["high"]
    text = f"{entry['difference']:+.1f} [{low:+.1f}, {high:+.1f}]"
    text += f" ({entry['strongest']})" if "strongest" in entry else ""
    text += "" if entry["queries"] == n else f" (n = {entry['queries']})"
    return f"**{text}**" if low > 0 or high < 0 else text
