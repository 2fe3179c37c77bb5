"""torch.export with a dynamic sequence length up to max_seq_len: one graph for every n, n = max included."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim, export
from torch.testing import assert_close

from linformer_kit.nn import PROJECTION_KINDS, SHARING_MODES, LinformerSelfAttention, SequenceProjection

D, H, N, K = 32, 4, 16, 4


class Block(torch.nn.Module):
    def __init__(self, sharing: str, kind: str) -> None:
        super().__init__()
        self.projection = SequenceProjection(N, K, kind) if sharing == "layerwise" else None
        self.attn = LinformerSelfAttention(
            D, H, N, K, sharing=sharing, projection=kind, shared_projection=self.projection
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.attn(x, mask)


CASES = [(sharing, "linear") for sharing in SHARING_MODES] + [
    ("headwise", kind) for kind in PROJECTION_KINDS if kind != "linear"
]


@pytest.mark.parametrize(("sharing", "kind"), CASES)
def test_export_with_a_dynamic_length_up_to_max_seq_len(sharing: str, kind: str) -> None:
    block = Block(sharing, kind).eval()
    seq = Dim("seq", min=2, max=N)  # torch.export treats 0 and 1 as special sizes
    example = (torch.randn(2, 10, D), torch.ones(2, 10, dtype=torch.bool))
    exported = export(block, example, dynamic_shapes=({1: seq}, {1: seq})).module()

    for n in (2, 7, N):  # n = max_seq_len is where a guard on `n != max_seq_len` used to break
        x = torch.randn(2, n, D)
        mask = torch.ones(2, n, dtype=torch.bool)
        mask[1, n // 2 :] = False
        assert_close(exported(x, mask), block(x, mask))


def test_export_without_a_mask_accepts_the_full_length() -> None:
    layer = LinformerSelfAttention(D, H, N, K, sharing="kv").eval()
    exported = export(layer, (torch.randn(1, 5, D),), dynamic_shapes=({1: Dim("seq", min=2, max=N)},))
    x = torch.randn(1, N, D)
    assert_close(exported.module()(x), layer(x))
