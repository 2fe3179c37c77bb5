"""Known matrices give known spectra; curves, effective ranks and the recommender."""

from __future__ import annotations

import pytest
import torch

from linformer_kit.analysis import (
    SpectrumConfig,
    cumulative_curve,
    effective_rank,
    recommend_projected_length,
    singular_values,
)
from linformer_kit.analysis.curves import nuclear_norm_upper_bound, offset_mass


def test_identity_has_a_flat_spectrum_and_a_straight_curve() -> None:
    sigma = singular_values(torch.eye(10))
    torch.testing.assert_close(sigma, torch.ones(10))
    torch.testing.assert_close(cumulative_curve(sigma), torch.arange(1, 11) / 10)
    assert int(effective_rank(cumulative_curve(sigma), 0.5)) == 5
    assert int(effective_rank(cumulative_curve(sigma), 0.9)) == 9


@pytest.mark.parametrize("rank", [1, 3, 7])
def test_rank_r_matrix_has_exactly_r_nonzero_singular_values(rank: int) -> None:
    a = torch.randn(24, rank, dtype=torch.float64) @ torch.randn(rank, 24, dtype=torch.float64)
    sigma = singular_values(a)
    assert (sigma > 1e-8 * sigma[0]).sum() == rank
    curve = cumulative_curve(sigma)
    torch.testing.assert_close(curve[rank - 1 :], torch.ones(24 - rank + 1, dtype=torch.float64))
    assert int(effective_rank(curve, 1.0)) == rank


def test_curves_of_softmax_maps_are_monotone_and_end_at_one() -> None:
    maps = (3 * torch.randn(2, 3, 20, 20)).softmax(-1)  # (b, h, n, n), rows sum to 1 like attention
    for normalization in ("singular", "energy"):
        curve = cumulative_curve(singular_values(maps), normalization)  # (b, h, n)
        assert (curve.diff(dim=-1) >= 0).all()
        torch.testing.assert_close(curve[..., -1], torch.ones(2, 3))
        assert (curve[..., 0] > 0).all()


def test_energy_curve_squares_the_singular_values() -> None:
    sigma = torch.tensor([3.0, 1.0])
    torch.testing.assert_close(cumulative_curve(sigma, "singular"), torch.tensor([0.75, 1.0]))
    torch.testing.assert_close(cumulative_curve(sigma, "energy"), torch.tensor([0.9, 1.0]))


def test_nuclear_norm_bound_holds_and_is_tight_without_a_tail() -> None:
    a = torch.randn(4, 30, 30, dtype=torch.float64)
    sigma = singular_values(a)  # (4, 30)
    frobenius_sq = a.square().sum((-2, -1))
    bound = nuclear_norm_upper_bound(sigma[:, :10], frobenius_sq, 30)
    assert (bound >= sigma.sum(-1) - 1e-9).all()
    torch.testing.assert_close(nuclear_norm_upper_bound(sigma, frobenius_sq, 30), sigma.sum(-1))


def test_recommender_per_layer_worst_head_or_mean() -> None:
    n = 8
    step = torch.arange(1, n + 1) / n  # flat spectrum: rank 0.5 -> 4
    one_hot = torch.ones(n)  # rank-1 map: every threshold -> 1
    curves = torch.stack([torch.stack([step, one_hot]), torch.stack([one_hot, one_hot])])  # (L=2, h=2, n)
    assert recommend_projected_length(curves, 0.7, "max") == [6, 1]  # step reaches 0.7 at 6/8
    assert recommend_projected_length(curves, 0.7, "mean") == [4, 1]  # (step + 1) / 2 reaches 0.7 at 4/8
    assert all(type(k) is int for k in recommend_projected_length(curves, 0.9))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("keep", 1.5, r"keep=1.5 must be in \(0, 1\]"),
        ("keep", 0.0, r"keep=0.0 must be in \(0, 1\]"),
        ("index", 0, r"index=0 must be >= 1"),
        ("thresholds", (0.9, 2.0), r"threshold 2.0 must be in \(0, 1\]"),
        ("max_inputs", 0, r"max_inputs=0 must be >= 1"),
        ("method", "lanczos", r"method='lanczos' must be one of \('exact', 'randomized'\)"),
        ("seq_len", 1, r"seq_len=1 must be >= 2"),
    ],
)
def test_config_rejects_bad_values(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SpectrumConfig(**{field: value})


def test_offset_mass_equals_a_loop_over_queries_and_a_shift_puts_all_on_one_offset() -> None:
    maps = torch.softmax(torch.randn(2, 3, 9, 9, generator=torch.Generator().manual_seed(0)), -1)
    expected = torch.zeros(2, 3, 5)
    for i in range(9):  # the reference: query i, key i + o
        for slot, o in enumerate(range(-2, 3)):
            if 0 <= i + o < 9:
                expected[..., slot] += maps[..., i, i + o] / 9
    torch.testing.assert_close(offset_mass(maps, 2), expected)

    shift = torch.diag(torch.ones(8), diagonal=1)  # query i attends to key i + 1 (the last query: nothing)
    torch.testing.assert_close(offset_mass(shift, 1), torch.tensor([0.0, 0.0, 8 / 9]))
    with pytest.raises(ValueError, match=r"radius=9 must be >= 0 and < n=9"):
        offset_mass(maps, 9)
