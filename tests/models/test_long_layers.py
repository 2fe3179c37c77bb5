"""Long layers (nn/long_layers.py): a second stack of layers that only rows of more than exact_length real
tokens read.

The guarantee: a row of at most T real tokens gets, bit for bit, what the model without long layers gives
it, on the host-branch path (eager mode, on any device: the plan's one read, the rows run apart) and on the
sync-free one (tracing: both stacks, a select); a longer row reads the long layers; a copy of the layers changes nothing.
"""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.batches import length_mask
from tests.fixtures.models import VOCAB_SIZE, tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerConfig, LinformerModel
from linformer_kit.models.extend import shortened
from linformer_kit.nn import exact_rows, plan
from linformer_kit.train.distill.long import with_long_layers

N, T = 64, 24
LENGTHS = [N, T + 1, T, 12, 3]


def _config(**overrides) -> LinformerConfig:
    options = dict(max_position_embeddings=N + 2, projected_length=8, local_window=4, global_tokens=1,
                   exact_length=T)  # fmt: skip
    return tiny_linformer_config(**{**options, **overrides})


def _pair() -> tuple[LinformerModel, LinformerModel]:
    """The model with long layers (theirs random: trained ones) and the same weights without them."""
    torch.manual_seed(0)
    doubled = LinformerModel(_config(long_layers=True)).double().eval()
    plain = LinformerModel(_config()).double().eval()
    missing, unexpected = plain.load_state_dict(doubled.state_dict(), strict=False)
    assert not missing
    assert unexpected
    assert all(".long_layer." in key for key in unexpected)
    return doubled, plain


def _batch() -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(1)
    return torch.randint(5, VOCAB_SIZE, (len(LENGTHS), N)), length_mask(LENGTHS, N).long()


