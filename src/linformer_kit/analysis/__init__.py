"""Low-rank analysis of attention (the paper's Figure 1) and a projected-length recommender.

Options and their checks: `spectrum_config`; singular values: `svd`; curves, ranks and k: `curves`;
running a model over text: `spectrum` (its inputs `spectrum_inputs`, its result `spectrum_result`, the
readings of copying and local heads `head_readings`); the files written: `spectrum_report` (JSON) and
`plot` (PNGs).
"""

from typing import TYPE_CHECKING

from linformer_kit import lazy_attributes
from linformer_kit.analysis.spectrum_config import SpectrumConfig

__all__ = [
    "SpectrumConfig",
    "SpectrumResult",
    "chunk_text",
    "compute_spectrum",
    "cumulative_curve",
    "distance_mass",
    "effective_rank",
    "exact_svdvals",
    "first_token_mass",
    "load_encoder",
    "offset_mass",
    "randomized_svdvals",
    "recommend_global_tokens",
    "recommend_local_window",
    "recommend_projected_length",
    "singular_values",
    "spectrum_from_pretrained",
    "uniform_distance_mass",
    "write_spectrum_report",
]

# name -> module: loaded on first use, so `linformer spectrum --help` (which needs only the config)
# does not import torch
__getattr__ = lazy_attributes(__name__, {
    "cumulative_curve": "curves", "effective_rank": "curves", "recommend_projected_length": "curves",
    "offset_mass": "curves", "distance_mass": "curves", "first_token_mass": "curves",
    "uniform_distance_mass": "curves", "recommend_local_window": "curves", "recommend_global_tokens": "curves",
    "SpectrumResult": "spectrum_result", "chunk_text": "spectrum_inputs", "compute_spectrum": "spectrum",
    "load_encoder": "spectrum_inputs", "spectrum_from_pretrained": "spectrum",
    "write_spectrum_report": "spectrum_report",
    "exact_svdvals": "svd", "randomized_svdvals": "svd", "singular_values": "svd",
})  # fmt: skip


if TYPE_CHECKING:
    from linformer_kit.analysis.curves import (
        cumulative_curve,
        distance_mass,
        effective_rank,
        first_token_mass,
        offset_mass,
        recommend_global_tokens,
        recommend_local_window,
        recommend_projected_length,
        uniform_distance_mass,
    )
    from linformer_kit.analysis.spectrum import compute_spectrum, spectrum_from_pretrained
    from linformer_kit.analysis.spectrum_inputs import chunk_text, load_encoder
    from linformer_kit.analysis.spectrum_report import write_spectrum_report
    from linformer_kit.analysis.spectrum_result import SpectrumResult
    from linformer_kit.analysis.svd import exact_svdvals, randomized_svdvals, singular_values
