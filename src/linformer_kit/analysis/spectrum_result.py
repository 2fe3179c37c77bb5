"""What `linformer spectrum` reports: `SpectrumResult`, and its JSON form (`to_dict`).

The curves, ranks and k per layer, the offset, distance and first-token masses of every head, and
the readings taken from them (recommended projected_length, local_window, global_tokens), averaged
over inputs. Its own room because the report (analysis/spectrum_report.py), the plots
(analysis/plot.py) and the command line read a result without running a model (analysis/spectrum.py
makes one). OFFSET_RADIUS and WINDOW_RADII are the shape of its masses, so they are defined here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from linformer_kit.analysis.spectrum_config import SpectrumConfig

OFFSET_RADIUS = 3  # offset mass reported for keys -3 .. +3 positions from the query
WINDOW_RADII = (1, 4, 16, 64)  # the windows w read: distance mass within ±w, the recommended local_window


@dataclass
class SpectrumResult:
    """Everything `linformer spectrum` reports. Curves are averaged over inputs (± std over inputs)."""

    config: SpectrumConfig
    num_inputs: int
    input_lengths: list[int]
    curve_mean: torch.Tensor  # (L, h, r) per layer and head
    curve_std: torch.Tensor  # (L, h, r)
    layer_curve_mean: torch.Tensor  # (L, r) head-averaged, Figure 1 (left)
    layer_curve_std: torch.Tensor  # (L, r)
    effective_rank_mean: dict[float, torch.Tensor]  # threshold -> (L, h), averaged over inputs
    effective_rank_std: dict[float, torch.Tensor]  # threshold -> (L, h)
    recommended_projected_length: list[int | None]  # per layer, for LinformerConfig(projected_length=...)
    rank_projected_length: list[int]  # per layer, the spectrum's reading alone (shift layers not None)
    offset_mass: torch.Tensor  # (L, h, 2·OFFSET_RADIUS + 1) mass on keys -R .. +R from the query
    distance_mass: torch.Tensor  # (L, h, len(WINDOW_RADII)) share of attention within ±r of the query
    first_token_mass: torch.Tensor  # (L, h) share of attention on position 0
    uniform_distance_mass: torch.Tensor  # (len(WINDOW_RADII),) the same for uniform attention, over inputs
    uniform_first_token_mass: float  # 1/n averaged over inputs
    recommended_local_window: list[int | None]  # per layer, for LinformerConfig(local_window=...)
    recommended_global_tokens: int  # 0 or 1, for LinformerConfig(global_tokens=...)
    windowed_projected_length: list[int | None]  # k beside the window: the rank reading where a window is
    notes: list[str] = field(default_factory=list)

    @property
    def num_layers(self) -> int:
        return self.curve_mean.shape[0]

    @property
    def num_heads(self) -> int:
        return self.curve_mean.shape[1]

    @property
    def index(self) -> int:
        """The 1-based index of Figure 1 (right): the config's, which `compute_spectrum` sets if None."""
        index = self.config.index
        assert index is not None
        return index

    def at_index(self, index: int | None = None) -> torch.Tensor:
        """(L, h) mean normalized cumulative value at the 1-based `index`, Figure 1 (right)."""
        index = self.index if index is None else index
        if not 1 <= index <= self.curve_mean.shape[-1]:
            raise ValueError(
                f"index={index} must be between 1 and the curve length {self.curve_mean.shape[-1]}"
            )
        return self.curve_mean[..., index - 1]

    def to_dict(self) -> dict[str, Any]:
        def rounded(t: torch.Tensor) -> Any:
            return torch.round(t.double(), decimals=6).tolist()

        config = asdict(self.config)
        config["thresholds"] = list(self.config.thresholds)
        return {
            "config": config,
            "definition": _definition(self.config),
            "num_inputs": self.num_inputs,
            "input_lengths": self.input_lengths,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "recommended_projected_length": self.recommended_projected_length,
            "rank_projected_length": self.rank_projected_length,
            "at_index": {
                "index": self.index,
                "mean": rounded(self.at_index()),
                "std": rounded(self.curve_std[..., self.index - 1]),
            },
            "effective_rank": {
                str(t): {
                    "mean": rounded(self.effective_rank_mean[t]),
                    "std": rounded(self.effective_rank_std[t]),
                }
                for t in self.config.thresholds
            },
            "layer_curve_mean": rounded(self.layer_curve_mean),
            "layer_curve_std": rounded(self.layer_curve_std),
            "curve_mean": rounded(self.curve_mean),
            "curve_std": rounded(self.curve_std),
            "offset_mass": {
                "offsets": list(range(-OFFSET_RADIUS, OFFSET_RADIUS + 1)),
                "mean": rounded(self.offset_mass),
            },
            "distance_mass": {
                "radii": list(WINDOW_RADII),
                "mean": rounded(self.distance_mass),
                "uniform": rounded(self.uniform_distance_mass),
            },
            "first_token_mass": {
                "mean": rounded(self.first_token_mass),
                "uniform": round(self.uniform_first_token_mass, 6),
            },
            "recommended_local_window": self.recommended_local_window,
            "recommended_global_tokens": self.recommended_global_tokens,
            "windowed_projected_length": self.windowed_projected_length,
            "notes": self.notes,
        }


def _definition(config: SpectrumConfig) -> str:
    weights = "σ_j" if config.normalization == "singular" else "σ_j²"
    text = f"curve[i-1] = Σ_(j≤i) {weights} / Σ_(all j) {weights}, singular values σ of P = softmax(QKᵀ/√d)"
    if config.method == "randomized":
        text += f"; top {config.rank} σ by randomized subspace iteration, denominator exact (energy) or"
        text += " a Cauchy–Schwarz upper bound (singular), so the curve is a lower bound"
    return text
