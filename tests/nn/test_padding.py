"""Padding semantics (DESIGN.md): padded batch == one-by-one, pad content is irrelevant, no NaN."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention
from tests.fixtures.batches import padded_states

D, H, N = 32, 4, 16
LENGTHS = [16, 11, 4, 1]
CONFIGS = [
    (sharing, kind)
    for sharing in ["none", "headwise", "kv"]
    for kind in ["linear", "mean", "max", "conv", "random"]
]


def _layer(sharing: str, kind: str, k: int | None = 4, **kwargs) -> LinformerSelfAttention:
    layer = LinformerSelfAttention(D, H, N, k, sharing=sharing, projection=kind, **kwargs).double()
    with torch.no_grad():
        layer.key.bias.normal_()
        layer.value.bias.normal_()
    return layer.eval()


@pytest.mark.parametrize(("sharing", "kind"), [*CONFIGS, ("headwise", "full")])
def test_padded_batch_equals_one_by_one(sharing: str, kind: str) -> None:
    layer = _layer(sharing, "linear", None) if kind == "full" else _layer(sharing, kind)
    x, mask = padded_states(LENGTHS, N, D)
    batched = layer(x, mask)
    for i, length in enumerate(LENGTHS):
        alone = layer(x[i : i + 1, :length])
        assert_close(batched[i, :length], alone[0])


@pytest.mark.parametrize(("sharing", "kind"), CONFIGS)
@pytest.mark.parametrize("order", ["auto", "paper"])
def test_pad_content_does_not_matter(sharing: str, kind: str, order: str) -> None:
    layer = _layer(sharing, kind, projection_order=order)
    x, mask = padded_states(LENGTHS, N, D)
    noisy = torch.where(mask[..., None], x, 1e3 * torch.randn_like(x))
    real = mask[..., None].expand_as(x)
    assert_close(layer(x, mask)[real], layer(noisy, mask)[real])


@pytest.mark.parametrize(("sharing", "kind"), [*CONFIGS, ("headwise", "full")])
@pytest.mark.parametrize("backend", ["sdpa", "blocked", "eager"])
def test_no_nan_for_all_pad_rows(sharing: str, kind: str, backend: str) -> None:
    layer = (
        _layer(sharing, "linear", None, backend=backend)
        if kind == "full"
        else _layer(sharing, kind, backend=backend)
    )
    x, mask = padded_states([0, 3, 16], N, D)
    out = layer(x, mask)
    assert torch.isfinite(out).all()


def test_causal_full_attention_does_not_see_the_future() -> None:
    layer = LinformerSelfAttention(D, H, N, None, causal=True).double()
    x = torch.randn(1, N, D, dtype=torch.float64)
    changed = x.clone()
    changed[:, 9:] = torch.randn(1, N - 9, D, dtype=torch.float64)
    assert_close(layer(x)[:, :9], layer(changed)[:, :9])
    assert not torch.allclose(layer(x)[:, 9:], layer(changed)[:, 9:])


def test_causal_full_attention_with_left_padding_is_finite_and_pad_independent() -> None:
    layer = LinformerSelfAttention(D, H, N, None, causal=True).double()
    x = torch.randn(1, N, D, dtype=torch.float64)
    mask = torch.arange(N)[None, :] >= 5  # left padding: the first 5 tokens are pads
    noisy = torch.where(mask[..., None], x, 100 * torch.randn_like(x))
    out = layer(x, mask)
    assert torch.isfinite(out).all()
    assert_close(out[:, 5:], layer(noisy, mask)[:, 5:])
    assert_close(out[:, 5:], layer(x[:, 5:])[:, :])
