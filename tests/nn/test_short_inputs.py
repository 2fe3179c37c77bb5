"""short_inputs="exact": n <= k takes exact softmax attention, n > k is projected (nn/short_inputs.py docstring)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention
from linformer_kit.nn.short_inputs import real_token_positions
from tests.fixtures.batches import length_mask

D, H, N, K = 32, 4, 64, 16


def _pair(sharing: str, projection: str = "linear") -> tuple[LinformerSelfAttention, LinformerSelfAttention]:
    """A Linformer layer with short_inputs="exact" and the full-attention layer with its weights."""
    torch.manual_seed(0)
    layer = LinformerSelfAttention(D, H, N, K, sharing=sharing, projection=projection, short_inputs="exact")
    full = LinformerSelfAttention(D, H, N, None)
    full.load_state_dict(layer.state_dict(), strict=False)  # query/key/value/dense; E, F unused there
    return layer.double().eval(), full.double().eval()


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv", "layerwise"])
@pytest.mark.parametrize("backend", ["sdpa", "blocked", "eager"])
def test_inputs_up_to_k_tokens_get_exact_attention(sharing: str, backend: str) -> None:
    layer, full = _pair(sharing)
    layer.backend = full.backend = backend
    x = torch.randn(3, K, D, dtype=torch.float64)  # n = k: the longest input still attended exactly
    mask = length_mask([K, 5, 1], K)  # (b, n), True = real token
    assert_close(layer(x, mask), full(x, mask))
    assert_close(layer(x[:, :7]), full(x[:, :7]))
    _, weights = layer.forward_with_weights(x[:, :7])
    assert weights.shape == (3, H, 7, 7)  # (b, h, n, n): no projected slots


@pytest.mark.parametrize("projection", ["linear", "mean", "conv"])
def test_inputs_longer_than_k_are_projected_as_always(projection: str) -> None:
    layer, _ = _pair("headwise", projection)
    paper = LinformerSelfAttention(D, H, N, K, projection=projection).double().eval()
    paper.load_state_dict(layer.state_dict())
    x = torch.randn(2, K + 1, D, dtype=torch.float64)
    mask = length_mask([K + 1, K + 1], K + 1)
    assert_close(layer(x, mask), paper(x, mask))
    assert_close(layer(x), paper(x))
    assert not torch.allclose(layer(x[:, :K]), paper(x[:, :K]))  # below it the two differ


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv", "layerwise"])
@pytest.mark.parametrize("projection", ["linear", "max"])
@pytest.mark.parametrize("backend", ["sdpa", "blocked", "eager"])
def test_each_sequence_is_decided_by_its_real_length(sharing: str, projection: str, backend: str) -> None:
    # a short sentence padded into a batch with long ones gets what it gets alone (exact attention),
    # and the long ones what they get alone (projected): the padding guarantee holds with "exact" on
    layer, full = _pair(sharing, projection)
    layer.backend = backend
    lengths = [N, 5, K, K + 1, 1, 0]  # long, short, exactly k, just past k, one token, all padding
    x = torch.randn(len(lengths), N, D, dtype=torch.float64)
    x[1, 5:] = float("nan")  # pad content must not matter
    mask = length_mask(lengths, N)
    batched = layer(x, mask)
    assert torch.isfinite(batched[mask]).all()
    assert torch.isfinite(batched[-1]).all()  # the all-padding row: finite, not NaN
    for i, length in enumerate(lengths[:-1]):
        alone = layer(x[i : i + 1, :length])
        assert_close(batched[i, :length], alone[0])
        if length <= K:
            assert_close(alone, full(x[i : i + 1, :length]))  # and alone it is exact attention


def test_gradients_flow_through_the_exact_path() -> None:
    layer, full = _pair("headwise")
    x = torch.randn(2, 9, D, dtype=torch.float64)
    layer(x).square().sum().backward()
    full(x).square().sum().backward()
    assert_close(layer.query.weight.grad, full.query.weight.grad)
    assert layer.key_projection.weight.grad is None  # E is not used below k


def test_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"short_inputs must be one of \('project', 'exact'\), got 'full'"):
        LinformerSelfAttention(D, H, N, K, short_inputs="full")


@pytest.mark.parametrize("n", [3, 7, 20])
@pytest.mark.parametrize("slots", [1, 4, 7, 30])
def test_real_token_positions_equal_a_stable_sort(n: int, slots: int) -> None:
    # the counted index (ONNX has no stable sort) against the stable argsort it replaced
    mask = torch.rand(6, n) < 0.6
    mask[0], mask[1] = True, False  # a full row and an all-padding row
    got = real_token_positions(mask, slots)  # (b, slots)
    real_first = torch.argsort((~mask).to(torch.int8), dim=-1, stable=True)  # (b, n)
    for row in range(mask.shape[0]):
        filled = min(int(mask[row].sum()), slots)
        assert torch.equal(got[row, :filled], real_first[row, :filled])
        assert (got[row, filled:] == n - 1).all()  # past the last real token: a valid index, masked


@pytest.mark.parametrize(
    ("sharing", "projection"),
    [(sharing, "linear") for sharing in ("none", "headwise", "kv", "layerwise")]
    + [("headwise", kind) for kind in ("mean", "max", "conv", "random")],
)
def test_one_graph_form_equals_the_exact_path(sharing: str, projection: str) -> None:
    # what torch.export and ONNX run (a symbolic n): project, and give each row of at most k real
    # tokens its own tokens in the k slots; in eager, n <= k takes exact attention outright
    layer, full = _pair(sharing, projection)
    for n in (3, K, K + 1, N):
        lengths = [n, max(1, n // 2), min(n, 3), 1, 0]  # full, half, short, one token, all padding
        x = torch.randn(len(lengths), n, D, dtype=torch.float64)
        mask = length_mask(lengths, n)
        x[:-1][~mask[:-1]] = float(
            "nan"
        )  # pad content must not matter (the all-padding row's queries are real)
        one_graph, _ = layer._attend(x, mask, need_weights=False, one_graph=True)
        assert_close(one_graph[mask], layer(x, mask)[mask], rtol=1e-12, atol=1e-12)
        no_token = layer.dense.bias.expand(n, D)  # a row without a real token attends to zero values
        assert_close(one_graph[-1], no_token, rtol=1e-12, atol=1e-12)
        assert_close(layer(x, mask)[-1], no_token, rtol=1e-12, atol=1e-12)
        if n <= K:
            assert_close(one_graph[mask], full(x, mask)[mask], rtol=1e-12, atol=1e-12)
        unpadded, _ = layer._attend(x[:1], None, need_weights=False, one_graph=True)
        assert_close(unpadded, layer(x[:1]), rtol=1e-12, atol=1e-12)
