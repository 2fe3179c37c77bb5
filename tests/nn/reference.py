"""An independent, plainly written reference for the attention layer's math (explicit softmax)."""

from __future__ import annotations

import torch

from linformer_kit.nn import LinformerSelfAttention


def reference_attention(
    layer: LinformerSelfAttention,
    x: torch.Tensor,
    e: torch.Tensor | None = None,
    f: torch.Tensor | None = None,
) -> torch.Tensor:
    """softmax(Q (E K)ᵀ / sqrt(d)) (F V) per head, then the output linear, for one unpadded batch.

    e, f: (k, n) matrices shared by all heads, or None for full attention.
    """
    b, n, _ = x.shape
    h, d = layer.num_heads, layer.head_dim
    q = layer.query(x).view(b, n, h, d).transpose(1, 2)
    k = layer.key(x).view(b, n, h, d).transpose(1, 2)
    v = layer.value(x).view(b, n, h, d).transpose(1, 2)
    if e is not None:
        k = torch.einsum("kn,bhnd->bhkd", e, k)
        v = torch.einsum("kn,bhnd->bhkd", f, v)
    scores = torch.einsum("bhnd,bhmd->bhnm", q, k) / d**0.5
    probs = torch.exp(scores - scores.amax(-1, keepdim=True))
    probs = probs / probs.sum(-1, keepdim=True)
    out = torch.einsum("bhnm,bhmd->bhnd", probs, v).transpose(1, 2).reshape(b, n, h * d)
    return layer.dense(out)
