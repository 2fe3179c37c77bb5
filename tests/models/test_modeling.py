"""LinformerConfig / LinformerModel & heads behave like any Hugging Face model."""

import json

import pytest
import torch
from safetensors.torch import load_file
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import VOCAB_SIZE, N, tiny_linformer_config
from torch.testing import assert_close
from transformers import (
    AutoConfig,
    AutoModel,
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
)

from linformer_kit.models import (
    LinformerConfig,
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
    LinformerModel,
)
from linformer_kit.nn import CORES

# --- config ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"projected_length": N + 1}, rf"projected_length \(k={N + 1}\).*max_seq_len={N}"),
        ({"projected_length": 0}, r"projected_length \(k=0\)"),
        ({"projected_length": [8, 8, 8]}, r"projected_length has 3 entries.*num_hidden_layers=2"),
        ({"projected_length": [8, 4], "sharing": "layerwise"}, r"layerwise.*single k.*\[8, 4\]"),
        ({"sharing": "rowwise"}, r"sharing must be one of .*'rowwise'"),
        ({"projection": "fourier"}, r"projection must be one of .*'fourier'"),
        ({"projection": "mean", "projected_length": 5}, r"k=5 must divide max_seq_len=32"),
        ({"position_style": "t5"}, r"position_style must be one of .*'t5'"),
        ({"hidden_size": 30}, r"hidden_size=30 must be divisible by num_attention_heads=4"),
        ({"classifier_pooling": "max"}, r"classifier_pooling must be one of \('cls', 'mean'\), got 'max'"),
    ],
)
def test_bad_config_raises_value_error_naming_it(overrides, message):
    with pytest.raises(ValueError, match=message):
        tiny_linformer_config(**overrides)


def test_config_longest_input_follows_position_style():
    assert LinformerConfig().max_seq_len == 512  # 514 RoBERTa positions, pad_token_id=1
    assert tiny_linformer_config(position_style="bert").max_seq_len == N + 2
    assert tiny_linformer_config(projected_length=[8, 4]).projected_lengths() == [8, 4]


@pytest.mark.parametrize(
    "overrides",
    [
        {"projected_length": [8, None], "short_inputs": "exact"},
        {"projected_length": [8, 4], "exact_length": 16},
        {"projected_length": 8, "short_inputs": "exact", "exact_length": 16, "local_window": [4, None]},
        {"projected_length": 8},
    ],
)
def test_config_attends_exactly_where_its_layers_do(overrides):
    """`LinformerConfig.attends_exactly` (bench/flops.py counts by it) is each layer's own answer."""
    from linformer_kit.nn import LinformerSelfAttention

    config = tiny_linformer_config(**overrides)
    layers = [m for m in LinformerModel(config).modules() if isinstance(m, LinformerSelfAttention)]
    assert len(layers) == config.num_hidden_layers
    for n in (1, 4, 5, 8, 9, 16, 17, N):
        assert config.attends_exactly(n) == [layer.attends_exactly(n) for layer in layers], n


def test_loading_a_bad_config_raises(tmp_path):
    tiny_linformer_config().save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "sharing": "bogus"}))
    with pytest.raises(ValueError, match="bogus"):
        AutoConfig.from_pretrained(tmp_path)


# --- save / load / Auto classes ---------------------------------------------------------------------


@pytest.mark.parametrize("sharing", ["headwise", "layerwise"])
def test_save_load_round_trip_is_identical(tmp_path, sharing):
    torch.manual_seed(0)
    model = LinformerForMaskedLM(tiny_linformer_config(sharing=sharing)).eval()
    model.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    assert not list(tmp_path.glob("*.bin"))
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path)
    assert type(loaded) is LinformerForMaskedLM
    assert loaded.lm_head.decoder.weight is loaded.linformer.embeddings.word_embeddings.weight  # still tied
    input_ids, attention_mask = padded_batch(model.config.pad_token_id)
    with torch.no_grad():
        assert_close(loaded(input_ids, attention_mask=attention_mask).logits,
                     model(input_ids, attention_mask=attention_mask).logits, rtol=0, atol=0)  # fmt: skip


