"""The Linformer layer against an explicit-softmax reference, and its two orders against each other."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention, SequenceProjection
from tests.fixtures.batches import length_mask
from tests.nn.reference import reference_attention

D, H, N = 32, 4, 12
LINEAR_KINDS = ["linear", "mean", "conv", "random"]


def _set_identity(layer: LinformerSelfAttention) -> None:
    with torch.no_grad():
        for projection in {id(p): p for p in layer.projections()}.values():
            eye = torch.eye(projection.projected_length, projection.max_seq_len)
            projection.weight.copy_(eye.expand_as(projection.weight))


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv", "layerwise"])
@pytest.mark.parametrize("order", ["auto", "paper"])
def test_identity_projection_matches_full_attention(sharing: str, order: str) -> None:
    layer = LinformerSelfAttention(D, H, N, N, sharing=sharing, projection_order=order).double()
    _set_identity(layer)
    x = torch.randn(2, N, D, dtype=torch.float64, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)

    out = layer(x)
    grads = torch.autograd.grad(out.square().sum(), [x, layer.query.weight, layer.value.bias])
    expected = reference_attention(layer, x_ref)
    expected_grads = torch.autograd.grad(
        expected.square().sum(), [x_ref, layer.query.weight, layer.value.bias]
    )

    assert_close(out, expected)
    for got, want in zip(grads, expected_grads):
        assert_close(got, want)


def test_full_attention_mode_matches_reference() -> None:
    layer = LinformerSelfAttention(D, H, N, None).double()
    x = torch.randn(3, N, D, dtype=torch.float64)
    assert_close(layer(x), reference_attention(layer, x))


@pytest.mark.parametrize("sharing", ["headwise", "kv"])
def test_learned_projection_matches_reference(sharing: str) -> None:
    layer = LinformerSelfAttention(D, H, N, 5, sharing=sharing).double()
    e, f = (p.weight for p in layer.projections())
    x = torch.randn(2, N, D, dtype=torch.float64)
    assert_close(layer(x), reference_attention(layer, x, e, f))


@pytest.mark.parametrize("sharing", ["headwise", "kv", "layerwise"])
@pytest.mark.parametrize("kind", LINEAR_KINDS)
def test_fast_order_matches_paper_order_with_bias_and_padding(sharing: str, kind: str) -> None:
    fast = LinformerSelfAttention(D, H, N, 4, sharing=sharing, projection=kind).double()
    paper = LinformerSelfAttention(D, H, N, 4, sharing=sharing, projection=kind, projection_order="paper")
    paper = paper.double()
    paper.load_state_dict(fast.state_dict())
    with torch.no_grad():  # large biases, so a wrong bias term cannot hide in the tolerance
        for layer in (fast, paper):
            layer.key.bias.fill_(3.0)
            layer.value.bias.fill_(-2.0)
    x = torch.randn(3, N, D, dtype=torch.float64)
    mask = torch.ones(3, N, dtype=torch.bool)
    mask[1, 7:] = False
    mask[2, 2:] = False

    assert fast.uses_fast_order
    assert not paper.uses_fast_order
    assert_close(fast(x, mask), paper(x, mask))


@pytest.mark.parametrize("backend", ["sdpa", "blocked"])
def test_fast_backends_agree_with_eager(backend: str) -> None:
    sdpa = LinformerSelfAttention(D, H, N, 4, backend=backend)
    eager = LinformerSelfAttention(D, H, N, 4, backend="eager")
    eager.load_state_dict(sdpa.state_dict())
    x = torch.randn(2, N, D)
    mask = torch.ones(2, N, dtype=torch.bool)
    mask[0, 5:] = False
    assert_close(sdpa(x, mask), eager(x, mask), rtol=1e-5, atol=1e-6)


def test_forward_with_weights_returns_the_n_by_k_softmax() -> None:
    """The weights are softmax(Q (E K)ᵀ / sqrt(d)), written out here (rows that sum to 1 alone would
    hold for any softmax), and the output is what they give."""
    torch.manual_seed(0)
    layer = LinformerSelfAttention(D, H, N, 4).double()
    with torch.no_grad():
        layer.key_projection.weight.normal_()  # not the window start: every slot reads every token
    x = torch.randn(2, N, D, dtype=torch.float64)
    out, weights = layer.forward_with_weights(x)
    assert weights.shape == (2, H, N, 4)
    d = D // H
    q, k, v = (lin(x).view(2, N, H, d).transpose(1, 2) for lin in (layer.query, layer.key, layer.value))
    e, f = layer.key_projection.weight, layer.value_projection.weight  # (k, n), every head's
    want = torch.softmax(q @ (e @ k).transpose(-1, -2) / d**0.5, dim=-1)  # (b, h, n, k)
    assert_close(weights, want)
    assert_close(out, layer.dense((weights @ (f @ v)).transpose(1, 2).reshape(2, N, D)))
    assert_close(out, layer(x))


def test_gradcheck_fast_order() -> None:
    layer = LinformerSelfAttention(8, 2, 6, 3, sharing="kv").double()
    x = torch.randn(1, 6, 8, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True] * 4 + [False] * 2])
    assert torch.autograd.gradcheck(lambda t: layer(t, mask), (x,))


def test_projection_slices_columns_for_short_inputs() -> None:
    projection = SequenceProjection(10, 3, "linear").double()
    x = torch.randn(2, 6, 5, dtype=torch.float64)
    assert_close(projection(x).values, projection.weight[:, :6] @ x)


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv"])
def test_identity_projection_with_padding_matches_masked_full_attention(sharing: str) -> None:
    """Slots that see only padding are masked, so identity E is exactly full attention with a pad mask."""
    layer = LinformerSelfAttention(D, H, N, N, sharing=sharing).double()
    _set_identity(layer)
    full = LinformerSelfAttention(D, H, N, None).double()
    full.load_state_dict(layer.state_dict(), strict=False)  # q/k/v/dense; full attention has no E, F
    x = torch.randn(3, N, D, dtype=torch.float64)
    mask = length_mask([N, 7, 1], N)
    real = mask[..., None].expand_as(x)
    assert_close(layer(x, mask)[real], full(x, mask)[real])
    assert_close(layer(x[:, :5]), full(x[:, :5]))  # shorter than max_seq_len, no mask
