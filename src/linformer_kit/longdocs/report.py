"""The suite's records as a Markdown table (mean over seeds, ± their spread) and a plot of score against length.

Plotting apart from measuring: `table` needs the records only; `plot` imports matplotlib when called.

Pairs are few (a user's documents, a verdict on held-out books: 25 to 100), so each accuracy carries its
binomial standard error (models/halves.py `standard_error`) and the table says how many points two methods must be apart to be
told apart (`uncertainty`); the plot draws each score with it, every method a little apart from the others at
one length (`dodged`), so none hides another.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from linformer_kit.models.halves import separation, standard_error
from linformer_kit.models.paired import mrr_table, paired_table, reading_order
from linformer_kit.models.readings import DIFFERENT_TEXTS, METHODS


def _methods(rows: dict) -> list[str]:
    """Every method label of `rows`, in METHODS' order, each base by chunk length (`reading_order`)."""
    present = {m for cells in rows.values() for m in cells}
    return sorted(present, key=lambda m: (m == DIFFERENT_TEXTS, reading_order(m)))


TIMED_TOGETHER = "A/B in one process"  # how one run of the suite times its methods (`table`)


def summary(records: list[dict]) -> dict[tuple[str, int], dict[str, tuple[float, float, float]]]:
    """{(task, length): {method: (mean score, spread over seeds, seconds per document)}} (depth records
    left out; spread is the standard deviation over seeds, 0 for one seed)."""
    grouped: dict[tuple[str, int, str], list[dict]] = defaultdict(list)
    for r in records:
        if r.get("depth") is None:
            grouped[(r["task"], r["length"], r["method"])].append(r)
    out: dict[tuple[str, int], dict[str, tuple[float, float, float]]] = defaultdict(dict)
    for (task, length, method), group in grouped.items():
        scores = [r["score"] for r in group]
        spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
        seconds = statistics.mean(r["seconds_per_document"] for r in group)
        out[(task, length)][method] = (statistics.mean(scores), spread, seconds)
    return out


def queries(records: list[dict]) -> dict[tuple[str, int, str], int]:
    """{(task, length, method): the queries its mean score is over, every seed's together}, for the records
    that say it (`Record.queries`: accuracies; a fidelity's cosines and older runs' records do not)."""
    out: dict[tuple[str, int, str], int] = defaultdict(int)
    for r in records:
        if r.get("depth") is None and r.get("queries"):
            out[(r["task"], r["length"], r["method"])] += r["queries"]
    return dict(out)


def uncertainty(records: list[dict]) -> str:
    """A Markdown table: per task and length, the n queries a score is over, the standard error at the row's
    score nearest 50 and how far apart two of the row's scores must be to be told apart (models/halves.py
    `separation`); empty where no record says its queries."""
    counts, rows = queries(records), summary(records)
    lines = []
    for (task, length), cells in sorted(rows.items()):
        known = [
            (counts[(task, length, m)], cell[0]) for m, cell in cells.items() if (task, length, m) in counts
        ]
        if known:
            count = min(c for c, _ in known)
            error, apart = separation([score for _, score in known], count)
            lines.append(f"| {task} | {length} | {count} | {error:.1f} | {apart:.0f} |")
    if not lines:
        return ""
    return (
        "Uncertainty, in points (n: the queries, or pairs, a score is over, every seed's; one is 100 / n "
        "points): two scores of a row closer than `apart by` are not told apart.\n\n"
        "| task | length | n | standard error | apart by |\n|---|---|---|---|---|\n" + "\n".join(lines) + "\n"
    )  # fmt: skip


def scores(records: list[dict]) -> str:
    """A Markdown table: a row per task and length, a column per method ("score ± spread over seeds"), the
    best score of each row in bold."""
    rows = summary(records)
    methods = _methods(rows)
    head = "| task | length | " + " | ".join(methods) + " |\n|---|---|" + "---|" * len(methods) + "\n"
    body = []
    for (task, length), cells in sorted(rows.items()):
        best = max(cell[0] for cell in cells.values())
        shown = []
        for m in methods:
            if m not in cells:
                shown.append("–")
                continue
            mean, spread, _ = cells[m]
            text = f"{mean:.1f}" + (f" ± {spread:.1f}" if spread else "")
            shown.append(f"**{text}**" if mean == best else text)
        body.append(f"| {task} | {length} | " + " | ".join(shown) + " |")
    return head + "\n".join(body) + "\n"