def test_layerwise_projection_is_saved_once(tmp_path):
    model = LinformerModel(tiny_linformer_config(sharing="layerwise"))
    model.save_pretrained(tmp_path)
    keys = [key for key in load_file(tmp_path / "model.safetensors") if "projection" in key]
    assert keys == ["encoder.projection.weight"]
    layers = model.encoder.layer
    assert layers[0].attention.self.projections()[0] is layers[1].attention.self.projections()[0]


def test_auto_classes_resolve(tmp_path):
    config = tiny_linformer_config()
    config.save_pretrained(tmp_path)
    assert type(AutoConfig.from_pretrained(tmp_path)) is LinformerConfig
    assert type(AutoModel.from_config(config)) is LinformerModel
    assert type(AutoModelForMaskedLM.from_config(config)) is LinformerForMaskedLM
    assert type(AutoModelForSequenceClassification.from_config(config)) is LinformerForSequenceClassification
    assert type(AutoModelForTokenClassification.from_config(config)) is LinformerForTokenClassification
    LinformerForSequenceClassification(config).save_pretrained(tmp_path / "clf")
    assert type(AutoModel.from_pretrained(tmp_path / "clf")) is LinformerModel


def test_loading_refuses_pickles(tmp_path):
    model = LinformerModel(tiny_linformer_config())
    model.config.save_pretrained(tmp_path)
    torch.save(model.state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(
        ValueError, match=r"no \.safetensors weights \(only pickled \['pytorch_model\.bin'\]\)"
    ):
        AutoModel.from_pretrained(tmp_path)
    with pytest.raises(ValueError, match="use_safetensors=False"):
        LinformerModel.from_pretrained(tmp_path, use_safetensors=False)


# --- forward behaviour ------------------------------------------------------------------------------


@pytest.mark.parametrize("projected_length", [[8, 4], None])
def test_output_attentions_shapes(projected_length):
    model = LinformerModel(tiny_linformer_config(projected_length=projected_length)).eval()
    input_ids, attention_mask = padded_batch(model.config.pad_token_id, n=16)
    out = model(input_ids, attention_mask=attention_mask, output_attentions=True, output_hidden_states=True)
    ks = [8, 4] if projected_length else [16, 16]  # full attention: (b, h, n, n)
    assert [tuple(a.shape) for a in out.attentions] == [(3, 4, 16, k) for k in ks]
    assert len(out.hidden_states) == 3  # embeddings + one per layer
    for weights in out.attentions:
        assert_close(weights.sum(-1), torch.ones(3, 4, 16))
    assert model(input_ids).attentions is None


def test_eager_and_auto_agree(tmp_path):
    torch.manual_seed(0)
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(tmp_path)
    auto = LinformerForMaskedLM.from_pretrained(tmp_path)
    eager = LinformerForMaskedLM.from_pretrained(tmp_path, attn_implementation="eager")
    assert (auto.config._attn_implementation, eager.config._attn_implementation) == ("auto", "eager")
    input_ids, attention_mask = padded_batch(auto.config.pad_token_id)
    with torch.no_grad():
        expected = eager(input_ids, attention_mask=attention_mask).logits
        assert_close(auto(input_ids, attention_mask=attention_mask).logits, expected)
        auto.set_attn_implementation("eager")  # switching after construction takes effect
        assert_close(auto(input_ids, attention_mask=attention_mask).logits, expected, rtol=0, atol=0)


@pytest.mark.parametrize("core", ["sdpa", "blocked", "split", "eager"])
def test_attn_implementation_names_the_core_every_layer_runs(tmp_path, core, monkeypatch):
    """The config chooses the core (nn/cores.py) the way transformers' attn_implementation does: at loading,
    in the constructor's config, after construction, and set on the config directly; the layers read it at
    every forward. A name outside the table is refused, naming the choices."""
    calls: list[str] = []

    def counted(name, fn):
        def run(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)

        return run

    table = {name: type(c)(counted(name, c.plain), counted(name, c.window)) for name, c in CORES.items()}
    monkeypatch.setattr("linformer_kit.nn.attention.CORES", table)
    LinformerModel(tiny_linformer_config(local_window=2)).save_pretrained(tmp_path)
    ids = torch.randint(5, VOCAB_SIZE, (2, N))

    def cores_run(model) -> set[str]:
        calls.clear()
        with torch.no_grad():
            model(ids)
        return set(calls)

    assert cores_run(LinformerModel.from_pretrained(tmp_path, attn_implementation=core)) == {core}
    config = tiny_linformer_config(local_window=2)
    config._attn_implementation = core
    assert cores_run(LinformerModel(config)) == {core}
    model = LinformerModel.from_pretrained(tmp_path)
    # "auto" for the window's CPU forward without gradients: split here, since the tiny config's head size 8 is
    # not the native kernel's (a multiple of 16); what auto picks by capability is tests/nn/test_cores.py's
    assert model.config.hidden_size // model.config.num_attention_heads == 8
    assert cores_run(model) == {"split"}
    model.set_attn_implementation(core)
    assert cores_run(model) == {core}
    model.config._attn_implementation = "auto"  # set directly: the next forward reads it
    assert cores_run(model) == {"split"}
    with pytest.raises(
        ValueError, match=r"attn_implementation must be one of .*'flex'.*got 'flash_attention_2'"
    ):
        LinformerModel.from_pretrained(tmp_path, attn_implementation="flash_attention_2")


@pytest.mark.parametrize("sharing", ["headwise", "layerwise"])
def test_gradient_checkpointing_gives_the_same_gradients(sharing):
    torch.manual_seed(0)
    model = LinformerForMaskedLM(tiny_linformer_config(sharing=sharing)).train()  # dropout is 0
    input_ids, attention_mask = padded_batch(model.config.pad_token_id)

    def gradients() -> dict[str, torch.Tensor]:
        model.zero_grad()
        model(input_ids, attention_mask=attention_mask, labels=input_ids).loss.backward()
        return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}

    plain = gradients()
    model.gradient_checkpointing_enable()
    assert model.linformer.encoder.layer[0].gradient_checkpointing
    checkpointed = gradients()
    assert plain.keys() == checkpointed.keys()
    assert any("projection" in name for name in plain)
    for name, grad in plain.items():
        assert_close(checkpointed[name], grad, msg=name)


