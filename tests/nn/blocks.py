"""A one-layer module around `LinformerSelfAttention` for tests that wrap, hook or adapt its linears."""

from __future__ import annotations

import torch
from torch import nn

from linformer_kit.nn import LinformerSelfAttention, SequenceProjection

D, H, N, K = 32, 4, 12, 5


class Block(nn.Module):
    """One attention layer; under layerwise sharing it owns the shared projection, as an encoder does."""

    def __init__(self, sharing: str, order: str) -> None:
        super().__init__()
        shared = SequenceProjection(N, K) if sharing == "layerwise" else None
        self.projection = shared
        self.attn = LinformerSelfAttention(
            D, H, N, K, sharing=sharing, projection_order=order, shared_projection=shared
        )
        with torch.no_grad():  # large biases: a wrong bias term cannot hide in the tolerance
            self.attn.key.bias.fill_(3.0)
            self.attn.value.bias.fill_(-2.0)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.attn(x, mask)


def padded_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    """x (3, N, D) float64 and a mask: row 0 full, row 1 seven tokens long, row 2 two."""
    x = torch.randn(3, N, D, dtype=torch.float64)
    mask = torch.ones(3, N, dtype=torch.bool)
    mask[1, 7:] = False
    mask[2, 2:] = False
    return x, mask
