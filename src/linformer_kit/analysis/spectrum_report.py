"""The files `linformer spectrum` writes: DIR/spectrum.json (every number) and Figure 1's two PNGs.

The numbers are `SpectrumResult.to_dict()` (`analysis/spectrum_result.py`): the curves, ranks and k per layer,
the offset mass, and the attention mass by distance (`distance_mass`, `first_token_mass`) with the
window read from it (`recommended_local_window`, `recommended_global_tokens`, `windowed_projected_length`;
docs/spectrum.md, "Which window?"). The figures are drawn by `analysis/plot.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from linformer_kit.analysis.spectrum_result import SpectrumResult


def write_spectrum_report(result: SpectrumResult, output_dir: str | Path) -> dict[str, Path]:
    """DIR/spectrum.json (all numbers) and the two Figure 1 PNGs. Returns the paths written."""
    from linformer_kit.analysis.plot import plot_cumulative_curves, plot_index_heatmap

    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "json": output_dir / "spectrum.json",
        "curves": output_dir / "spectrum_curves.png",
        "heatmap": output_dir / "spectrum_heatmap.png",
    }
    paths["json"].write_text(json.dumps(result.to_dict(), indent=1, allow_nan=False) + "\n", encoding="utf-8")
    plot_cumulative_curves(result, paths["curves"])
    plot_index_heatmap(result, paths["heatmap"])
    return paths
