"""Sharing modes: the paper's matrix counts, real object identity, one gradient, state-dict entries."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention, SequenceProjection

D, H, N, K, L = 32, 4, 16, 4, 3


class Stack(nn.Module):
    """L layers built the way a model builds them (layerwise: one projection owned by the stack)."""

    def __init__(self, sharing: str, kind: str = "linear") -> None:
        super().__init__()
        shared = SequenceProjection(N, K, kind) if sharing == "layerwise" else None
        self.layers = nn.ModuleList(
            LinformerSelfAttention(D, H, N, K, sharing=sharing, projection=kind, shared_projection=shared)
            for _ in range(L)
        )
        if shared is not None:
            self.projection = shared  # the owner registers it once


def _stack(sharing: str) -> Stack:
    return Stack(sharing)


def _projection_matrices(stack: Stack) -> int:
    """Distinct (k x n) matrices: a (h, k, n) per-head tensor counts h times."""
    tensors = {id(p.weight): p.weight for layer in stack.layers for p in layer.projections()}
    return sum(t.shape[0] if t.dim() == 3 else 1 for t in tensors.values())


@pytest.mark.parametrize(
    ("sharing", "expected"), [("none", 2 * L * H), ("headwise", 2 * L), ("kv", L), ("layerwise", 1)]
)
def test_paper_matrix_count_per_sharing_mode(sharing: str, expected: int) -> None:
    stack = _stack(sharing)
    assert _projection_matrices(stack) == expected
    projection_params = sum(
        p.numel() for name, p in stack.named_parameters() if "projection" in name
    )  # named_parameters() counts a shared tensor once
    assert projection_params == expected * K * N


def test_kv_sharing_uses_one_object_for_keys_and_values() -> None:
    layer = LinformerSelfAttention(D, H, N, K, sharing="kv")
    e, f = layer.projections()
    assert e is f
    assert [name for name in layer.state_dict() if "projection" in name] == ["kv_projection.weight"]


def test_layerwise_projection_is_one_tensor_with_one_gradient_and_one_state_dict_entry() -> None:
    stack = _stack("layerwise")
    weights = {id(p.weight) for layer in stack.layers for p in layer.projections()}
    assert len(weights) == 1
    assert [name for name in stack.state_dict() if "projection" in name] == ["projection.weight"]

    # The gradient is the sum of what each layer contributes. Each layer's part, on the same input: the
    # same layers, each given its own copy of E (the gradient of that copy is that layer's part).
    copies = [copy.deepcopy(stack.projection) for _ in range(L)]
    untied = nn.ModuleList(
        LinformerSelfAttention(D, H, N, K, sharing="layerwise", shared_projection=e) for e in copies
    )
    untied.load_state_dict(stack.layers.state_dict())
    x = torch.randn(2, N, D)
    for layers in (stack.layers, untied):
        out = x
        for layer in layers:
            out = layer(out)
        out.sum().backward()
    parts = [e.weight.grad for e in copies]
    assert_close(stack.projection.weight.grad, sum(parts))
    assert not torch.allclose(parts[0], sum(parts))  # layer 0 alone gives only part of it


def test_layer_without_shared_projection_owns_one_under_layerwise() -> None:
    first = LinformerSelfAttention(D, H, N, K, sharing="layerwise")
    second = LinformerSelfAttention(D, H, N, K, sharing="layerwise", shared_projection=first.kv_projection)
    assert second.projections()[0] is first.kv_projection
    assert not any("projection" in name for name in second.state_dict())


def test_different_k_per_layer() -> None:
    stack = nn.ModuleList(LinformerSelfAttention(D, H, N, k) for k in (8, 4, 2))
    x = torch.randn(1, N, D)
    for layer, k in zip(stack, (8, 4, 2)):
        _, weights = layer.forward_with_weights(x)
        assert weights.shape == (1, H, N, k)


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv"])
def test_fixed_random_projection_is_saved_loaded_and_never_trained(sharing: str) -> None:
    layer = LinformerSelfAttention(D, H, N, K, sharing=sharing, projection="random")
    names = [name for name in layer.state_dict() if "projection" in name]
    assert names
    assert all(name.endswith("weight") for name in names)
    assert not any("projection" in name for name, _ in layer.named_parameters())

    copy = LinformerSelfAttention(D, H, N, K, sharing=sharing, projection="random")
    x = torch.randn(2, N, D)
    assert not torch.allclose(copy(x), layer(x))  # a fresh random E differs...
    copy.load_state_dict(layer.state_dict())
    assert_close(copy(x), layer(x), rtol=0, atol=0)  # ...and the saved one comes back exactly


def test_fixed_random_projection_moves_with_to() -> None:
    layer = LinformerSelfAttention(D, H, N, K, projection="random").to(torch.float64)
    assert all(p.weight.dtype == torch.float64 for p in layer.projections())


def test_state_dict_round_trip_of_a_learned_layer() -> None:
    layer = LinformerSelfAttention(D, H, N, K, sharing="none", projection="conv")
    copy = LinformerSelfAttention(D, H, N, K, sharing="none", projection="conv")
    copy.load_state_dict(layer.state_dict())
    x = torch.randn(2, N, D)
    assert_close(copy(x), layer(x), rtol=0, atol=0)
