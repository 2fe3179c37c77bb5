"""Long adapters (nn/long_adapters.py): weights that only rows of more than exact_length real tokens read.

The guarantee: a row of at most T real tokens gets, bit for bit, what the layer without adapters gives it,
on the host-branch path (a CPU in eager mode) and on the sync-free one (tracing, a GPU); a longer row reads
them; they start at zero; the fast projection order applies them as the paper order does.
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention, exact_rows
from tests.fixtures.batches import length_mask

D, H, N, K, T, R = 32, 4, 64, 8, 24, 4


def _pair(window: int | None = 4, **options) -> tuple[LinformerSelfAttention, LinformerSelfAttention]:
    """The layer with long adapters (their B random: a trained adapter) and the same weights without them."""
    torch.manual_seed(0)
    settings = {
        "local_window": window,
        "global_tokens": 1 if window is not None else 0,
        "exact_length": T,
        **options,
    }
    adapted = LinformerSelfAttention(D, H, N, K, long_adapter_rank=R, **settings).double().eval()
    plain = LinformerSelfAttention(D, H, N, K, **settings).double().eval()
    plain.load_state_dict(adapted.state_dict(), strict=False)  # every weight but the adapters'
    with torch.no_grad():
        for parameter in adapted.long_adapters.parameters():
            parameter.normal_(std=0.3)
    return adapted, plain


@pytest.mark.parametrize("window", [4, None])
@pytest.mark.parametrize("sync_free", [False, True])
def test_a_row_up_to_exact_length_is_bit_for_bit_the_layer_without_adapters(
    window: int | None, sync_free: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapted, plain = _pair(window)
    if sync_free:  # the path of a compiled model and of a GPU: no row chosen on the host
        monkeypatch.setattr(exact_rows, "tracing", lambda: True)
    lengths = [N, T + 1, T, 12, 3]
    x = torch.randn(len(lengths), N, D, dtype=torch.float64)
    mask = length_mask(lengths, N)
    with torch.no_grad():
        a, p = adapted(x, mask), plain(x, mask)
    for row, length in enumerate(lengths):
        if length <= T:
            assert torch.equal(a[row, :length], p[row, :length]), (row, length)
        else:
            assert (a[row, :length] - p[row, :length]).abs().max() > 1e-3, (row, length)
    with torch.no_grad():  # and alone, unpadded: n <= T never reaches them
        assert torch.equal(adapted(x[3:4, :12]), plain(x[3:4, :12]))


def test_new_adapters_change_nothing() -> None:
    torch.manual_seed(0)
    adapted = LinformerSelfAttention(D, H, N, K, local_window=4, exact_length=T, long_adapter_rank=R).double()
    plain = LinformerSelfAttention(D, H, N, K, local_window=4, exact_length=T).double()
    plain.load_state_dict(adapted.state_dict(), strict=False)
    x = torch.randn(2, N, D, dtype=torch.float64)
    assert torch.equal(adapted(x), plain(x))


def test_the_fast_order_applies_them_as_the_paper_order() -> None:
    """No window: keys and values are projected before the linears (fast order); the update of K is linear
    without a bias, so E (m X) then the update equals the update of every token, then E."""
    fast, _ = _pair(None)
    paper, _ = _pair(None, projection_order="paper")
    assert fast.uses_fast_order
    assert not paper.uses_fast_order
    x = torch.randn(2, N, D, dtype=torch.float64)
    mask = length_mask([N, 40], N)
    with torch.no_grad():
        assert_close(fast(x, mask)[mask], paper(x, mask)[mask], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"long_adapter_rank": 4},
            "long_adapter_rank=4: long adapters are read by rows of more than exact_length",
        ),
        ({"long_adapter_rank": 0, "exact_length": T}, "long_adapter_rank must be an int >= 1, got 0"),
    ],
)
def test_bad_long_adapters_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LinformerSelfAttention(D, H, N, K, **kwargs)
