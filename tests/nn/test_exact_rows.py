"""exact_length = T: rows of at most T real tokens take exact attention, longer ones the projection (nn/exact_rows.py)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention
from tests.exported import exported
from tests.fixtures.batches import length_mask

D, H, N, K, T = 32, 4, 64, 8, 24
WINDOWS = [(None, 0), (4, 1)]  # the paper's layer, and a window with a global token


def _layers(
    window: int | None, tokens: int, short_inputs: str = "exact"
) -> tuple[LinformerSelfAttention, ...]:
    """The layer with exact_length T, the same weights without it (projected), and as full attention."""
    torch.manual_seed(0)
    options = {"local_window": window, "global_tokens": tokens, "short_inputs": short_inputs}
    layer = LinformerSelfAttention(D, H, N, K, exact_length=T, **options)
    projected = LinformerSelfAttention(D, H, N, K, **options)
    full = LinformerSelfAttention(D, H, N, None)
    projected.load_state_dict(layer.state_dict())
    full.load_state_dict(layer.state_dict(), strict=False)  # query/key/value/dense; E, F unused there
    return tuple(m.double().eval() for m in (layer, projected, full))


@pytest.mark.parametrize(("window", "tokens"), WINDOWS)
@pytest.mark.parametrize("short_inputs", ["exact", "project"])
@pytest.mark.parametrize("backend", ["auto", "eager", "blocked", "sdpa"])
def test_each_row_is_decided_by_its_real_length(window, tokens, short_inputs: str, backend: str) -> None:
    layer, projected, full = _layers(window, tokens, short_inputs)
    layer.backend = projected.backend = backend
    lengths = [N, T + 1, T, 12, K, 3, 0]  # long, just past T, T, between k and T, k, short, all padding
    x = torch.randn(len(lengths), N, D, dtype=torch.float64)
    mask = length_mask(lengths, N)
    x[:-1][~mask[:-1]] = float("nan")  # pad content must not matter
    batched = layer(x, mask)
    assert torch.isfinite(batched[mask]).all()
    for i, length in enumerate(lengths[:-1]):
        alone = layer(x[i : i + 1, :length])
        assert_close(batched[i, :length], alone[0], rtol=1e-12, atol=1e-12)  # padding changes nothing
        want = (full if length <= T else projected)(x[i : i + 1, :length])
        assert_close(alone, want, rtol=1e-12, atol=1e-12)
    assert (layer(x[:1]) - full(x[:1])).abs().max() > 1e-3  # past T the projection, not full attention


@pytest.mark.parametrize(("window", "tokens"), WINDOWS)
def test_the_one_graph_form_equals_the_eager_paths(window, tokens) -> None:
    # a symbolic n (dynamic torch.compile) projects rows past T through the slots' one-graph form
    layer, _, _ = _layers(window, tokens)
    for lengths, n in (([N, 30, T, 5], N), ([N, 40], N), ([T, 10], T + 4), ([20, 3], 20)):
        x = torch.randn(len(lengths), n, D, dtype=torch.float64)
        mask = length_mask(lengths, n)
        one_graph, _ = layer._attend(x, mask, need_weights=False, one_graph=True)
        assert_close(one_graph[mask], layer(x, mask)[mask], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("window", "tokens"), WINDOWS)
def test_a_mask_of_real_tokens_only_gives_what_no_mask_gives(window, tokens) -> None:
    # eager drops such a mask (nn/plan.py: the layer's own plan): the same values and gradients
    layer, projected, _ = _layers(window, tokens)
    for model, n in ((layer, N), (layer, 16), (projected, N)):
        x = torch.randn(2, n, D, dtype=torch.float64, requires_grad=True)
        masked = model(x, torch.ones(2, n, dtype=torch.bool))
        (grad_masked,) = torch.autograd.grad(masked.square().sum(), x)
        plain = model(x)
        (grad_plain,) = torch.autograd.grad(plain.square().sum(), x)
        assert_close(masked, plain, rtol=1e-12, atol=1e-12)
        assert_close(grad_masked, grad_plain, rtol=1e-12, atol=1e-12)


def test_weights_of_a_mixed_batch_are_refused_and_of_a_short_one_are_exact() -> None:
    layer, _, _ = _layers(None, 0)
    x = torch.randn(2, N, D, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"mixing rows of at most exact_length=24 real tokens"):
        layer.forward_with_weights(x, length_mask([N, 5], N))
    _, weights = layer.forward_with_weights(x[:, :T])
    assert weights.shape == (2, H, T, T)  # (b, h, n, n): exact attention


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"exact_length": K - 1}, ValueError, r"exact_length=7 must be at least projected_length k=8"),
        ({"exact_length": N}, ValueError, r"exact_length=64 must be below max_seq_len=64"),
        ({"exact_length": 0}, ValueError, r"exact_length must be >= 1 \(or None\), got 0"),
        ({"exact_length": 24.0}, TypeError, r"exact_length must be an int, got 24.0"),
    ],
)
def test_bad_exact_lengths_are_refused(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        LinformerSelfAttention(D, H, N, K, **kwargs)


def test_export_is_refused_with_the_way_out() -> None:
    layer = _layers(4, 1)[0].float().eval()
    with pytest.raises(ValueError, match=r"exact_length=24 has no exported form .* exact_length=None"):
        exported(layer, {"x": torch.randn(2, 40, D), "key_padding_mask": length_mask([40, 9], 40)}, N)


@pytest.mark.parametrize(("window", "tokens"), WINDOWS)
def test_the_sync_free_form_equals_the_host_branch(window, tokens, monkeypatch: pytest.MonkeyPatch) -> None:
    """While tracing (and on a GPU) no row is chosen on the host: every row projected, every row's first T real
    tokens exact, selected by row (nn/exact_rows.py, `_select_exact_rows`). The same values at every real
    token."""
    from linformer_kit.nn import exact_rows

    layer, _, _ = _layers(window, tokens)
    lengths = [N, T + 1, T, 12, K, 3, 0]
    x = torch.randn(len(lengths), N, D, dtype=torch.float64)
    mask = length_mask(lengths, N)
    mask[3] = mask[3].flip(0)  # a left-padded row: its real tokens are gathered from the end
    x[~mask] = float("nan")
    host = layer(x, mask)
    monkeypatch.setattr(exact_rows, "tracing", lambda: True)
    calls: list[int] = []
    selected = exact_rows._select_exact_rows
    monkeypatch.setattr(exact_rows, "_select_exact_rows", lambda *a: calls.append(1) or selected(*a))
    sync_free = layer(x, mask)
    assert calls == [1]
    assert_close(sync_free[mask], host[mask], rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="attention weights with exact_length=24 and a padding mask"):
        layer.forward_with_weights(x, mask)
