"""Attention cores: one signature, an eager reference, PyTorch SDPA, and query blocks for bf16 on CPU.

    (q (b, h, n, d), k (b, h, m, d), v (b, h, m, d), mask, *, scale, dropout_p, causal)
        -> (out (b, h, n, d), weights (b, h, n, m) | None)

`mask` is a bool tensor broadcastable to (b, h, n, m), True = attend, or None. Callers guarantee
that no row is fully masked (a fully masked softmax row is NaN in every backend): `fill_empty_rows`.
m is k for Linformer (projected keys/values) and n for full attention.

The names a layer chooses among, with the window's cores beside these, and "auto", which picks one per
call: nn/cores.py (the one table and the one resolver).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, get_args

import torch
from torch.nn import functional as F

AttentionBackend = Literal["auto", "sdpa", "blocked", "eager", "split", "native", "flex"]
ATTENTION_BACKENDS: tuple[str, ...] = get_args(AttentionBackend)

AttentionFn = Callable[..., tuple[torch.Tensor, torch.Tensor | None]]


def eager_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, scale: float,
    dropout_p: float = 0.0, causal: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
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
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, scale: float,
    dropout_p: float = 0.0, causal: bool = False,
) -> tuple[torch.Tensor, None]:  # fmt: skip
    """`F.scaled_dot_product_attention` (Flash / memory-efficient kernels where available)."""
    if causal and mask is not None:  # SDPA takes either is_causal or a mask, not both
        n, m = q.shape[-2], k.shape[-2]
        mask = mask & torch.ones(n, m, dtype=torch.bool, device=q.device).tril()
        causal = False
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=causal, scale=scale
    )
    return out, None


def blocked_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, *, scale: float,
    dropout_p: float = 0.0, causal: bool = False,
) -> tuple[torch.Tensor, None]:  # fmt: skip
    """Exact softmax(q kᵀ * scale) v, a block of queries at a time, in the input dtype.

    The fast path for bf16 on CPU: each block's scores (b, h, rows, m) are one bf16 GEMM (fp32
    accumulation, rounded to bf16 on output, as any bf16 matmul), the softmax keeps its max and sum
    in fp32 (PyTorch's CPU kernel accumulates half precision in fp32) and returns bf16, and the
    block is sized to stay in cache. `scale` multiplies k (m rows) rather than the scores (n x m).
    Agrees with `eager_attention` to float64 round-off in float64; in bf16 its error is at most 4x
    the error that rounding q, k, v to bf16 already causes (1.5-3.4x measured; SDPA, which keeps
    fp32 scores, 1.0-1.2x): tests/nn/test_backends.py. The output is a (b, h, n, d) view of a (b, n, h, d) tensor,
    so merging heads afterwards is free.
    """
    b, h, n, _ = q.shape
    m = k.shape[-2]
    kt = (k * scale).transpose(-1, -2).contiguous()  # (b, h, d, m), scaled once
    v = v.contiguous()  # (b, h, m, d): one copy, not one per block
    rows = max(64, _BLOCK_SCORES // max(1, b * h * m))
    blocks = []
    for start in range(0, n, rows):
        stop = min(start + rows, n)
        scores = torch.matmul(q[:, :, start:stop], kt)  # (b, h, rows, m)
        keep = _block_mask(mask, start, stop, m, causal, q.device)
        if keep is not None:
            scores = scores.masked_fill(~keep, float("-inf"))
        weights = scores.softmax(dim=-1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        blocks.append(torch.matmul(weights, v).transpose(1, 2))  # (b, rows, h, d)
    out = blocks[0] if len(blocks) == 1 else torch.cat(blocks, dim=1)  # (b, n, h, d)
    return out.transpose(1, 2), None  # (b, h, n, d)


_BLOCK_SCORES = 1 << 20  # scores per query block (2 MiB in bf16); 2^19..2^23 measured within 5% of each other


def _block_mask(
    mask: torch.Tensor | None, start: int, stop: int, m: int, causal: bool, device: torch.device
) -> torch.Tensor | None:
    """The rows start:stop of `mask` (broadcastable to (b, h, n, m)) and of the causal mask."""
    if mask is not None and mask.shape[-2] != 1:
        mask = mask[..., start:stop, :]
    if not causal:
        return mask
    past = torch.arange(start, stop, device=device)[:, None] >= torch.arange(m, device=device)[None, :]
    return past if mask is None else mask & past


def real_or_all(mask: torch.Tensor | None, b: int, n: int, device: torch.device) -> torch.Tensor:
    """The (b, n) padding mask, True = real token; None (no padding) as every token real. The one home of that
    all-True mask for the layer, the projection and the window cores."""
    return torch.ones(b, n, dtype=torch.bool, device=device) if mask is None else mask


def fill_empty_rows(keep: torch.Tensor) -> torch.Tensor:
    """A row with no real key: `keep` (..., m) bool, True = the key counts, with every key of a row that has
    none counting. Such a row (an all-pad sequence, whose keys and values the callers zero) then gives a
    finite output that nothing reads, where a softmax over no key would be NaN (and NaN gradients)."""
    return keep | ~keep.any(-1, keepdim=True)
