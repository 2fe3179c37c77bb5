"""A CPU inference batch read in groups of bounded tokens (models/token_groups.py): every real token's states are
what the batch read whole gives, each group as narrow as its rows, left padding included; elsewhere untaken."""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.models import VOCAB_SIZE, tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerModel, token_groups

N, T = 32, 12
CONFIGS = {
    "projected only": {},
    "exact_length": {"exact_length": T},
    "long layers": {"exact_length": T, "long_layers": True},
    "window": {"exact_length": T, "local_window": 4, "global_tokens": 1},
    "shared kv, window, no T": {"sharing": "kv", "local_window": 4},
}


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of 32, 20, 17, 12, 5 real tokens; the 5 and a 16 padded on the left."""
    torch.manual_seed(1)
    ids = torch.randint(5, VOCAB_SIZE, (6, N))
    mask = torch.zeros(6, N, dtype=torch.long)
    for row, length in enumerate((N, 20, 17, T)):
        mask[row, :length] = 1
    mask[4, N - 5 :] = 1
    mask[5, N - 16 :] = 1
    return ids, mask


def _whole(model, monkeypatch: pytest.MonkeyPatch, **inputs):
    """The batch read whole (grouping off): the reference."""
    with monkeypatch.context() as patch:
        patch.setattr("linformer_kit.models.modeling_linformer.read_grouped", lambda *a: False)
        return model(**inputs)


def _widths(model: LinformerModel, monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """(rows, width) of each encoder call, in order."""
    calls: list[tuple[int, int]] = []
    forward = model.encoder.forward
    monkeypatch.setattr(
        model.encoder, "forward", lambda x, *a: calls.append(tuple(x.shape[:2])) or forward(x, *a)
    )
    return calls


@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_real_tokens_get_what_the_whole_batch_gives(overrides: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(max_position_embeddings=N + 2, **overrides)).double().eval()
    monkeypatch.setattr(token_groups, "GROUP_TOKENS", 40)
    ids, mask = _batch()
    calls = _widths(model, monkeypatch)
    with torch.no_grad():
        got = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        grouped = list(calls)
        want = _whole(model, monkeypatch, input_ids=ids, attention_mask=mask, output_hidden_states=True)
    real = mask.bool()
    assert_close(got.last_hidden_state[real], want.last_hidden_state[real], rtol=1e-10, atol=1e-10)
    assert len(got.hidden_states) == len(want.hidden_states)
    for a, b in zip(got.hidden_states, want.hidden_states, strict=True):
        assert_close(a[real], b[real], rtol=1e-10, atol=1e-10)
    assert sum(rows for rows, _ in grouped) == 6
    assert all(rows * width <= 40 or rows == 1 for rows, width in grouped)
    if "exact_length" in overrides:  # short rows narrow to their real tokens, the left-padded 5 among them
        assert (2, T) in grouped or (1, T) in grouped
        assert (1, 5) in grouped or any(w == T for _, w in grouped)
    else:  # projected: trailing pads cut, a left-padded row keeps its width
        assert sorted(grouped, key=lambda c: -c[1])[:2] == [(1, N), (1, N)]


def test_every_long_row_unpadded_splits_at_its_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """sentence-transformers' batch of long texts of one length: groups of GROUP_TOKENS // n rows."""
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(exact_length=T)).double().eval()
    monkeypatch.setattr(token_groups, "GROUP_TOKENS", 64)
    ids = torch.randint(5, VOCAB_SIZE, (5, N))
    calls = _widths(model, monkeypatch)
    with torch.no_grad():
        got = model(input_ids=ids).last_hidden_state
        want = _whole(model, monkeypatch, input_ids=ids).last_hidden_state
    assert_close(got, want, rtol=1e-10, atol=1e-10)
    assert calls == [(2, N), (2, N), (1, N), (5, N)]


def test_untaken_with_gradients_attention_weights_one_row_or_a_small_batch(monkeypatch) -> None:
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(exact_length=T)).eval()
    monkeypatch.setattr(token_groups, "GROUP_TOKENS", 40)
    ids, mask = _batch()
    calls = _widths(model, monkeypatch)
    model(
        input_ids=ids, attention_mask=mask
    )  # gradients on: short and long rows apart (row_groups.py), no groups
    with torch.no_grad():
        model(input_ids=ids[:1], attention_mask=mask[:1])  # one row
        model(input_ids=ids[:, :6], attention_mask=mask[:, :6])  # 36 tokens <= 40
        model(input_ids=ids[:2], attention_mask=torch.ones_like(mask[:2]), output_attentions=True)
    assert calls == [(2, T), (4, N), (1, N), (6, 6), (2, N)]