@pytest.mark.parametrize("sync_free", [False, True])
def test_a_row_up_to_exact_length_is_bit_for_bit_the_model_without_long_layers(
    sync_free: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    doubled, plain = _pair()
    selects: list[int] = []
    if sync_free:  # the path of a compiled model: no row chosen on the host, by any router (nn/plan.py)
        monkeypatch.setattr(plan, "tracing", lambda: True)
        selected = exact_rows._select_exact_rows
        monkeypatch.setattr(exact_rows, "_select_exact_rows", lambda *a: selects.append(1) or selected(*a))
    ids, mask = _batch()
    short = [row for row, length in enumerate(LENGTHS) if length <= T]
    with torch.no_grad():
        out = doubled(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        whole = plain(input_ids=ids, attention_mask=mask, output_hidden_states=True)
        # the short rows alone, at their own width T (their real tokens are their first ones)
        narrow = plain(input_ids=ids[short, :T], attention_mask=mask[short, :T]).last_hidden_state
    # the host path runs the short rows as a batch of their own at width T (models/row_groups.py), as the plain
    # model does on them alone; the sync-free path runs every row through both stacks at width N, as the plain
    # model does on the whole batch
    expected = whole.last_hidden_state[short] if sync_free else narrow
    # a select in every layer read: both stacks, and the plain model on the batch
    assert len(selects) == (3 * len(doubled.encoder.layer) if sync_free else 0)
    real = [LENGTHS[row] for row in short]
    for i, (row, length) in enumerate(zip(short, real, strict=True)):  # real tokens: bit for bit
        assert torch.equal(out.last_hidden_state[row, :length], expected[i, :length])
        if not sync_free:
            assert not out.last_hidden_state[row, T:].any()  # pads past the group's width: 0
        assert_close(
            out.last_hidden_state[row, :length], whole.last_hidden_state[row, :length], rtol=1e-12, atol=1e-12
        )
        for layer, (a, p) in enumerate(zip(out.hidden_states, whole.hidden_states, strict=True)):
            assert_close(
                a[row, :length], p[row, :length], rtol=1e-12, atol=1e-12, msg=f"hidden state {layer}"
            )
    for row, length in enumerate(LENGTHS):
        if length > T:  # the long layers' own reading
            gap = (out.last_hidden_state[row, :length] - whole.last_hidden_state[row, :length]).abs().max()
            assert gap > 1e-3, (row, length)


def test_unpadded_batches_take_one_stack_by_their_length() -> None:
    doubled, plain = _pair()
    ids, _ = _batch()
    with torch.no_grad():
        assert torch.equal(
            doubled(input_ids=ids[:2, :T]).last_hidden_state, plain(input_ids=ids[:2, :T]).last_hidden_state
        )
        assert not torch.allclose(
            doubled(input_ids=ids[:2]).last_hidden_state, plain(input_ids=ids[:2]).last_hidden_state
        )


def test_a_copy_of_the_layers_changes_nothing() -> None:
    torch.manual_seed(0)
    plain = LinformerModel(_config()).double().eval()
    doubled = with_long_layers(plain, None).eval()
    assert doubled.config.long_layers
    assert plain.config.long_layers is False  # the original's config untouched
    ids, mask = _batch()
    with torch.no_grad():
        assert torch.equal(doubled(input_ids=ids).last_hidden_state, plain(input_ids=ids).last_hidden_state)
        assert_close(  # a mixed batch: the rows run apart, the plain model's together (round-off apart)
            doubled(input_ids=ids, attention_mask=mask).last_hidden_state,
            plain(input_ids=ids, attention_mask=mask).last_hidden_state,
            rtol=1e-12, atol=1e-12,
        )  # fmt: skip


def test_attention_weights_of_a_mixed_batch_are_refused_and_of_one_stack_given() -> None:
    doubled, _ = _pair()
    ids, mask = _batch()
    with torch.no_grad():
        with pytest.raises(
            ValueError, match=r"attention weights of a batch mixing rows of at most exact_length=24"
        ):
            doubled(input_ids=ids, attention_mask=mask, output_attentions=True)
        out = doubled(input_ids=ids[:2], output_attentions=True)  # every row long: the long layers' weights
    assert len(out.attentions) == doubled.config.num_hidden_layers
    assert out.attentions[0].shape[:3] == (2, doubled.config.num_attention_heads, N)


def test_long_layers_need_exact_length_and_a_bool() -> None:
    with pytest.raises(
        ValueError, match="long_layers=True: long layers are read by rows of more than exact_length"
    ):
        _config(long_layers=True, exact_length=None)
    with pytest.raises(ValueError, match="long_layers must be True or False, got 1"):
        _config(long_layers=1)


def test_a_saved_model_with_long_layers_loads_as_saved(tmp_path) -> None:
    doubled, _ = _pair()
    doubled.save_pretrained(tmp_path)
    loaded = LinformerModel.from_pretrained(tmp_path, torch_dtype=torch.float64).eval()
    ids, mask = _batch()
    with torch.no_grad():
        assert torch.equal(
            loaded(input_ids=ids, attention_mask=mask).last_hidden_state,
            doubled(input_ids=ids, attention_mask=mask).last_hidden_state,
        )


def test_a_model_shortened_to_exact_length_drops_its_long_layers() -> None:
    """`shortened` to at most T tokens: every input it reads takes the short stack, so the long layers go (and
    the result exports, as a full-attention model)."""
    doubled, plain = _pair()
    short = shortened(doubled, T)
    assert short.config.long_layers is False
    assert not any(".long_layer." in name for name in short.state_dict())
    ids, _ = _batch()
    with torch.no_grad():
        assert_close(short(input_ids=ids[:, :T]).last_hidden_state, plain(input_ids=ids[:, :T]).last_hidden_state,
                     rtol=1e-12, atol=1e-12)  # fmt: skip


def test_export_is_refused_with_the_way_out() -> None:
    doubled, _ = _pair()
    ids, mask = _batch()
    with pytest.raises(ValueError, match=r"long layers have no exported form .* `shortened`"):
        torch.export.export(doubled, (), {"input_ids": ids, "attention_mask": mask})
