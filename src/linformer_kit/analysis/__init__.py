"""Low-rank analysis of attention (the paper's Figure 1) and a projected-length recommender.

Options and their checks: `spectrum_config`; singular values: `svd`; curves, ranks and k: `curves`;
running a model over text: `spectrum`; the files written: `spectrum_report` (JSON) and `plot` (PNGs).
"""

from linformer_kit.analysis.curves import cumulative_curve, effective_rank, recommend_projected_length
from linformer_kit.analysis.spectrum import (
    SpectrumResult,
    chunk_text,
    compute_spectrum,
    load_encoder,
    spectrum_from_pretrained,
)
from linformer_kit.analysis.spectrum_config import SpectrumConfig
from linformer_kit.analysis.spectrum_report import write_spectrum_report
from linformer_kit.analysis.svd import exact_svdvals, randomized_svdvals, singular_values

__all__ = [
    "SpectrumConfig",
    "SpectrumResult",
    "chunk_text",
    "compute_spectrum",
    "cumulative_curve",
    "effective_rank",
    "exact_svdvals",
    "load_encoder",
    "randomized_svdvals",
    "recommend_projected_length",
    "singular_values",
    "spectrum_from_pretrained",
    "write_spectrum_report",
]
