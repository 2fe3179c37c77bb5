"""torch.export of a whole Linformer model with a dynamic sequence length, n = max_seq_len included."""

from __future__ import annotations

import pytest
import torch
from tests.models.tiny_models import tiny_linformer_config
from torch.export import Dim, export
from torch.testing import assert_close

from linformer_kit.models import LinformerForMaskedLM


@pytest.mark.slow
@pytest.mark.parametrize(("sharing", "projection"), [("headwise", "linear"), ("layerwise", "conv")])
def test_export_masked_lm_with_a_dynamic_length(sharing: str, projection: str) -> None:
    model = LinformerForMaskedLM(tiny_linformer_config(sharing=sharing, projection=projection)).eval()
    n_max = model.config.max_seq_len
    seq = Dim("seq", min=2, max=n_max)
    example = {
        "input_ids": torch.randint(3, 99, (2, 10)),
        "attention_mask": torch.ones(2, 10, dtype=torch.long),
    }
    exported = export(model, (), example, dynamic_shapes={name: {1: seq} for name in example}).module()

    for n in (3, n_max):
        input_ids = torch.randint(3, 99, (2, n))
        attention_mask = torch.ones(2, n, dtype=torch.long)
        input_ids[1, n // 2 :] = model.config.pad_token_id
        attention_mask[1, n // 2 :] = 0
        got = exported(input_ids=input_ids, attention_mask=attention_mask).logits
        assert_close(got, model(input_ids=input_ids, attention_mask=attention_mask).logits)
