"""A batch mixing short and long rows read as two batches (models/row_groups.py): the short rows at width T,
every real token's state and gradient what the layer-by-layer routing gives, left padding included."""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.models import VOCAB_SIZE, tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerForSequenceClassification, LinformerModel, row_groups

N, T = 32, 12
CONFIGS = {
    "exact_length": {"exact_length": T},
    "long layers": {"exact_length": T, "long_layers": True},
    "window": {"exact_length": T, "local_window": 4, "global_tokens": 1},
}


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    """Rows of 32, 20, 12 and 5 real tokens, the last one padded on the left."""
    torch.manual_seed(1)
    ids = torch.randint(5, VOCAB_SIZE, (4, N))
    mask = torch.zeros(4, N, dtype=torch.long)
    for row, length in enumerate((N, 20, T)):
        mask[row, :length] = 1
    mask[3, N - 5 :] = 1  # left padding: the real tokens last
    return ids, mask


def _routed(model, monkeypatch: pytest.MonkeyPatch, **inputs):
    """The model's output through the layers' own routing (the path before row groups), the reference."""
    with monkeypatch.context() as patch:
        patch.setattr("linformer_kit.models.modeling_linformer.read_apart", lambda plan, attentions: False)
        return model(**inputs)


@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_real_tokens_get_what_the_layers_routing_gives(
    overrides: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(max_position_embeddings=N + 2, **overrides)).double().eval()
    ids, mask = _batch()
    widths: list[int] = []
    encode = row_groups.encode_apart
    monkeypatch.setattr(
        "linformer_kit.models.modeling_linformer.encode_apart",
        lambda encoder, x, plan, hidden: widths.append(x.shape[1]) or encode(encoder, x, plan, hidden),
    )
    spied = encoder_widths(model, monkeypatch)
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        want = _routed(model, monkeypatch, input_ids=ids, attention_mask=mask, output_hidden_states=True)
    assert widths == [N]
    assert spied[:2] == [T, N]  # the short rows at width T, the long ones at N; then the reference's N
    real = mask.bool()
    assert_close(out.last_hidden_state[real], want.last_hidden_state[real], rtol=1e-10, atol=1e-10)
    for a, b in zip(out.hidden_states, want.hidden_states, strict=True):
        assert_close(a[real], b[real], rtol=1e-10, atol=1e-10)


def encoder_widths(model: LinformerModel, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The widths the encoder runs at, in call order."""
    widths: list[int] = []
    forward = model.encoder.forward
    monkeypatch.setattr(model.encoder, "forward", lambda x, *a: widths.append(x.shape[1]) or forward(x, *a))
    return widths


def test_gradients_equal_the_layers_routing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Training reads apart too: every weight's gradient is the reference's."""
    torch.manual_seed(0)
    config = tiny_linformer_config(
        max_position_embeddings=N + 2, exact_length=T, long_layers=True, num_labels=2, classifier_pooling="mean",
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    model = LinformerForSequenceClassification(config).double()
    ids, mask = _batch()
    labels = torch.tensor([0, 1, 1, 0])
    model(input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
    got = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad()
    _routed(model, monkeypatch, input_ids=ids, attention_mask=mask, labels=labels).loss.backward()
    want = {name: p.grad for name, p in model.named_parameters() if p.grad is not None}
    assert got.keys() == want.keys()
    for name in got:
        assert_close(got[name], want[name], rtol=1e-9, atol=1e-10, msg=name)


def test_one_path_and_attention_weights_keep_the_encoder_s_own_forward(monkeypatch) -> None:
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(max_position_embeddings=N + 2, exact_length=T)).eval()
    called: list[int] = []
    monkeypatch.setattr("linformer_kit.models.modeling_linformer.encode_apart", lambda *a: called.append(1))
    ids, mask = _batch()
    with torch.no_grad():
        model(input_ids=ids[:2], attention_mask=torch.ones_like(mask[:2]))  # every row long: one path
        model(input_ids=ids[2:, :T], attention_mask=mask[2:, :T])  # n <= T: one path
        with pytest.raises(ValueError, match="attention weights of a batch mixing rows"):
            model(input_ids=ids, attention_mask=mask, output_attentions=True)
    assert called == []
