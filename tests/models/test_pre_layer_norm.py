"""layer_norm="pre": x + f(LN(x)) per sub-layer and a final LN, RoBERTa-PreLayerNorm's layout and names."""

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import HEADS, N, main_output, tiny_linformer_config, tiny_source
from torch.testing import assert_close

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM, from_roberta


@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
def test_full_attention_equals_roberta_prelayernorm_in_float64(head, padded):
    source = tiny_source("roberta-prelayernorm", head)
    linformer = from_roberta(source, projected_length=None)
    assert linformer.config.layer_norm == "pre"
    source, linformer = source.double(), linformer.double()  # the same (float32) weights, in float64
    input_ids, attention_mask = padded_batch(source.config.pad_token_id)
    if not padded:
        input_ids, attention_mask = input_ids[:1], None
    with torch.no_grad():
        expected = source(input_ids, attention_mask=attention_mask, output_hidden_states=True)
        actual = linformer(input_ids, attention_mask=attention_mask, output_hidden_states=True)
    assert_close(main_output(actual), main_output(expected), rtol=1e-12, atol=1e-12)
    for got, want in zip(actual.hidden_states, expected.hidden_states, strict=True):
        assert_close(got, want, rtol=1e-12, atol=1e-12)


def test_pre_and_post_layouts_hold_their_own_layer_norms():
    def layer_norms(layout: str) -> set[str]:
        model = LinformerForMaskedLM(tiny_linformer_config(layer_norm=layout))
        return {k.removesuffix(".weight") for k in model.state_dict() if "LayerNorm.weight" in k}

    assert layer_norms("post") == {
        "linformer.embeddings.LayerNorm",
        *(
            f"linformer.encoder.layer.{i}.{name}.LayerNorm"
            for i in range(2)
            for name in ("attention.output", "output")
        ),
    }
    assert layer_norms("pre") == {
        "linformer.embeddings.LayerNorm",
        "linformer.LayerNorm",
        *(
            f"linformer.encoder.layer.{i}.{name}.LayerNorm"
            for i in range(2)
            for name in ("attention", "intermediate")
        ),
    }


def test_pre_layer_norm_differs_from_post_and_survives_save_and_load(tmp_path):
    torch.manual_seed(0)
    pre = LinformerForMaskedLM(tiny_linformer_config(layer_norm="pre")).eval()
    post = LinformerForMaskedLM(tiny_linformer_config()).eval()
    post.load_state_dict(pre.state_dict(), strict=False)  # every weight both layouts have
    input_ids = torch.randint(3, 99, (2, N), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert not torch.allclose(pre(input_ids).logits, post(input_ids).logits)
    pre.save_pretrained(tmp_path)
    loaded = LinformerForMaskedLM.from_pretrained(tmp_path).eval()
    assert loaded.config.layer_norm == "pre"
    with torch.no_grad():
        assert_close(loaded(input_ids).logits, pre(input_ids).logits)


def test_unknown_layer_norm_is_named():
    with pytest.raises(ValueError, match=r"layer_norm must be one of \('post', 'pre'\), got 'middle'"):
        LinformerConfig(layer_norm="middle")
