"""torch.export and ONNX of a whole Linformer model with a dynamic length: n <= k, n > k, n = max_seq_len."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tests.exported import exported, onnx_runner
from tests.fixtures.models import tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerForMaskedLM

CASES = [("headwise", "linear", "exact"), ("layerwise", "conv", "project")]


def padded_ids(model: LinformerForMaskedLM, n: int) -> dict[str, torch.Tensor]:
    """(2, n) ids and mask: row 0 full, row 1 half padding (n > k: a short row in a long batch, k = 8)."""
    input_ids = torch.randint(3, 99, (2, n))
    attention_mask = torch.ones(2, n, dtype=torch.long)
    input_ids[1, n // 2 :] = model.config.pad_token_id
    attention_mask[1, n // 2 :] = 0
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def example() -> dict[str, torch.Tensor]:
    return {"input_ids": torch.randint(3, 99, (2, 10)), "attention_mask": torch.ones(2, 10, dtype=torch.long)}


@pytest.mark.slow
@pytest.mark.parametrize(("sharing", "projection", "short_inputs"), CASES)
def test_export_masked_lm_with_a_dynamic_length(sharing: str, projection: str, short_inputs: str) -> None:
    config = tiny_linformer_config(sharing=sharing, projection=projection, short_inputs=short_inputs)
    model = LinformerForMaskedLM(config).eval()
    n_max = model.config.max_seq_len
    graph = exported(model, example(), n_max)
    for n in (3, 8, 9, 17, n_max):  # k = 8
        inputs = padded_ids(model, n)
        assert_close(graph(**inputs).logits, model(**inputs).logits)


@pytest.mark.slow
def test_onnx_export_of_a_masked_lm_runs_in_onnx_runtime(tmp_path: Path) -> None:
    model = LinformerForMaskedLM(tiny_linformer_config(short_inputs="exact")).eval()
    n_max = model.config.max_seq_len
    run = onnx_runner(model, example(), n_max, tmp_path / "model.onnx")
    for n in (3, 8, 9, 17, n_max):
        inputs = padded_ids(model, n)
        with torch.no_grad():
            assert_close(run(**inputs)[0], model(**inputs).logits)
