"""From singular values to curves, ranks and k: the maths of the spectrum, on tensors only.

    c(i) = (σ_1 + ... + σ_i) / (σ_1 + ... + σ_n)          normalization="singular" (the default)
    c(i) = (σ_1² + ... + σ_i²) / ‖P‖_F²                   normalization="energy"
    effective rank at t = the smallest r with c(r) ≥ t
    offset mass m(o) = (1/n) Σ_i P[i, i+o]                 the share of attention on the key o places away
    distance mass M(r) = (1/|Q|) Σ_(i∈Q) Σ_(|i-j|≤r) P̂[i, j]  the share within r places (Q: real queries)
    first-token mass F = (1/|Q|) Σ_(i∈Q) P̂[i, 0]            the share on position 0 ([CLS], <s>)

P̂ is P with the padded keys dropped and each row rescaled to sum to 1 (P itself for a padding-free
softmax). A window of w places beside the projection (`LinformerConfig(local_window=w)`) holds M(w)
exactly, a global token (`global_tokens=1`) holds F.

The singular values come from `analysis/svd.py`; running a model over text is `analysis/spectrum.py`.
"""

from __future__ import annotations

from collections.abc import Sequence

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


# ----------------------------------------------------------------------------- attention by distance


def _real_shares(maps: torch.Tensor, real: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(b, ..., n, n) maps, (b, n) mask (True = real token) or None -> P̂ (b, ..., n, n), weights (b, ..., n).

    P̂: padded keys zeroed, each row rescaled to sum to 1 (a row with no mass stays 0); the query
    weights are 1/|Q| on the real queries and 0 on the padded ones, so Σ_i weight_i x_i is a mean over Q.
    """
    n = maps.shape[-1]
    if real is None:  # (n,): broadcasts against any leading dims
        real = torch.ones(n, dtype=maps.dtype, device=maps.device)
    else:
        real = real.view(real.shape[0], *([1] * (maps.dim() - 3)), n).to(maps.dtype)  # (b, 1.., n)
    maps = maps * real.unsqueeze(-2)  # (b, ..., n, n) padded keys dropped
    rows = maps.sum(-1, keepdim=True)  # (b, ..., n, 1)
    shares = maps / rows.clamp_min(torch.finfo(maps.dtype).tiny)
    weights = real / real.sum(-1, keepdim=True).clamp_min(1.0)  # (b, 1.., n)
    return shares, weights.expand(shares.shape[:-1])


def distance_mass(maps: torch.Tensor, radii: Sequence[int], real: torch.Tensor | None = None) -> torch.Tensor:
    """(b, ..., n, n) maps -> (b, ..., len(radii)): M(r), the share of attention within r places.

    M(r) = (1/|Q|) Σ_(i∈Q) Σ_(j: |i-j| ≤ r) P̂[i, j], Q the real queries of `real` (b, n) (None: all),
    P̂ the map without padded keys, rows rescaled to 1 (module docstring). The query's own key counts
    (|i-j| = 0), as in a local window. Uniform attention gives `uniform_distance_mass`; a head that copies
    its neighbour has M(1) ≈ 1. Reference loop in tests/analysis/test_window.py.
    """
    shares, weights = _real_shares(maps, real)
    position = torch.arange(maps.shape[-1], device=maps.device)
    distance = (position[:, None] - position[None, :]).abs()  # (n, n) |query - key|
    within = [(shares * (distance <= r)).sum(-1) for r in radii]  # R × (b, ..., n) per query
    return torch.stack([(weights * m).sum(-1) for m in within], dim=-1)


def first_token_mass(maps: torch.Tensor, real: torch.Tensor | None = None) -> torch.Tensor:
    """(b, ..., n, n) maps -> (b, ...): F = (1/|Q|) Σ_(i∈Q) P̂[i, 0], the share of attention on position 0."""
    shares, weights = _real_shares(maps, real)
    return (weights * shares[..., 0]).sum(-1)


def uniform_distance_mass(n: int, radii: Sequence[int]) -> torch.Tensor:
    """(len(radii),) M(r) of uniform attention over n tokens: ((2r + 1) n - r (r + 1)) / n², r ≤ n - 1.

    Query i has min(i, r) + min(n - 1 - i, r) + 1 keys within r places; the sum over i loses r(r+1)
    at the two ends. ≈ (2r + 1) / n for r ≪ n, and 1 once r ≥ n - 1. Its F is 1/n.
    """
    r = torch.tensor([min(radius, n - 1) for radius in radii], dtype=torch.float64)
    return ((2 * r + 1) * n - r * (r + 1)) / n**2


def recommend_local_window(
    mass: torch.Tensor, uniform: torch.Tensor, radii: Sequence[int], share: float, over_uniform: float
) -> list[int | None]:
    """(L, h, R) distance mass, (R,) uniform attention's -> per layer a window w from `radii`, or None.

    A head is local at r when M(r) ≥ share and M(r) ≥ over_uniform · U(r) (a window that uniform
    attention would nearly fill is no window: it is most of the input). Its window is the smallest such
    r; the layer's is the largest over its local heads, so every local head keeps ≥ `share` of its
    attention exact. Heads local at no r are spread: the projection's job, they ask for no window. A layer
    with no local head gets None. Plain ints, for `LinformerConfig(local_window=[...])`.
    """
    local = (mass >= share - 1e-6) & (mass >= over_uniform * uniform.to(mass) - 1e-6)  # (L, h, R)
    # (L, h) index of each head's smallest local r, -1 where it has none
    first = torch.where(local.any(-1), local.to(torch.int8).argmax(-1), -1)
    return [None if int(i) < 0 else int(radii[int(i)]) for i in first.amax(-1)]


def recommend_global_tokens(first: torch.Tensor, uniform: float, share: float, over_uniform: float) -> int:
    """(L, h) first-token mass -> 1 when some head puts ≥ share (and ≥ over_uniform / n) on position 0, else 0."""
    on_first = (first >= share - 1e-6) & (first >= over_uniform * uniform - 1e-6)
    return int(bool(on_first.any()))
