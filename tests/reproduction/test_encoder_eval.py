"""The encoder study's measures (reproduction/encoder_eval.py) on hand-made embeddings and a tiny model."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoTokenizer

from linformer_kit.reproduction.encoder_eval import (
    different_documents,
    embed,
    encoder_at,
    fidelity,
    halves,
    probe_accuracy,
    probe_correct,
    recall_at_1,
)
from tests.fixtures.models import tiny_source
from tests.fixtures.tokenizers import write_tokenizer


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.nn.functional.normalize(
        torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=-1
    )


def test_fidelity_is_one_for_the_same_embeddings_and_near_zero_for_unrelated_ones() -> None:
    a, b = _unit(200, 64, 0), _unit(200, 64, 1)
    assert fidelity(a, a) == pytest.approx(1.0)
    assert abs(fidelity(a, b)) < 0.05
    assert abs(different_documents(a)) < 0.05
    assert different_documents(torch.ones(3, 1)) == pytest.approx(1.0)


def test_recall_at_1_finds_each_query_s_own_document() -> None:
    documents = _unit(50, 32, 0)
    assert recall_at_1(documents + 0.01 * _unit(50, 32, 1), documents) == 1.0
    assert recall_at_1(documents.roll(1, 0), documents) == 0.0


def test_probe_separates_separable_labels_and_not_random_ones() -> None:
    labels = [i % 2 for i in range(200)]
    x = _unit(200, 16, 0) + torch.tensor(labels)[:, None].float() * 3.0
    assert probe_accuracy(x[:100], labels[:100], x[100:], labels[100:], seed=1, subset=100) == 1.0
    noise = _unit(200, 16, 2)
    assert probe_accuracy(noise[:100], labels[:100], noise[100:], labels[100:], seed=1, subset=100) < 0.75


def test_embed_is_normalised_and_ignores_padding(tmp_path) -> None:
    model = tiny_source("bert", "Model")
    write_tokenizer(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    texts = ["world", "hello world hello", "hello", "world world hello world"]  # batched longest first
    together = embed(model, tokenizer, texts, max_length=16, batch_size=2)
    alone = torch.cat([embed(model, tokenizer, [t], max_length=16) for t in texts])
    torch.testing.assert_close(together, alone, rtol=1e-5, atol=1e-6)  # in the texts' order
    torch.testing.assert_close(together.norm(dim=-1), torch.ones(4))
    assert not torch.allclose(together[0], together[1])  # distinct texts: a reordering would show
    first, second = halves(tokenizer, ["hello world hello world world"], 8)
    count = [len(tokenizer(half[0], add_special_tokens=False)["input_ids"]) for half in (first, second)]
    assert count == [2, 3]


def test_the_embedding_and_its_measures_are_the_models_ones() -> None:
    """One implementation (models/embedding.py), which distill uses too; importable here for the scripts."""
    from linformer_kit.models import embedding
    from linformer_kit.reproduction import encoder_eval

    for name in ("embed", "fidelity", "different_documents"):
        assert getattr(encoder_eval, name) is getattr(embedding, name), name
    with pytest.raises(ValueError, match="1 embedding"):  # no nan for a sample too small for its baseline
        different_documents(_unit(1, 4, 0))


def test_probe_seeds_draw_different_subsets_below_the_pool() -> None:
    torch.manual_seed(0)
    x = torch.randn(300, 4)
    labels = (x[:, 0] + 0.8 * torch.randn(300) > 0).long().tolist()  # noisy: the subset drawn matters
    by_seed = {
        probe_correct(x[:200], labels[:200], x[200:], labels[200:], seed=s, subset=50).tobytes()
        for s in (1, 2, 3)
    }
    assert len(by_seed) > 1
    whole = {
        probe_correct(x[:200], labels[:200], x[200:], labels[200:], seed=s, subset=200).tobytes()
        for s in (1, 2)
    }
    assert len(whole) == 1  # the whole pool: every seed fits the same data


@pytest.mark.parametrize("kind", ["bert", "linformer"])
def test_encoder_at_a_longer_length_wraps_positions_and_keeps_short_inputs(tmp_path, kind) -> None:
    from linformer_kit.models.convert import from_bert

    source = tiny_source("bert", "Model")  # 32 positions
    model = source if kind == "bert" else from_bert(source, projected_length=None, local_window=2)
    model.save_pretrained(tmp_path)
    longer = encoder_at(str(tmp_path), 80)
    table = longer.embeddings.position_embeddings.weight
    assert table.shape[0] == 80
    torch.testing.assert_close(table[32:64], model.embeddings.position_embeddings.weight)  # p -> p mod 32
    ids = torch.randint(5, 99, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.testing.assert_close(
            longer(input_ids=ids).last_hidden_state, model(input_ids=ids).last_hidden_state
        )
        assert longer(input_ids=torch.randint(5, 99, (1, 80))).last_hidden_state.shape == (1, 80, 32)
    assert encoder_at(str(tmp_path), 32).embeddings.position_embeddings.weight.shape[0] == 32  # no change


@pytest.mark.parametrize("length", [32, 80])
def test_encoder_at_refuses_weights_that_do_not_fit_the_config(tmp_path, length) -> None:
    import json

    tiny_source("bert", "Model").save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 3}))  # weights: 2 layers
    with pytest.raises(
        ValueError, match=r"encoder: the weights in .* do not fit a BertModel.*randomly initialised"
    ):
        encoder_at(str(tmp_path), length)


def test_encoder_at_copies_every_tensor_or_raises(tmp_path, monkeypatch) -> None:
    """The longer model takes the original's state whole (strict): only the buffers its config sizes are its own."""
    import linformer_kit.models.extend as extend_module

    tiny_source("bert", "Model").save_pretrained(tmp_path)
    longer = encoder_at(str(tmp_path), 80)
    assert longer.embeddings.position_ids.shape[-1] == 80  # the longer model's own buffer
    extend = extend_module.with_positions_for

    def losing_a_weight(state, source, target):
        state = dict(extend(state, source, target))
        del state["encoder.layer.1.output.dense.weight"]
        return state

    monkeypatch.setattr(extend_module, "with_positions_for", losing_a_weight)
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*encoder\.layer\.1\.output\.dense\.weight"):
        encoder_at(str(tmp_path), 80)
