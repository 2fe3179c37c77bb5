"""RoBERTa / BERT -> Linformer: full attention and identity projections reproduce the original exactly."""

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import HEADS, N, main_output, tiny_linformer_config, tiny_source
from torch.testing import assert_close

from linformer_kit.models import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
    LinformerModel,
    from_bert,
    from_roberta,
    is_projection_key,
    with_linformer_options,
)
from linformer_kit.nn import PROJECTION_KINDS, SHARING_MODES, SequenceProjection

CONVERTERS = {"roberta": from_roberta, "roberta-prelayernorm": from_roberta, "bert": from_bert}
TARGETS = {
    "Model": LinformerModel,
    "ForMaskedLM": LinformerForMaskedLM,
    "ForSequenceClassification": LinformerForSequenceClassification,
    "ForTokenClassification": LinformerForTokenClassification,
}


@pytest.mark.parametrize("family", ["roberta", "roberta-prelayernorm", "bert"])
@pytest.mark.parametrize("head", HEADS)
@pytest.mark.parametrize("padded", [False, True], ids=["unpadded", "padded"])
def test_full_attention_equals_source(family, head, padded):
    source = tiny_source(family, head)
    linformer = CONVERTERS[family](source, projected_length=None)
    assert type(linformer) is TARGETS[head]
    input_ids, attention_mask = padded_batch(source.config.pad_token_id)
    if not padded:
        attention_mask = None
        input_ids = input_ids[:1]
    with torch.no_grad():
        expected = source(input_ids, attention_mask=attention_mask, output_hidden_states=True)
        actual = linformer(input_ids, attention_mask=attention_mask, output_hidden_states=True)
    assert_close(main_output(actual), main_output(expected))
    for got, want in zip(actual.hidden_states, expected.hidden_states, strict=True):
        assert_close(got, want)


