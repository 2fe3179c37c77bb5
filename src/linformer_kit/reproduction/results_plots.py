"""The validation-perplexity figures of a study: one curve per pretraining run, and the recipe's panels.

Figure 3 as the paper draws it (`plot_panels`: title -> runs side by side) and every run in one plot
(`plot_curves`), with the no-context floor and the steps where a length schedule moves to longer
blocks marked. Plotting only (matplotlib, Agg): the curves are collected by reproduction/results.py.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any


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
