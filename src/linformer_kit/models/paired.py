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
A difference whose interval holds 0 is not told apart from no difference.

Retrieval records also keep each query's rank of its own document (`Record.ranks`), whose reciprocal's mean is
the MRR: a miss at rank 2 counts half a hit, so on the same queries it varies less than accuracy@1 (on the
held-out books at 4 096, an interval of ±1.7 points where accuracy@1's is ±4.4). Its paired interval
(`rr_difference`) is Student's on the per-query differences r_i = 1/rank_m(i) - 1/rank_o(i):
100 · (mean r ± t · sd(r) / sqrt(n)), t the 97.5 % quantile at n - 1 degrees of freedom (`t95`); its strongest
chunking the one of most MRR (`rr_differences`). The r_i are far from normal where few queries differ (most are
0), so, as with Wald's interval above, the interval is too narrow there: read it over hundreds of pairs (the
held-out books' 300), not over a verdict's 20. Seeds draw their pairs apart, so two
seeds can share a pair (at 4 096 tokens the held-out books hold 115 pairs, and three seeds draw 50 each): the
queries are then not all independent and the interval is a little narrower than it should be.
"""

from __future__ import annotations

import math
from collections import defaultdict

from linformer_kit.models.readings import METHODS, base, reads_model

STRONGEST = "strongest chunking"  # `differences`' column against the best of the original's chunk readings
Z95 = 1.96


def outcomes(records: list[dict], kept: str = "hits") -> dict[tuple[str, int, str], dict[int, list[int]]]:
    """{(task, length, method): {seed: per-query hits}} of the records that keep them (no depth subsets);
    `kept="ranks"`: their ranks."""
    out: dict[tuple[str, int, str], dict[int, list[int]]] = defaultdict(dict)
    for r in records:
        if r.get("depth") is None and r.get(kept) is not None:
            out[(r["task"], r["length"], r["method"])][r["seed"]] = list(r[kept])
    return out


def _paired(mine: dict[int, list[int]], theirs: dict[int, list[int]]) -> list[tuple[int, int]]:
    """The (mine, theirs) outcomes of the queries two readings share: the seeds both hold with the same number
    of queries (a seed whose counts differ comes from runs of other settings, not one run's methods)."""
    return [
        pair
        for seed in sorted(set(mine) & set(theirs))
        if len(mine[seed]) == len(theirs[seed])
        for pair in zip(mine[seed], theirs[seed], strict=True)
    ]


def t95(df: int) -> float:
    """Student's t 97.5 % quantile at `df` degrees of freedom, by its Cornish-Fisher expansion about the normal
    one (Abramowitz and Stegun 26.7.5, three terms): within 0.003 of the table from 5 degrees of freedom
    (2.571 at 5, 2.064 at 24, 1.984 at 100), 1.96 in the limit."""
    z = Z95
    return (
        z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
        + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3)
    )  # fmt: skip


def rr_difference(
    model_ranks: dict[int, list[int]], original_ranks: dict[int, list[int]]
) -> tuple[float, float, float, int]:
    """(MRR difference, low, high, n) in points over the queries two readings share (`_paired`), with Student's
    95 % interval of the per-query reciprocal-rank differences (the module docstring)."""
    d = [1 / a - 1 / b for a, b in _paired(model_ranks, original_ranks)]
    if len(d) < 2:
        return math.nan, math.nan, math.nan, len(d)
    mean = sum(d) / len(d)
    half = t95(len(d) - 1) * math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    return 100 * mean, 100 * (mean - half), 100 * (mean + half), len(d)


def rr_differences(records: list[dict]) -> list[dict]:
    """Per model reading that keeps its ranks: its MRR and its paired MRR difference from the strongest chunking
    by MRR on the same queries (the original's chunk reading of most MRR there; ties: the one the model's
    interval is lowest against): {"task", "length", "method", "strongest", "mrr" and "strongest_mrr" (both on
    the `queries` they share), "difference", "low", "high"}."""
    ranks = outcomes(records, "ranks")
    out = []
    for (task, length, method), mine in sorted(ranks.items()):
        if not reads_model(method):
            continue
        originals = _originals(ranks, task, length)
        shared = {m: r for m, r in originals.items() if base(m).startswith("chunks-") and _paired(mine, r)}
        if not shared:
            continue
        strongest = _strongest(mine, shared, _rr_strength)
        pairs = _paired(mine, shared[strongest])
        diff, low, high, n = rr_difference(mine, shared[strongest])
        out.append({"task": task, "length": length, "method": method, "strongest": strongest,
                    "mrr": 100 * sum(1 / a for a, _ in pairs) / n, "strongest_mrr": 100 * sum(1 / b for _, b in pairs) / n,
                    "difference": diff, "low": low, "high": high, "queries": n})  # fmt: skip
    return out


def _rr_strength(mine: dict[int, list[int]], theirs: dict[int, list[int]]) -> tuple[float, float]:
    """(`theirs`' MRR on the queries it shares with `mine`, minus the low end of `mine`'s interval against it):
    the larger, the stronger a chunking against `mine`."""
    reciprocal = [1 / b for _, b in _paired(mine, theirs)]
    return sum(reciprocal) / len(reciprocal), -rr_difference(mine, theirs)[1]


def mrr_table(records: list[dict]) -> str:
    """A Markdown table of `rr_differences`, bold where the interval leaves out 0; empty where no record keeps
    its ranks."""
    entries = rr_differences(records)
    if not entries:
        return ""
    lines = [
        f"| {e['task']} | {e['length']} | {e['method']} | {e['queries']} | {e['mrr']:.1f} | "
        f"{e['strongest']} {e['strongest_mrr']:.1f} | "
        + _bold(f"{e['difference']:+.1f} [{e['low']:+.1f}, {e['high']:+.1f}]", e["low"], e["high"])
        + " |"
        for e in entries
    ]
    return (
        "MRR, in points (the mean of 1 / the rank of each query's own document; paired 95 % interval, Student's, "
        "against the original's chunk reading of most MRR on the same queries; too narrow over few queries):\n\n"
        "| task | length | reading | n | MRR | strongest chunking by MRR | vs it |\n|---|---|---|---|---|---|---|\n"
        + "\n".join(lines) + "\n"
    )  # fmt: skip


def _bold(text: str, low: float, high: float) -> str:
    return f"**{text}**" if low > 0 or high < 0 else text


def difference(
    model_hits: dict[int, list[int]], original_hits: dict[int, list[int]]
) -> tuple[float, float, float, int]:
    """(difference, low, high, n) in points over the queries both hold (`_paired`: the seeds both hold with the
    same number of queries)."""
    pairs = _paired(model_hits, original_hits)
    b, c, n = sum(x > y for x, y in pairs), sum(x < y for x, y in pairs), len(pairs)
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
        theirs_all = _originals(hits, task, length)
        for against in sorted(theirs_all, key=reading_order):
            diff, low, high, n = difference(mine, theirs_all[against])
            if n:
                entry = {"task": task, "length": length, "method": method, "against": against}
                out.append({**entry, "difference": diff, "low": low, "high": high, "queries": n})
        chunked = [m for m in theirs_all if base(m).startswith("chunks-")]
        # most hits on the queries `difference` reads (the seeds `mine` shares, of its counts); of chunkings tied
        # on hits, the one the model's interval is lowest against (never the kinder one)
        if chunked:
            strongest = _strongest(mine, {m: theirs_all[m] for m in chunked}, _hit_strength)
            diff, low, high, n = difference(mine, theirs_all[strongest])
            if n:
                entry = {"task": task, "length": length, "method": method, "against": STRONGEST}
                out.append({**entry, "difference": diff, "low": low, "high": high, "queries": n,
                            "strongest": strongest})  # fmt: skip
    return out


def _originals(table: dict[tuple[str, int, str], dict[int, list[int]]], task: str, length: int) -> dict:
    """{method: {seed: outcomes}} of `table` (`outcomes`) at `task` and `length` read by the original alone."""
    return {m: o for (t, n, m), o in table.items() if (t, n) == (task, length) and not reads_model(m)}


def _strongest(mine: dict[int, list[int]], chunkings: dict[str, dict[int, list[int]]], strength) -> str:
    """The chunking of most `strength(mine, theirs)` (a tuple: its score on the queries it shares with `mine`,
    then minus the low end of `mine`'s interval against it, so of chunkings tied on the score the one the model
    is weakest against); of those tied on both, the last by name. One rule for accuracy@1 and MRR."""
    return max(chunkings, key=lambda m: (*strength(mine, chunkings[m]), m))


def _hit_strength(mine: dict[int, list[int]], theirs: dict[int, list[int]]) -> tuple[float, float]:
    """`_strongest`'s strength by accuracy@1: `theirs`' hits on the shared queries, then the interval's end."""
    return _shared_hits(mine, theirs), -difference(mine, theirs)[1]


def _shared_hits(mine: dict[int, list[int]], theirs: dict[int, list[int]]) -> int:
    """`theirs`' hits on the queries `difference` pairs with `mine` (`_paired`)."""
    return sum(hit for _, hit in _paired(mine, theirs))


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
    return _bold(text, low, high)