def test_heads_compute_their_losses():
    torch.manual_seed(0)
    config = tiny_linformer_config()
    input_ids, attention_mask = padded_batch(config.pad_token_id)
    clf = LinformerForSequenceClassification(config).eval()
    labels = torch.tensor([0, 2, 1])
    out = clf(input_ids, attention_mask=attention_mask, labels=labels)
    assert out.logits.shape == (3, 3)
    assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits, labels))
    tagger = LinformerForTokenClassification(config).eval()
    tags = torch.randint(0, 3, input_ids.shape).masked_fill(attention_mask == 0, -100)
    out = tagger(input_ids, attention_mask=attention_mask, labels=tags)
    assert out.logits.shape == (3, 16, 3)
    assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), tags.flatten()))
    assert isinstance(tagger(input_ids, return_dict=False), tuple)


def test_pad_content_does_not_matter():
    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(projection="mean")).eval()
    input_ids, attention_mask = padded_batch(model.config.pad_token_id)
    positions = model.embeddings.position_ids(input_ids, *input_ids.shape, input_ids.device)
    other = input_ids.masked_fill(attention_mask == 0, 7)  # different tokens under the mask
    real = attention_mask.bool()
    with torch.no_grad():
        a = model(input_ids, attention_mask=attention_mask).last_hidden_state
        b = model(other, attention_mask=attention_mask, position_ids=positions).last_hidden_state
    assert_close(a[real], b[real])
    assert not torch.isnan(a).any()


# --- classifier pooling ---------------------------------------------------------------------------------


def test_classifier_pooling_is_saved_in_config_json(tmp_path):
    tiny_linformer_config(classifier_pooling="mean").save_pretrained(tmp_path)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert saved["classifier_pooling"] == "mean"
    assert AutoConfig.from_pretrained(tmp_path).classifier_pooling == "mean"
    del saved["classifier_pooling"]  # a config.json written before the option: RoBERTa's first token
    (tmp_path / "config.json").write_text(json.dumps(saved))
    assert AutoConfig.from_pretrained(tmp_path).classifier_pooling == "cls"


