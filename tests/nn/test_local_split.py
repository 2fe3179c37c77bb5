"""The split core's room (nn/local_split.py) beyond its agreement with the reference (tests/nn/test_local.py): its
mask cache survives a trace, its backward refuses masks changed after the forward, torch.func takes it."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention, local_band
from linformer_kit.nn.keys import KeySet, Slots
from linformer_kit.nn.local import dense_local_attention, split_local_attention


def _inputs(grad: bool = True) -> tuple[list[torch.Tensor], torch.Tensor]:
    torch.manual_seed(0)
    b, h, n, d, s = 2, 2, 90, 8, 5
    tensors = [torch.randn(b, h, m, d, dtype=torch.float64, requires_grad=grad) for m in (n, n, n, s, s)]
    real = torch.ones(b, n, dtype=torch.bool)
    real[1, 70:] = False
    return tensors, real


def test_an_export_leaves_the_band_mask_cache_to_real_calls() -> None:
    """torch.export traces with fake tensors: a mask cached there would hand later real calls fake tensors (the
    band's share silently dropped). Nothing enters the cache while tracing, and the layer then equals its
    reference core."""
    local_band._positions.cache_clear()
    torch.manual_seed(0)
    layer = LinformerSelfAttention(32, 2, 128, 8, local_window=6).eval()
    x = torch.randn(2, 77, 32)
    torch.export.export(layer, (x,))
    assert local_band._positions.cache_info().currsize == 0
    with torch.no_grad():
        assert_close(layer(x, backend="split"), layer(x, backend="eager"), rtol=1e-5, atol=1e-5)


def test_the_backward_refuses_a_mask_changed_after_the_forward() -> None:
    """The masks are saved for the backward as tensors: changing one in place (a buffer reused for the next
    micro-batch) is an error, not other gradients."""
    (q, k, v, slot_k, slot_v), real = _inputs()
    out, _ = split_local_attention(q, k, v, KeySet(Slots(slot_k, slot_v, None, None), real, 7, 1), scale=0.3)
    real.fill_(True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.square().sum().backward()


def test_torch_func_grad_equals_autograd_through_the_fused_backward() -> None:
    (q, k, v, slot_k, slot_v), real = _inputs(grad=False)
    keyset = KeySet(Slots(slot_k, slot_v, None, None), real, 7, 1)

    def loss(query: torch.Tensor, core=split_local_attention) -> torch.Tensor:
        return (
            core(query, k, v, keyset, scale=0.3)[0][real[:, None, :, None].expand(-1, 2, -1, 8)]
            .square()
            .sum()
        )

    got = torch.func.grad(loss)(q)
    want = torch.func.grad(lambda query: loss(query, dense_local_attention))(q)
    assert_close(got, want, rtol=0, atol=1e-12)


@pytest.mark.parametrize("strided", ["q", "k", "v"])
@pytest.mark.parametrize("grad", [False, True])
def test_views_strided_in_d_equal_the_reference(strided: str, grad: bool) -> None:
    """PyTorch's CPU flash kernel, called directly, reads d as unit-stride: a q strided in d gave NaN before the
    split core copied such views. Values and gradients against the reference, float32 (the fused path)."""
    (q, k, v, slot_k, slot_v), real = _inputs(grad=False)
    tensors = [t.float() for t in (q, k, v)]
    i = "qkv".index(strided)
    tensors[i] = tensors[i].transpose(-1, -2).contiguous().transpose(-1, -2).requires_grad_(grad)
    keyset = KeySet(Slots(slot_k.float(), slot_v.float(), None, None), real, 7, 1)
    with torch.set_grad_enabled(grad):
        out = split_local_attention(*tensors, keyset, scale=0.3)[0]
    want = dense_local_attention(*tensors, keyset, scale=0.3)[0]
    rows = real[:, None, :, None].expand_as(out)
    assert_close(out[rows], want[rows], rtol=1e-5, atol=1e-5)
    if grad:
        (got_grad,) = torch.autograd.grad(out[rows].square().sum(), tensors[i])
        (want_grad,) = torch.autograd.grad(want[rows].square().sum(), tensors[i])
        assert_close(got_grad, want_grad, rtol=1e-4, atol=1e-5)
