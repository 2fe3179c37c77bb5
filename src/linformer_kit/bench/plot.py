"""Time and memory vs n, log-log, one line per method (and k, and local window w), with O(n) and O(n^2) guide slopes.

One row of two panels (time, peak-memory delta) per (scope, pass) in the result.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def plot_result(result: BenchmarkResult, path: str | Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys((r.scope, r.pass_type) for r in result.records))
    fig, axes = plt.subplots(len(keys), 2, figsize=(10, 3.6 * len(keys)), squeeze=False)
    for row, (scope, pass_type) in enumerate(keys):
        records = [r for r in result.records if (r.scope, r.pass_type) == (scope, pass_type)]
        for col, (field, scale, unit) in enumerate(
            [
                ("time_median_s", 1e3, "time per call (ms)"),
                ("memory_delta_bytes", 2**-20, "peak memory delta (MiB)"),
            ]
        ):
            ax = axes[row][col]
            _plot_lines(ax, records, field, scale)
            ax.set(
                xscale="log",
                yscale="log",
                xlabel="sequence length n",
                ylabel=unit,
                title=f"{scope}, {pass_type}",
            )
            ax.grid(True, which="major", alpha=0.3)
        axes[row][0].legend(fontsize=7, loc="upper left")
    cfg = result.config
    fig.suptitle(
        f"Linformer vs full attention: {cfg['device']} {cfg['dtype']}, d={cfg['hidden_size']}, "
        f"{cfg['num_heads']} heads, batch {cfg['batch_size']}",
        fontsize=10,
    )
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def _plot_lines(ax: Axes, records: list[BenchmarkRecord], field: str, scale: float) -> None:
    lines: dict[str, list[tuple[int, float]]] = {}
    for r in records:
        value = getattr(r, field)
        if value:
            label = r.method if r.k is None else f"{r.method} k={r.k}"
            if r.local_window is not None:
                label += f" w={r.local_window}"
            lines.setdefault(label, []).append((r.n, value * scale))
    for label, points in lines.items():
        ns, ys = zip(*sorted(points))
        style = "--" if label.startswith("full") else ":" if label.startswith("peer") else "-"
        ax.plot(ns, ys, style, marker="o", markersize=3, label=label)
    if not lines:
        return
    # Guide slopes through the lowest first point: a line of slope 1 is O(n), of slope 2 is O(n^2).
    n0, y0 = min((pts[0] for pts in (sorted(p) for p in lines.values())), key=lambda p: p[1])
    n1 = max(n for pts in lines.values() for n, _ in pts)
    for power, name in ((1, "O(n)"), (2, "O(n²)")):
        ax.plot([n0, n1], [y0, y0 * (n1 / n0) ** power], color="grey", lw=0.8, alpha=0.6)
        ax.annotate(name, (n1, y0 * (n1 / n0) ** power), fontsize=7, color="grey", ha="right", va="bottom")