@pytest.mark.parametrize("short_inputs", ["project", "exact"])
def test_mean_pooling_is_exact_under_padding(short_inputs):
    """Each padded row's logits are those of its sequence run alone at its true length."""
    torch.manual_seed(0)
    config = tiny_linformer_config(classifier_pooling="mean", short_inputs=short_inputs)
    model = LinformerForSequenceClassification(config).double().eval()
    input_ids, attention_mask = padded_batch(config.pad_token_id)
    with torch.no_grad():
        batch = model(input_ids, attention_mask=attention_mask).logits  # (3, num_labels)
        for row, length in enumerate(attention_mask.sum(dim=1).tolist()):
            alone = model(input_ids[row : row + 1, :length]).logits  # no mask: every token real
            assert_close(batch[row : row + 1], alone, rtol=1e-10, atol=1e-12, msg=f"row {row}")


def test_mean_pooling_averages_real_tokens_and_never_reads_pads():
    head = LinformerForSequenceClassification(tiny_linformer_config(classifier_pooling="mean")).classifier
    features = torch.randn(3, 5, 32, dtype=torch.float64)
    attention_mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [0, 0, 0, 0, 0]])
    features[attention_mask == 0] = float("nan")  # a NaN in a pad must not reach the mean
    pooled = head.pool(features, attention_mask)  # (3, 32)
    assert_close(pooled[0], features[0].mean(dim=0))
    assert_close(pooled[1], features[1, :2].mean(dim=0))
    assert_close(pooled[2], torch.zeros(32, dtype=torch.float64))  # no real token: zeros, not NaN
    assert_close(head.pool(features[:1], None)[0], features[0].mean(dim=0))  # no mask: every token is real


def test_cls_pooling_reads_the_first_token_only():
    head = LinformerForSequenceClassification(tiny_linformer_config()).classifier
    features = torch.randn(2, 4, 32)
    assert torch.equal(head.pool(features, torch.ones(2, 4)), features[:, 0])


def test_too_long_input_raises():
    model = LinformerModel(tiny_linformer_config())
    with pytest.raises(ValueError, match=rf"sequence length {N + 1} exceeds max_seq_len={N}"):
        model(torch.full((1, N + 1), 5))
    with pytest.raises(ValueError, match="attention_mask must have shape"):
        model(torch.full((1, 4), 5), attention_mask=torch.ones(1, 1, 4, 4))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_sdpa_matches_cpu():
    torch.manual_seed(0)
    model = LinformerForMaskedLM(tiny_linformer_config()).eval()
    input_ids, attention_mask = padded_batch(model.config.pad_token_id)
    with torch.no_grad():
        expected = model(input_ids, attention_mask=attention_mask).logits
        model.cuda()
        actual = model(input_ids.cuda(), attention_mask=attention_mask.cuda()).logits
    assert_close(actual.cpu(), expected, rtol=1e-3, atol=1e-3)


# --- an all-True attention mask is dropped once a call ------------------------------------------------------


@pytest.mark.parametrize("limit", [None, 3])  # one question (every token real?), two (and which rows long?)
def test_all_real_mask_dropped_once_a_call_and_kept_with_padding(limit):
    from linformer_kit.nn.plan import model_plan

    assert model_plan(torch.ones(2, 5, dtype=torch.bool), 5, limit).mask is None
    padded = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]]).bool()
    assert torch.equal(model_plan(padded, 5, limit).mask, padded)


@pytest.mark.parametrize("overrides", [{}, {"local_window": 2, "global_tokens": 1}])
def test_all_real_mask_gives_the_masked_layers_output(overrides, monkeypatch):
    """The model with an all-ones attention_mask (dropped) equals the same model whose layers get the
    explicit all-True mask (the dropping patched out), in float64, values and gradients."""
    import linformer_kit.nn.plan as plan

    torch.manual_seed(0)
    model = LinformerModel(tiny_linformer_config(**overrides)).double().eval()
    ids = torch.randint(5, VOCAB_SIZE, (2, N))
    ones = torch.ones(2, N, dtype=torch.long)

    def run():
        model.zero_grad()
        out = model(input_ids=ids, attention_mask=ones).last_hidden_state
        out.square().sum().backward()
        return out.detach(), [p.grad.clone() for p in model.parameters() if p.grad is not None]

    dropped, dropped_grads = run()
    monkeypatch.setattr(plan, "read_on_host", lambda flags: [False] * len(flags))  # "not every token real"
    kept, kept_grads = run()
    assert_close(dropped, kept)
    for a, b in zip(dropped_grads, kept_grads, strict=True):
        assert_close(a, b)
