"""The checks of `LinformerSelfAttention` (nn/attention.py): its arguments, once, and each call's input.

Each names the value and its limit: ValueError for an inconsistent value, TypeError for one of the wrong
type (a float k, a string for shared_projection).
"""

from __future__ import annotations

import torch

from linformer_kit.nn.backends import ATTENTION_BACKENDS
from linformer_kit.nn.options import (
    LinformerOptions,
    as_size,
    check_choice,
    check_exact_length,
    check_projected_length,
)
from linformer_kit.nn.projection import SequenceProjection


def check_input(x: torch.Tensor, hidden_size: int, max_seq_len: int) -> torch.Size:
    """x (b, n, D) floating point with n <= max_seq_len -> its shape."""
    if x.dim() != 3 or x.shape[-1] != hidden_size:
        raise ValueError(
            f"expected input of shape (batch, seq_len, hidden_size={hidden_size}), got {tuple(x.shape)}"
        )
    if not x.is_floating_point():
        raise ValueError(f"expected a floating-point input (hidden states), got dtype {x.dtype}")
    if x.shape[1] > max_seq_len:
        raise ValueError(
            f"sequence length {x.shape[1]} exceeds max_seq_len={max_seq_len}: "
            "truncate the input or build the layer with a larger max_seq_len"
        )
    return x.shape


def check_mask(mask: torch.Tensor | None, b: int, n: int) -> torch.Tensor | None:
    """A key padding mask (b, n) bool, True = real token, or None."""
    if mask is None:
        return None
    if mask.dtype != torch.bool:
        raise ValueError(
            f"key_padding_mask must be a torch.bool tensor (True = real token), got dtype {mask.dtype}"
        )
    if tuple(mask.shape) != (b, n):
        raise ValueError(
            f"key_padding_mask must have shape (batch, seq_len) = {(b, n)}, got {tuple(mask.shape)}"
        )
    return mask


def check_layer_arguments(
    hidden_size: int,
    num_heads: int,
    max_seq_len: int,
    projected_length: int | None,
    options: LinformerOptions,
    dropout: float,
    bias: bool,
    backend: str,
    causal: bool,
    shared_projection: SequenceProjection | None,
    long_adapter_rank: int | None,
) -> None:
    """The layer's arguments beside its Linformer options (which `LinformerOptions` checked)."""
    for name, value in (("hidden_size", hidden_size), ("num_heads", num_heads), ("max_seq_len", max_seq_len)):
        if as_size(name, value) < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if hidden_size % num_heads:
        raise ValueError(f"hidden_size={hidden_size} must be divisible by num_heads={num_heads}")
    if projected_length is not None:
        check_projected_length(projected_length, max_seq_len, options.projection)
    check_choice("backend", backend, ATTENTION_BACKENDS)
    if options.global_tokens > max_seq_len:
        raise ValueError(f"global_tokens={options.global_tokens} must be at most max_seq_len={max_seq_len}")
    check_exact_length(options.exact_length, [projected_length], max_seq_len)
    sharing = options.sharing
    if not 0.0 <= dropout < 1.0:  # also refuses NaN
        raise ValueError(f"dropout must be in [0, 1), got {dropout}")
    for name, value in (("bias", bias), ("causal", causal)):
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be True or False, got {value!r}")
    if causal and projected_length is not None:
        raise ValueError(
            f"causal=True is not supported with projected_length={projected_length}: the projection E mixes all "
            "positions, so a causal mask after it leaks the future. Use projected_length=None for causal attention."
        )
    if shared_projection is not None and not isinstance(shared_projection, SequenceProjection):
        raise TypeError(
            f"shared_projection must be a SequenceProjection (or None), got {shared_projection!r} "
            f"of type {type(shared_projection).__name__}"
        )
    if shared_projection is not None:
        if sharing != "layerwise":
            raise ValueError(
                f"shared_projection is only used with sharing='layerwise', got sharing={sharing!r}"
            )
        if (shared_projection.max_seq_len, shared_projection.projected_length) != (
            max_seq_len,
            projected_length,
        ):
            raise ValueError(
                f"shared_projection has (max_seq_len, k)=({shared_projection.max_seq_len}, "
                f"{shared_projection.projected_length}), but this layer has ({max_seq_len}, {projected_length})"
            )
        if shared_projection.num_heads != 1:
            raise ValueError(
                f"a layerwise shared_projection must have num_heads=1, got {shared_projection.num_heads}"
            )
    if long_adapter_rank is not None and (options.exact_length is None or projected_length is None):
        raise ValueError(
            f"long_adapter_rank={long_adapter_rank}: long adapters are read by rows of more than exact_length real "
            f"tokens, and this layer has exact_length={options.exact_length}, projected_length={projected_length}: "
            "give both"
        )
