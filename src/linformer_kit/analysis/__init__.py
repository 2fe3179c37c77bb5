"""Low-rank analysis of attention (the paper's Figure 1) and a projected-length recommender."""

from linformer_kit.analysis.spectrum import (
    SpectrumConfig,
    SpectrumResult,
    chunk_text,
    compute_spectrum,
    cumulative_curve,
    effective_rank,
    load_encoder,
    recommend_projected_length,
    spectrum_from_pretrained,
    write_spectrum_report,
)
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
