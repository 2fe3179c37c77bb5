"""The blocked core (bf16 on CPU) against the eager reference; "auto" at an empty batch (what it picks: test_cores.py)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import backends
from linformer_kit.nn.backends import blocked_attention, eager_attention

B, H, N, D = 2, 3, 37, 8


def _qkv(m: int, dtype: torch.dtype = torch.float64, scale: float = 1.0) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(m)
    q = torch.randn(B, H, N, D, generator=g, dtype=torch.float64) * scale
    k = torch.randn(B, H, m, D, generator=g, dtype=torch.float64)
    v = torch.randn(B, H, m, D, generator=g, dtype=torch.float64)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def _masks(m: int) -> dict[str, torch.Tensor | None]:
    """Every mask shape the layer passes: none, slots (b,1,1,m), per-head slots (b,h,1,m), full (b,1,n,m)."""
    g = torch.Generator().manual_seed(1)
    slots = torch.rand(B, 1, 1, m, generator=g) > 0.3
    per_head = torch.rand(B, H, 1, m, generator=g) > 0.3
    full = torch.rand(B, 1, N, m, generator=g) > 0.3
    for mask in (slots, per_head, full):
        mask[..., 0] = True  # no fully masked row (the core's contract)
    return {"none": None, "slots": slots, "per-head": per_head, "full": full}


@pytest.fixture
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of 64 query rows (the minimum) per (b, h): N = 37 fits one, so also force ragged blocks."""
    monkeypatch.setattr(backends, "_BLOCK_SCORES", 1)


@pytest.mark.parametrize("mask_kind", ["none", "slots", "per-head", "full"])
@pytest.mark.parametrize(("m", "causal"), [(5, False), (N, False), (N, True)])  # causal: full attention only
def test_blocked_equals_eager_in_float64(mask_kind: str, m: int, causal: bool) -> None:
    q, k, v = _qkv(m)
    mask = _masks(m)[mask_kind]
    want, _ = eager_attention(q, k, v, mask, scale=0.3, causal=causal)
    got, _ = blocked_attention(q, k, v, mask, scale=0.3, causal=causal)
    assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mask_kind", ["slots", "full"])
def test_query_blocks_change_nothing(mask_kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    q, k, v = _qkv(N)
    q = torch.cat([q] * 5, dim=2)  # n = 185: blocks of 64 rows, the last one ragged
    mask = _masks(N)[mask_kind]
    if mask is not None and mask.shape[-2] != 1:
        mask = torch.cat([mask] * 5, dim=2)
    one_block, _ = blocked_attention(q, k, v, mask, scale=0.3, causal=False)
    monkeypatch.setattr(backends, "_BLOCK_SCORES", 1)
    blocks, _ = blocked_attention(q, k, v, mask, scale=0.3, causal=False)
    assert_close(blocks, one_block, rtol=1e-12, atol=1e-12)
    causal_q = q[:, :, :N]  # causal with blocks: each block's rows see only their past
    want, _ = eager_attention(causal_q, k, v, None, scale=0.3, causal=True)
    got, _ = blocked_attention(causal_q, k, v, None, scale=0.3, causal=True)
    assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_blocked_gradients_equal_eager_in_float64(small_blocks: None) -> None:
    q, k, v = (t.requires_grad_() for t in _qkv(5))
    mask = _masks(5)["per-head"]
    grads = []
    for core in (eager_attention, blocked_attention):
        out, _ = core(q, k, v, mask, scale=0.3)
        grads.append(torch.autograd.grad((out * torch.linspace(-1, 1, D, dtype=out.dtype)).sum(), (q, k, v)))
    for got, want in zip(grads[1], grads[0], strict=True):
        assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("logit_scale", [1.0, 3.0])
@pytest.mark.parametrize("m", [16, 128])
def test_blocked_bf16_error_is_within_four_times_the_input_rounding(logit_scale: float, m: int) -> None:
    """The stated bound: |blocked_bf16 - exact| <= 4 x |exact(bf16-rounded q, k, v) - exact|, max over outputs.

    The scores are rounded to bf16 once (a bf16 GEMM's output) before the fp32-statistics softmax;
    that measures at 1.5-3.4x the error that rounding the inputs alone causes (torch's bf16 SDPA,
    which keeps fp32 scores: 1.0-1.2x). backend="sdpa" is the choice for SDPA's accuracy.
    """
    q, k, v = _qkv(m, scale=logit_scale)
    exact, _ = eager_attention(q, k, v, None, scale=D**-0.5)
    rounded = [t.bfloat16() for t in (q, k, v)]
    input_error = (
        (eager_attention(*(t.double() for t in rounded), None, scale=D**-0.5)[0] - exact).abs().max()
    )
    got, _ = blocked_attention(*rounded, None, scale=D**-0.5)
    assert got.dtype == torch.bfloat16
    error = (got.double() - exact).abs().max()
    assert error <= 4 * input_error, f"bf16 blocked error {error:.4f} vs input rounding {input_error:.4f}"


def test_dropout_in_one_block_matches_eager_with_the_same_seed() -> None:
    q, k, v = _qkv(5)
    outs = []
    for core in (eager_attention, blocked_attention):
        torch.manual_seed(0)
        outs.append(core(q, k, v, None, scale=0.3, dropout_p=0.5)[0])
    assert_close(outs[1], outs[0], rtol=1e-12, atol=1e-12)
    assert not torch.allclose(outs[0], eager_attention(q, k, v, None, scale=0.3)[0])  # dropout did act


@pytest.mark.parametrize("shape", [(0, 20, 32), (2, 0, 32)])
def test_auto_handles_an_empty_batch_or_sequence(shape: tuple[int, ...]) -> None:
    from linformer_kit.nn import LinformerSelfAttention

    layer = LinformerSelfAttention(32, 2, 64, 16).bfloat16()
    assert layer(torch.randn(*shape, dtype=torch.bfloat16)).shape == shape
