"""Mixed precision (softmax in fp32) and torch.compile."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention

D, H, N = 32, 4, 16


@pytest.mark.parametrize("k", [4, None])
@pytest.mark.parametrize("backend", ["auto", "sdpa", "blocked", "eager"])
def test_bf16_autocast_is_close_to_fp32(k: int | None, backend: str) -> None:
    layer = LinformerSelfAttention(D, H, N, k, backend=backend)
    x = torch.randn(2, N, D)
    mask = torch.ones(2, N, dtype=torch.bool)
    mask[1, 9:] = False
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = layer(x, mask)
    assert low.dtype == torch.bfloat16
    assert_close(low.float(), layer(x, mask), rtol=5e-2, atol=5e-2)


def test_softmax_runs_in_fp32_under_autocast() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        _, weights = layer.forward_with_weights(torch.randn(1, N, D))
    assert weights.dtype == torch.float32


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_cuda_autocast_is_close_to_fp32(dtype: torch.dtype) -> None:
    layer = LinformerSelfAttention(D, H, N, 4).cuda()
    x = torch.randn(2, N, D, device="cuda")
    with torch.autocast("cuda", dtype=dtype):
        low = layer(x)
    assert_close(low.float(), layer(x), rtol=5e-2, atol=5e-2)


@pytest.mark.slow
def test_compiled_layer_matches_eager() -> None:
    layer = LinformerSelfAttention(D, H, N, 4, sharing="headwise").eval()
    x = torch.randn(2, N, D)
    mask = torch.ones(2, N, dtype=torch.bool)
    mask[0, 10:] = False
    compiled = torch.compile(layer, fullgraph=True)
    assert_close(compiled(x, mask), layer(x, mask), rtol=1e-5, atol=1e-5)
