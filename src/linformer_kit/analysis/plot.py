"""Figure 1 of the paper from a `SpectrumResult`: curves per layer, and a layer × head heatmap.

Plotting only; the numbers come from `analysis/spectrum.py`. Agg backend, small PNGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

if TYPE_CHECKING:
    from linformer_kit.analysis.spectrum_result import SpectrumResult


def _y_label(result: SpectrumResult) -> str:
    if result.config.normalization == "singular":
        return "normalized cumulative singular value"
    return "normalized cumulative energy (σ²)"


def plot_cumulative_curves(result: SpectrumResult, path: str | Path) -> Path:
    """Figure 1 (left): c(i) vs i, one line per layer (mean over heads and inputs), ±1 std band."""
    curves, stds = result.layer_curve_mean.numpy(), result.layer_curve_std.numpy()  # (L, r)
    index = np.arange(1, curves.shape[-1] + 1)
    colors = plt.get_cmap("viridis")(np.linspace(0, 1, result.num_layers))
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    for layer in range(result.num_layers):
        ax.plot(index, curves[layer], color=colors[layer], lw=1.2, label=f"layer {layer + 1}")
        low, high = np.clip(curves[layer] - stds[layer], 0, 1), np.clip(curves[layer] + stds[layer], 0, 1)
        ax.fill_between(index, low, high, color=colors[layer], alpha=0.12, lw=0)
    ax.axhline(result.config.keep, color="grey", ls="--", lw=0.8)
    ax.axvline(result.index, color="grey", ls=":", lw=0.8)
    ax.set_xlabel("singular value index i")
    ax.set_ylabel(_y_label(result))
    ax.set_ylim(0, 1.02)
    ax.set_xlim(1, curves.shape[-1])
    ax.set_title(
        f"attention spectrum, {result.num_inputs} inputs of ≤ {max(result.input_lengths)} tokens", fontsize=9
    )
    ax.legend(fontsize=6, ncol=2 if result.num_layers > 6 else 1, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)


def plot_index_heatmap(result: SpectrumResult, path: str | Path, index: int | None = None) -> Path:
    """Figure 1 (right): c(index) per layer (rows) and head (columns), mean over inputs."""
    index = result.index if index is None else index
    values = result.at_index(index).numpy()  # (L, h)
    fig, ax = plt.subplots(figsize=(1.4 + 0.5 * result.num_heads, 1.0 + 0.4 * result.num_layers), dpi=100)
    image = ax.imshow(values, cmap="viridis", aspect="auto", origin="lower")
    if values.size <= 400:  # numbers stay legible up to ~20 × 20
        middle = (values.min() + values.max()) / 2
        for layer in range(result.num_layers):
            for head in range(result.num_heads):
                value = values[layer, head]
                color = "k" if value > middle else "w"  # dark text on the bright end of viridis
                ax.text(head, layer, f"{value:.3f}", ha="center", va="center", fontsize=6, color=color)
    ax.set_xticks(range(result.num_heads), [str(h + 1) for h in range(result.num_heads)], fontsize=7)
    ax.set_yticks(
        range(result.num_layers), [str(layer + 1) for layer in range(result.num_layers)], fontsize=7
    )
    ax.set_xlabel("head")
    ax.set_ylabel("layer")
    ax.set_title(f"c({index}) of {result.curve_mean.shape[-1]}", fontsize=9)
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return Path(path)