def table(records: list[dict], timing: str = TIMED_TOGETHER) -> str:
    """`scores`, their `uncertainty`, the model's readings against the original's query by query
    (`paired_table`, and by MRR: `mrr_table`), then seconds per document of every method (`timing`: how they
    were timed)."""
    rows = summary(records)
    methods = _methods(rows)
    speed = ["| task | length | " + " | ".join(methods) + " |", "|---|---|" + "---|" * len(methods)]
    for (task, length), cells in sorted(rows.items()):
        speed.append(
            f"| {task} | {length} | "
            + " | ".join(f"{cells[m][2]:.3f}" if m in cells else "–" for m in methods)
            + " |"
        )
    errors, paired, ranked = uncertainty(records), paired_table(records), mrr_table(records)
    return (
        scores(records) + (f"\n{errors}" if errors else "") + (f"\n{paired}" if paired else "")
        + (f"\n{ranked}" if ranked else "")
        + f"\nSeconds per document ({timing}):\n\n" + "\n".join(speed) + "\n"
    )  # fmt: skip


MARKERS = "osD^vPX*hd"  # one a method (METHODS' order): two methods at one point stay told apart


def dodged(length: int, method: str) -> float:
    """Where `method`'s score at `length` is drawn: `length` moved by a twentieth of an octave a method in
    METHODS' order, centred, so that methods of one score at one length do not cover each other."""
    return length * 2 ** ((METHODS.index(method) - (len(METHODS) - 1) / 2) / 20)


def plot(records: list[dict], path: str | Path) -> Path:
    """Score against length, one panel per task, one line per method (log-2 length axis), each score with its
    standard error where the records give their queries."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, counts = summary(records), queries(records)
    tasks = sorted({task for task, _ in rows})
    fig, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks), 3.4), squeeze=False)
    for ax, task in zip(axes[0], tasks, strict=True):
        lengths = sorted({length for t, length in rows if t == task})
        for method in METHODS:
            points = [
                (length, rows[(task, length)][method][0])
                for length in lengths
                if method in rows[(task, length)]
            ]
            if not points:
                continue
            errors = [standard_error(score, counts[(task, length, method)])
                      if (task, length, method) in counts else 0.0 for length, score in points]  # fmt: skip
            # one colour and marker per method in every panel (the cycle would shift where a method is absent)
            index = METHODS.index(method)
            ax.errorbar([dodged(length, method) for length, _ in points], [score for _, score in points],
                        yerr=errors, marker=MARKERS[index], label=method, color=f"C{index}", capsize=2,
                        markerfacecolor="none")  # fmt: skip
        ax.set_xscale("log", base=2)
        ax.set_xticks(lengths, [str(length) for length in lengths])
        ax.minorticks_off()
        ax.set_title(task)
        ax.set_xlabel("tokens")
        ax.set_ylabel("score (%)")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


@dataclass(frozen=True)
class Source:
    """The records one run's folder (its longdocs.json) gives to a gathered report: those of `methods`, of
    `tasks` (None: every task)."""

    folder: str | Path
    methods: tuple[str, ...]
    tasks: tuple[str, ...] | None = None


def gathered(sources: list[Source]) -> list[dict]:
    """The records of several runs as one list, for one table and plot of runs made apart (a student's
    `whole` beside the baselines another run measured on the same seeded documents). A record two runs
    both give (task, length, method, seed, depth) is kept once if they agree on its model and score;
    ValueError if they do not, or if a source gives no record."""
    seen: dict[tuple, tuple[str, dict]] = {}
    out = []
    for source in sources:
        path = Path(source.folder) / "longdocs.json"
        records = [
            r
            for r in json.loads(path.read_text(encoding="utf-8"))["records"]
            if r["method"] in source.methods and (source.tasks is None or r["task"] in source.tasks)
        ]
        for field, names in (("method", source.methods), ("task", source.tasks or ())):
            missing = [name for name in names if not any(r[field] == name for r in records)]
            if missing:  # a misspelt name would otherwise drop its records without a word
                raise ValueError(f"{path}: no record of {field} {missing} among those asked for")
        for r in records:
            key = (r["task"], r["length"], r["method"], r["seed"], r.get("depth"))
            if key in seen:
                first, kept = seen[key]
                if (kept["model"], kept["score"]) != (r["model"], r["score"]):
                    raise ValueError(f"{path} and {first} both hold {key}, with other scores or models")
                continue
            seen[key] = (str(path), r)
            out.append(r)
    return out


def write_report(output_dir: str | Path, timing: str = TIMED_TOGETHER) -> dict[str, Path]:
    """longdocs.md and longdocs.png from the folder's longdocs.json (`timing`: as `table`'s)."""
    out = Path(output_dir)
    records = json.loads((out / "longdocs.json").read_text(encoding="utf-8"))["records"]
    (out / "longdocs.md").write_text(table(records, timing), encoding="utf-8")
    return {
        "json": out / "longdocs.json",
        "table": out / "longdocs.md",
        "plot": plot(records, out / "longdocs.png"),
    }
