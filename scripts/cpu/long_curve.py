"""The long stage's learning curve (issue "Long documents on prose", item 2): each checkpoint's scores, one JSON
and one plot.

    python scripts/cpu/long_curve.py docs/reproduction/long-minilm/curve

Reads DIR/STEPS-NAME/longdocs.json (the `longdocs` runs of each checkpoint of the 80-step run: STEPS the long
steps it had taken, e.g. 40-books, 80-books-s23), DIR/c160/STEPS-NAME/longdocs.json (the same of the 160-step
run, its schedule over 160 steps) and, for the README's own 40-step run (a schedule of 40 steps, not a checkpoint
of a longer one), docs/reproduction/long-minilm/long4096-readme/*/longdocs.json beside the original's chunks of
the same documents (long4096-books, long4096, long4096-c1-books-short). Writes DIR/curve.json: for each point,
task, length and method the mean score over the seeds it has, the seeds, and their scores; and DIR/curve.png:
book halves at 4 096 by long steps, every reading, the mean of the seeds each point has (a seed's 50 pairs put
one standard error at about 7 points; curve.json lists the seeds), and the keyed tasks at 4 096.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

LONG_MINILM = Path("docs/reproduction/long-minilm")
# the README's 40-step run (its own schedule): the student's readings, and the original's on the same documents
README_40 = ["long4096-readme/books", "long4096-readme/passkey", "long4096-readme/access-code", "long4096-books",
             "long4096", "long4096-c1-books-short/access-code"]  # fmt: skip
ORIGINAL = ("truncate-512", "chunks-mean-512", "chunks-best-512")
PLOTTED = ("whole", "late-chunking-512", "contextual-chunks-512", "chunks-mean-512", "chunks-best-512")


def records(path: Path) -> list[dict]:
    return [r for r in json.loads(path.read_text())["records"] if r.get("depth") is None]


def points(folder: Path) -> dict[str, list[dict]]:
    """Point name -> its records: "40 (schedule 40)" from the README's run, "STEPS (schedule 80)" per folder."""
    out: dict[str, list[dict]] = defaultdict(list)
    for name in README_40:
        path = LONG_MINILM / name / "longdocs.json"
        if path.is_file():  # the student's own readings, and the original's chunks (same documents, seed)
            out["40 (schedule 40)"] += [
                r for r in records(path) if "readme" in name or r["method"] in ORIGINAL
            ]
    for schedule, runs in ((80, folder), (160, folder / "c160")):
        for path in sorted(runs.glob("*/longdocs.json")):
            steps = path.parent.name.split("-")[0]
            out[f"{steps} (schedule {schedule})"] += records(path)
    return dict(sorted(out.items(), key=lambda item: _steps(item[0])))


def _steps(point: str) -> tuple[int, int]:
    """ "80 (schedule 160)" -> (160, 80): by schedule, then steps."""
    steps, schedule = point.replace(")", "").split(" (schedule ")
    return int(schedule), int(steps)


def summary(point: list[dict]) -> dict[str, dict]:
    """task@length -> method -> {"mean", "seeds", "scores"} (a (task, length, method, seed) read once)."""
    scores: dict[tuple[str, int, str], dict[int, float]] = defaultdict(dict)
    for r in point:
        scores[(r["task"], r["length"], r["method"])].setdefault(r["seed"], r["score"])
    out: dict[str, dict] = defaultdict(dict)
    for (task, length, method), by_seed in sorted(scores.items()):
        seeds = sorted(by_seed)
        values = [by_seed[s] for s in seeds]
        out[f"{task}@{length}"][method] = {"mean": round(sum(values) / len(values), 2), "seeds": seeds,
                                           "scores": values}  # fmt: skip
    return out


def plot(curve: dict[str, dict], out: Path) -> None:
    """Each student reading a colour, each schedule a marker (its points joined); the original's readings, the
    same documents at every point, one dotted line each across the steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    colours = plt.get_cmap("tab10").colors
    schedules = sorted({_steps(p)[0] for p in curve})
    marker = dict(zip(schedules, "o^s", strict=False))
    panels = (
        (axes[0], (("books@4096", m) for m in PLOTTED)),
        (axes[1], (("passkey@4096", m) for m in ("whole", "late-chunking-512", "chunks-best-512"))),
        (axes[1], (("access-code@4096", m) for m in ("whole", "chunks-best-512"))),
    )
    colour = 0
    for ax, lines in panels:
        for key, method in lines:
            name = method if ax is axes[0] else f"{key.split('@')[0]}, {method}"
            if method.startswith("chunks"):  # the original: the same documents at every point, its most seeds
                cells = [curve[p][key][method] for p in curve if method in curve[p].get(key, {})]
                mean = max(cells, key=lambda cell: len(cell["seeds"]))["mean"]
                ax.axhline(mean, color=colours[colour % 10], linestyle=":", label=f"{name} (original)")
            for schedule in () if method.startswith("chunks") else schedules:
                cells = [(_steps(p)[1], curve[p][key].get(method)) for p in curve
                         if _steps(p)[0] == schedule and key in curve[p]]  # fmt: skip
                points = [(steps, cell["mean"]) for steps, cell in cells if cell]
                if points:
                    ax.plot(*zip(*points, strict=True), "-", marker=marker[schedule], color=colours[colour % 10],
                            label=f"{name}, schedule {schedule}")  # fmt: skip
            colour += 1
    axes[0].set_title("book halves (valid + test books), 4 096 tokens, mean over seeds", fontsize=9)
    axes[1].set_title("passkey and access code, 4 096 tokens", fontsize=9)
    for ax in axes:
        ax.set_ylabel("accuracy@1 (%)")
        ax.set_xlabel("long steps taken (marker: the schedule's length)")
        ax.set_xticks([40, 80, 120, 160])
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main(folder: str) -> None:
    root = Path(folder)
    curve = {name: summary(point) for name, point in points(root).items()}
    (root / "curve.json").write_text(json.dumps(curve, indent=1) + "\n")
    plot(curve, root / "curve.png")
    for name, tasks in curve.items():
        for key, methods in tasks.items():
            shown = ", ".join(f"{m} {v['mean']:g}" for m, v in methods.items())
            print(f"{name:19} {key:16} {shown}")


if __name__ == "__main__":
    main(sys.argv[1])
