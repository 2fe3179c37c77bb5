"""projection_scaling="length": E(mX) * sqrt(N / n_real) (nn/projection.py docstring)."""

from __future__ import annotations

import math

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention, SequenceProjection
from tests.fixtures.batches import length_mask

D, H, N, K = 32, 4, 64, 8


def _layer(sharing: str, order: str = "auto") -> LinformerSelfAttention:
    layer = LinformerSelfAttention(
        D,
        H,
        N,
        K,
        sharing=sharing,
        projection_scaling="length",
        projection_order=order,
        projection_init="random",
    ).double()
    with torch.no_grad():
        layer.key.bias.normal_()
        layer.value.bias.normal_()
    return layer.eval()


def test_scaled_projection_is_the_formula() -> None:
    torch.manual_seed(0)
    plain = SequenceProjection(N, K, init="random").double()
    scaled = SequenceProjection(N, K, scaling="length", init="random").double()
    scaled.load_state_dict(plain.state_dict())
    x = torch.randn(3, 20, D, dtype=torch.float64)
    mask = length_mask([20, 9, 1], 20)
    expected = plain(x, mask)
    got = scaled(x, mask)
    factor = torch.tensor([math.sqrt(N / 20), math.sqrt(N / 9), math.sqrt(N / 1)], dtype=torch.float64)
    assert_close(got.values, expected.values * factor[:, None, None])
    assert_close(got.row_weight, expected.row_weight * factor[:, None, None])
    assert_close(scaled(x).values, plain(x).values * math.sqrt(N / 20))  # unpadded: n_real = n


def test_short_inputs_keep_the_key_norm_of_full_length_ones() -> None:
    torch.manual_seed(0)
    scaled = SequenceProjection(N, K, scaling="length", init="random").double()
    plain = SequenceProjection(N, K, init="random").double()
    plain.load_state_dict(scaled.state_dict())
    x = torch.randn(256, N, D, dtype=torch.float64)
    full = scaled(x).values.norm(dim=-1).mean()
    short_scaled = scaled(x[:, :8]).values.norm(dim=-1).mean()
    short_plain = plain(x[:, :8]).values.norm(dim=-1).mean()
    assert abs(short_scaled / full - 1) < 0.1  # same norm at 8 tokens as at 64
    assert short_plain / full < 0.45  # unscaled: about sqrt(8/64) = 0.35


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv"])
@pytest.mark.parametrize("order", ["auto", "paper"])
def test_padded_batch_equals_one_by_one_with_length_scaling(sharing: str, order: str) -> None:
    torch.manual_seed(0)
    layer = _layer(sharing, order)
    lengths = [N, 30, 5, 1]
    x = torch.randn(len(lengths), N, D, dtype=torch.float64)
    mask = length_mask(lengths, N)
    batched = layer(x, mask)
    for i, length in enumerate(lengths):
        assert_close(batched[i, :length], layer(x[i : i + 1, :length])[0])


def test_fast_and_paper_order_agree_with_length_scaling() -> None:
    torch.manual_seed(0)
    fast = _layer("headwise")
    paper = _layer("headwise", "paper")
    paper.load_state_dict(fast.state_dict())
    x = torch.randn(2, 40, D, dtype=torch.float64)
    mask = length_mask([40, 13], 40)
    assert_close(fast(x, mask), paper(x, mask))


@pytest.mark.parametrize("kind", ["mean", "max", "conv"])
def test_length_scaling_needs_a_dense_projection(kind: str) -> None:
    with pytest.raises(
        ValueError, match=f"projection_scaling='length' applies to dense projections.*projection='{kind}'"
    ):
        SequenceProjection(N, K, kind, scaling="length")


def test_length_scaling_needs_a_zero_mean_start() -> None:
    # a window-started E already averages its window's real tokens: scaling would inflate it
    with pytest.raises(
        ValueError, match=r"projection_scaling='length'.*projection_init='window'.*projection_init='random'"
    ):
        SequenceProjection(N, K, scaling="length")


def test_unknown_scaling_is_named() -> None:
    with pytest.raises(ValueError, match=r"scaling must be one of .*got 'sqrt'"):
        SequenceProjection(N, K, scaling="sqrt")  # type: ignore[arg-type]
