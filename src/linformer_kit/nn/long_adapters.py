"""Long adapters: low-rank weights that only inputs longer than exact_length read.

A student of a 512-token original, extended past it with exact_length = T (nn/exact_rows.py), reads every
input of at most T real tokens exactly, with the 512 student's weights. Its long reading has to be learned
somewhere: in shared weights it moves what short inputs read (on book text at 512 tokens the recommended
long student drifted from the original to 0.887), in E and F alone it lacks the capacity (passkey at 4 096
fell from 62 to 10 of 50; docs/reproduction/long-minilm/). Long adapters add, in each layer, a rank-r update
of the attention's four linears, read on the projected path only (rows of more than T real tokens):

    Q' = Q + s X A_qᵀ B_qᵀ      K' = K + s X A_kᵀ B_kᵀ      V' = V + s X A_vᵀ B_vᵀ      (per token, then
    out' = W_o o + b_o + s o A_oᵀ B_oᵀ                                                   heads split)

with A (r x D), B (D x r) and s = alpha / r (LoRA's scale, alpha = 2r: `LORA_SCALE`). B starts at zero: a
new adapter changes nothing. A row of at most T real tokens never reads them, so its output is the one
without adapters bit for bit (tests/nn/test_long_adapters.py); which rows those are, the layer decides once
a forward by nn/exact_rows.py's router, for its two paths and these updates alike. A longer row pays
8 b n D r more multiply-adds a layer (r = 16, D = 384: 8 D r / 12 D² = 2.8 % of the layer's linears).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from linformer_kit.nn.exact_rows import Route, by_rows

# LoRA's scale s = alpha / r with alpha = 2r, for these adapters and for `linformer distill --tune lora`'s
# (train/distill/trainer.py): one default
LORA_SCALE = 2


class LowRank(nn.Module):
    """x (..., D) -> s · x Aᵀ Bᵀ (..., D): a LoRA update with no base weight; B = 0 at the start."""

    def __init__(self, hidden_size: int, rank: int) -> None:
        super().__init__()
        self.down = nn.Linear(hidden_size, rank, bias=False)  # A
        self.up = nn.Linear(rank, hidden_size, bias=False)  # B
        self.scale = float(LORA_SCALE)  # alpha / r
        nn.init.kaiming_uniform_(self.down.weight, a=math.sqrt(5))  # LoRA's start for A
        nn.init.zeros_(self.up.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.up(self.down(x)) * self.scale


class LongAdapters(nn.Module):
    """The four updates of one attention layer (module docstring): query, key, value, dense."""

    def __init__(self, hidden_size: int, rank: int) -> None:
        super().__init__()
        if not isinstance(rank, int) or isinstance(rank, bool) or rank < 1:
            raise ValueError(f"long_adapter_rank must be an int >= 1, got {rank!r}")
        self.query = LowRank(hidden_size, rank)
        self.key = LowRank(hidden_size, rank)
        self.value = LowRank(hidden_size, rank)
        self.dense = LowRank(hidden_size, rank)

    def output(self, dense: nn.Module, out: torch.Tensor, route: Route) -> torch.Tensor:
        """The output linear `dense` of out (b, n, D), with this update on the rows `route` sends the long way
        only, selected on the whole batch (nn/exact_rows.py, `by_rows`): a shorter row's output is the plain
        linear's, bit for bit."""
        plain = dense(out)  # (b, n, D)
        (merged,) = by_rows(
            route, lambda rows: (plain,), lambda rows: (plain + self.dense(out),), apart=False
        )
        return merged
