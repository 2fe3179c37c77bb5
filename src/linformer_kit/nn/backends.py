"""Attention cores: one signature, an eager reference and PyTorch SDPA.

    (q (b, h, n, d), k (b, h, m, d), v (b, h, m, d), mask, *, scale, dropout_p, causal)
        -> (out (b, h, n, d), weights (b, h, n, m) | None)

`mask` is a bool tensor broadcastable to (b, h, n, m), True = attend, or None. Callers guarantee
that no row is fully masked (a fully masked softmax row is NaN in every backend).
m is k for Linformer (projected keys/values) and n for full attention.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

import torch
from torch.nn import functional as F

AttentionBackend = Literal["sdpa", "eager"]
ATTENTION_BACKENDS: tuple[str, ...] = get_args(AttentionBackend)

AttentionFn = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


def eager_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    scale: float,
    dropout_p: float = 0.0,
    causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Explicit softmax(q kᵀ * scale) v with scores and softmax in fp32 or wider; returns the weights too."""
    # Half precision is promoted to fp32 for the scores and softmax, even under autocast (which would
    # otherwise run the matmul in bf16/fp16); fp32 and fp64 keep their precision.
    dtype = torch.promote_types(q.dtype, torch.float32)
    with torch.autocast(device_type=q.device.type, enabled=False):
        scores = torch.matmul(q.to(dtype), k.to(dtype).transpose(-1, -2)) * scale  # (b, h, n, m)
    if causal:
        n, m = scores.shape[-2:]
        future = torch.ones(n, m, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    out = torch.matmul(weights.to(v.dtype), v)  # (b, h, n, d)
    return out, weights


def sdpa_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    scale: float,
    dropout_p: float = 0.0,
    causal: bool = False,
) -> tuple[torch.Tensor, None]:
    """`F.scaled_dot_product_attention` (Flash / memory-efficient kernels where available)."""
    if causal and mask is not None:  # SDPA takes either is_causal or a mask, not both
        n, m = q.shape[-2], k.shape[-2]
        mask = mask & torch.ones(n, m, dtype=torch.bool, device=q.device).tril()
        causal = False
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal, scale=scale
    )
    return out, None


BACKENDS: dict[str, AttentionFn] = {"eager": eager_attention, "sdpa": sdpa_attention}
