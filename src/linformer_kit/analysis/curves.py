"""From singular values to curves, ranks and k: the maths of the spectrum, on tensors only.

    c(i) = (σ_1 + ... + σ_i) / (σ_1 + ... + σ_n)          normalization="singular" (the default)
    c(i) = (σ_1² + ... + σ_i²) / ‖P‖_F²                   normalization="energy"
    effective rank at t = the smallest r with c(r) ≥ t
    offset mass m(o) = (1/n) Σ_i P[i, i+o]                 the share of attention on the key o places away

The singular values come from `analysis/svd.py`; running a model over text is `analysis/spectrum.py`.
"""

from __future__ import annotations

import torch

from linformer_kit.analysis.choices import HeadReduction, Normalization


def cumulative_curve(
    sigma: torch.Tensor, normalization: Normalization = "singular", total: torch.Tensor | None = None
) -> torch.Tensor:
    """(..., r) descending singular values -> (..., r) normalized cumulative curve, monotone, ≤ 1.

    `total` is the denominator (Σσ or Σσ² over *all* n values) when `sigma` holds only the top r;
    by default it is the sum of `sigma` itself, so the curve ends at exactly 1.
    """
    weights = sigma if normalization == "singular" else sigma.square()
    if total is None:
        total = weights.sum(-1)
    return weights.cumsum(-1) / total.unsqueeze(-1).clamp_min(torch.finfo(weights.dtype).tiny)


def effective_rank(curve: torch.Tensor, threshold: float) -> torch.Tensor:
    """(..., r) cumulative curve -> (...) smallest i (1-based) with curve[i-1] ≥ threshold.

    A tolerance of 1e-6 absorbs rounding (c(5) of a flat 10-spectrum is 0.49999997 in fp32).
    Where the curve never reaches the threshold (a truncated randomized curve) the answer is r.
    """
    below = (curve < threshold - 1e-6).sum(-1)  # curve is monotone: count of indices still short
    return (below + 1).clamp_max(curve.shape[-1])


def recommend_projected_length(
    curves: torch.Tensor, keep: float, head_reduction: HeadReduction = "max"
) -> list[int]:
    """(L, h, r) input-averaged curves -> per layer the smallest k keeping `keep` of the spectrum.

    "max": every head keeps `keep` (k = the largest head rank); "mean": the head-averaged curve does.
    Returns plain ints, ready for `LinformerConfig(projected_length=[...])`.
    """
    if head_reduction == "max":
        per_layer = effective_rank(curves, keep).amax(-1)  # (L,)
    else:
        per_layer = effective_rank(curves.mean(1), keep)  # (L,)
    return [int(k) for k in per_layer]


def nuclear_norm_upper_bound(top: torch.Tensor, frobenius_sq: torch.Tensor, n: int) -> torch.Tensor:
    """Σ of all n singular values, bounded above from the top r and ‖P‖_F² (Cauchy–Schwarz on the tail).

    Used as the "singular" denominator of the randomized method, so its curve is a lower bound of
    the true curve there and the k it recommends errs on the large (safe) side.
    """
    tail_energy = (frobenius_sq - top.square().sum(-1)).clamp_min(0.0)
    return top.sum(-1) + torch.sqrt((n - top.shape[-1]) * tail_energy)


def offset_mass(maps: torch.Tensor, radius: int) -> torch.Tensor:
    """(..., n, n) attention maps -> (..., 2·radius + 1): m(o) for o = -radius .. radius (key - query).

    m(o) is the attention mass a query puts on the key o positions away, averaged over the n queries
    (a query with no key there adds 0). A head with m(±1) ≈ 1 copies its neighbour: P is a shift,
    full rank (rank n - 1), and a window-mean projection, which averages neighbouring keys and values,
    cannot hold it (docs/reproduction.md, the study's trunk at n = 512). Reference loop in
    tests/analysis/test_curves.py.
    """
    n = maps.shape[-1]
    if not 0 <= radius < n:
        raise ValueError(f"offset_mass: radius={radius} must be >= 0 and < n={n}")
    diagonals = [maps.diagonal(offset=o, dim1=-2, dim2=-1).sum(-1) for o in range(-radius, radius + 1)]
    return torch.stack(diagonals, dim=-1) / n
