"""Bad input raises ValueError with a message that names the value and the limit."""

from __future__ import annotations

import pytest
import torch

from linformer_kit.nn import LinformerSelfAttention, SequenceProjection

D, H, N = 32, 4, 16


def test_too_long_input_names_length_and_limit() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"sequence length 17 exceeds max_seq_len=16"):
        layer(torch.randn(1, 17, D))


def test_wrong_hidden_size() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"hidden_size=32\), got \(1, 8, 31\)"):
        layer(torch.randn(1, 8, 31))


def test_mask_of_wrong_dtype() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"torch.bool .* got dtype torch.int64"):
        layer(torch.randn(2, 8, D), torch.ones(2, 8, dtype=torch.long))


def test_mask_of_wrong_shape() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len\) = \(2, 8\), got \(2, 9\)"):
        layer(torch.randn(2, 8, D), torch.ones(2, 9, dtype=torch.bool))


def test_causal_linformer_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"causal=True is not supported with projected_length=4.*leaks the future"
    ):
        LinformerSelfAttention(D, H, N, 4, causal=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"projected_length": 17}, r"k=17\) must be between 1 and max_seq_len=16"),
        ({"projected_length": 0}, r"k=0\) must be between 1 and max_seq_len=16"),
        ({"sharing": "heads"}, r"sharing must be one of .* got 'heads'"),
        ({"projection": "pool"}, r"projection must be one of .* got 'pool'"),
        ({"projection": "mean", "projected_length": 5}, r"k=5 must divide max_seq_len=16"),
        ({"backend": "flash"}, r"backend must be one of .* got 'flash'"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0"),
        ({"num_heads": 5}, r"hidden_size=32 must be divisible by num_heads=5"),
        ({"projection_order": "fast"}, r"projection_order must be one of .* got 'fast'"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, message: str) -> None:
    args = {"hidden_size": D, "num_heads": H, "max_seq_len": N, "projected_length": 4} | kwargs
    with pytest.raises(ValueError, match=message):
        LinformerSelfAttention(**args)


def test_shared_projection_must_match_the_layer() -> None:
    shared = SequenceProjection(N, 8)
    with pytest.raises(ValueError, match=r"\(max_seq_len, k\)=\(16, 8\), but this layer has \(16, 4\)"):
        LinformerSelfAttention(D, H, N, 4, sharing="layerwise", shared_projection=shared)
    with pytest.raises(ValueError, match=r"only used with sharing='layerwise', got sharing='kv'"):
        LinformerSelfAttention(D, H, N, 8, sharing="kv", shared_projection=shared)
