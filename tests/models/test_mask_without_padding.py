"""An attention_mask without padding is dropped before the encoder (SDPA keeps its fused kernels).

Reference: the encoder called with that all-True mask (the masked code path). The model's output
must be the reference's, for full attention and Linformer, and a mask *with* padding must still
reach the encoder.
"""

import pytest
import torch
from tests.models.tiny_models import padded_batch, tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerModel
from linformer_kit.models.modeling_linformer import _key_padding_mask


@pytest.mark.parametrize("k", [None, 8])
def test_dropping_a_mask_without_padding_changes_no_number(k: int | None) -> None:
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(projected_length=k)).double().eval()
    ids = torch.randint(3, model.config.vocab_size, (2, 16))  # (b, n), no padding
    ones = torch.ones_like(ids)
    embeddings = model.embeddings(ids, None, None, None)  # (b, n, D)
    reference = model.encoder(embeddings, ones.bool(), False, False).last_hidden_state  # masked path
    assert_close(model(input_ids=ids, attention_mask=ones).last_hidden_state, reference)


def test_only_a_mask_without_padding_is_dropped() -> None:
    _, mask = padded_batch(pad_token_id=1)  # rows 1 and 2 end in padding
    assert _key_padding_mask(torch.ones(2, 5, dtype=torch.long)) is None
    kept = _key_padding_mask(mask)
    assert kept is not None
    assert torch.equal(kept, mask.bool())