@pytest.mark.parametrize("family", ["roberta", "bert"])
@pytest.mark.parametrize("sharing", ["none", "headwise", "kv", "layerwise"])
def test_identity_projections_at_k_equal_n_equal_source(family, sharing):
    # window init with k = n is the identity; a full-length input then sees every key unchanged
    source = tiny_source(family, "ForMaskedLM")
    linformer = from_roberta if family == "roberta" else from_bert
    model = linformer(source, projected_length=N, sharing=sharing)
    for module in model.modules():
        if isinstance(module, SequenceProjection):
            assert_close(module.weight, torch.eye(N).expand_as(module.weight))
    input_ids = torch.randint(3, 99, (2, N), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        assert_close(model(input_ids).logits, source(input_ids).logits)


@pytest.mark.parametrize("family", ["roberta", "roberta-prelayernorm", "bert"])
@pytest.mark.parametrize("projection", ["linear", "mean", "conv"])
def test_projections_at_k_equal_n_equal_source_with_padding(family, projection):
    # slots that reach no real token are masked (empty windows, or identity rows over padding),
    # so k = n is exact for short and padded inputs too
    source = tiny_source(family, "ForMaskedLM")
    model = CONVERTERS[family](source, projected_length=N, projection=projection, sharing="kv")
    input_ids, attention_mask = padded_batch(source.config.pad_token_id)
    with torch.no_grad():
        expected = source(input_ids, attention_mask=attention_mask).logits
        actual = model(input_ids, attention_mask=attention_mask).logits
    assert_close(actual, expected)


def test_window_init_is_mean_pooling():
    # the documented conversion init: a learned E that starts as mean pooling over n/k windows
    source = tiny_source("roberta", "ForMaskedLM")
    linear = from_roberta(source, projected_length=8, projection="linear")
    mean = from_roberta(source, projected_length=8, projection="mean")
    input_ids = torch.randint(3, 99, (2, N), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        assert_close(linear(input_ids).logits, mean(input_ids).logits)
    e = linear.linformer.encoder.layer[0].attention.self.key_projection.weight  # (k, n)
    assert_close(e.sum(-1), torch.ones(8))
    assert (e > 0).sum().item() == N  # each position in exactly one window


def test_every_source_weight_is_copied():
    source = tiny_source("bert", "ForSequenceClassification")
    model = from_bert(source, projected_length=8)
    src = dict(source.named_parameters())
    layer = model.linformer.encoder.layer[1]
    assert_close(layer.attention.self.dense.weight, src["bert.encoder.layer.1.attention.output.dense.weight"])
    assert_close(model.classifier.dense.weight, src["bert.pooler.dense.weight"])
    assert_close(model.classifier.out_proj.bias, src["classifier.bias"])
    assert model.config.position_style == "bert"
    assert model.config.max_seq_len == N


def test_random_projection_init_differs_from_window():
    source = tiny_source("roberta", "Model")
    window = from_roberta(source, projected_length=8, sharing="kv")
    random = from_roberta(source, projected_length=8, sharing="kv", projection_init="random")
    e_window = window.encoder.layer[0].attention.self.kv_projection.weight
    e_random = random.encoder.layer[0].attention.self.kv_projection.weight
    assert not torch.equal(e_window, e_random)
    assert e_random.std().item() == pytest.approx(N**-0.5, rel=0.3)  # N(0, 1/n)
    assert random.config.projection_init == "random"  # saved with the model: how its E started


def test_wrong_family_or_class_raises():
    with pytest.raises(ValueError, match="RobertaForMaskedLM with from_bert"):
        from_bert(tiny_source("roberta", "ForMaskedLM"))
    with pytest.raises(ValueError, match="projection_init"):
        from_roberta(tiny_source("roberta", "Model"), projection_init="zeros")


def test_conversion_validates_k_against_the_source_positions():
    with pytest.raises(ValueError, match=rf"projected_length \(k={N + 1}\).*max_seq_len={N}"):
        from_roberta(tiny_source("roberta", "Model"), projected_length=N + 1)


@pytest.mark.parametrize("sharing", SHARING_MODES)
@pytest.mark.parametrize("projection", PROJECTION_KINDS)
def test_is_projection_key_names_exactly_the_projection_tensors(sharing, projection):
    model = LinformerForMaskedLM(tiny_linformer_config(sharing=sharing, projection=projection))
    owned = {
        f"{name}.{key}"
        for name, module in model.named_modules()
        if isinstance(module, SequenceProjection)
        for key in module.state_dict()
    }
    keys = set(model.state_dict())
    assert {key for key in keys if is_projection_key(key)} == owned & keys


@pytest.mark.parametrize("sharing", ["headwise", "layerwise"])
def test_with_linformer_options_copies_every_shared_weight_and_window_inits_the_new(sharing):
    full = LinformerForSequenceClassification(tiny_linformer_config(projected_length=None)).eval()
    converted, new = with_linformer_options(full, 8, sharing, "linear")

    assert type(converted) is LinformerForSequenceClassification
    assert new == sorted(key for key in converted.state_dict() if is_projection_key(key))
    assert new  # the projections, and nothing else, are new
    target = converted.state_dict()
    for name, tensor in full.state_dict().items():
        assert_close(target[name], tensor)
    for module in converted.modules():
        if isinstance(module, SequenceProjection):
            expected = SequenceProjection(N, 8, init="window").weight
            assert_close(module.weight, expected.expand_as(module.weight))
    assert with_linformer_options(converted, 8, sharing, "linear") == (converted, [])


def test_models_initialise_projections_per_config_projection_init():
    # "random": N(0, 1/n) for a linear E; "window" (the default): window means; conv: mean pooling
    random = LinformerForMaskedLM(tiny_linformer_config(sharing="none", projection_init="random"))
    weights = torch.cat([p.flatten() for name, p in random.named_parameters() if is_projection_key(name)])
    assert weights.std().item() == pytest.approx(N**-0.5, rel=0.1)
    window = LinformerForMaskedLM(tiny_linformer_config(sharing="layerwise"))
    assert_close(window.linformer.encoder.projection.weight, SequenceProjection(N, 8).weight)
    e = window.linformer.encoder.projection.weight  # (k, n)
    assert_close(e.sum(-1), torch.ones(8))
    assert (e > 0).sum().item() == N  # each position in exactly one window
    conv = LinformerForMaskedLM(tiny_linformer_config(projection="conv"))
    kernel = conv.linformer.encoder.layer[0].attention.self.key_projection.weight
    assert_close(kernel, torch.full_like(kernel, 8 / N))
