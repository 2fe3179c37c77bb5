"""models/embedding.py: sentence embeddings of any encoder (batching, order, heads, PEFT) and the measures."""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.models import tiny_linformer_config, tiny_source
from tests.fixtures.tokenizers import build_tiny_tokenizer
from torch.testing import assert_close

from linformer_kit.models import LinformerForMaskedLM
from linformer_kit.models.embedding import (
    different_documents,
    embed,
    encoder_of,
    fidelity,
    sentence_embedding,
)

TEXTS = [  # every length from 1 to 7 words, out of order: batches formed longest first must be put back
    "cat",
    "the dog ran in the park while",
    "mat",
    "we cut the text",
    "attention is",
    "the cat sat on the",
    "a dog slept",
]


@pytest.fixture
def tokenizer():
    return build_tiny_tokenizer(max_length=32)  # a word-level vocabulary: every word its own id


def _unit(n: int, d: int, seed: int) -> torch.Tensor:
    return torch.nn.functional.normalize(
        torch.randn(n, d, generator=torch.Generator().manual_seed(seed)), dim=-1
    )


def test_sentence_embedding_is_the_normalised_mean_over_real_tokens_only() -> None:
    hidden = torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(0))
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    got = sentence_embedding(hidden, mask)
    assert_close(got[0], torch.nn.functional.normalize(hidden[0, :3].mean(0), dim=-1))
    assert_close(got.norm(dim=-1), torch.ones(2))
    changed = hidden.clone()
    changed[0, 3:] = 1e3  # padded positions' values
    assert_close(sentence_embedding(changed, mask), got, rtol=0, atol=0)


def test_sentence_embedding_is_still_importable_from_the_sentence_transformers_module() -> None:
    from linformer_kit.models import sentence_transformers_folder

    assert sentence_transformers_folder.sentence_embedding is sentence_embedding


def test_embed_does_not_depend_on_batch_size_or_order(tokenizer) -> None:
    model = tiny_source("bert", "Model")
    base = embed(model, tokenizer, TEXTS, max_length=16, batch_size=16)
    assert base.shape == (len(TEXTS), 32)
    assert_close(base.norm(dim=-1), torch.ones(len(TEXTS)))
    for batch_size in (1, 2, 3):
        assert_close(
            embed(model, tokenizer, TEXTS, max_length=16, batch_size=batch_size), base, rtol=1e-5, atol=1e-6
        )
    order = [3, 0, 6, 1, 5, 2, 4]
    shuffled = embed(model, tokenizer, [TEXTS[i] for i in order], max_length=16, batch_size=2)
    assert_close(shuffled, base[order], rtol=1e-5, atol=1e-6)  # row i is text i, wherever it was batched
    assert torch.cdist(base, base).add(torch.eye(len(TEXTS))).min() > 1e-3  # distinct: a mix-up would show


def test_embed_truncates_to_max_length(tokenizer) -> None:
    model = tiny_source("bert", "Model")
    long, cut = "the cat sat on the mat", "the cat"  # <s> + 2 words + </s>: 4 tokens
    assert_close(embed(model, tokenizer, [long], max_length=4), embed(model, tokenizer, [cut], max_length=16))
    assert not torch.allclose(
        embed(model, tokenizer, [long], max_length=16), embed(model, tokenizer, [cut], 16)
    )


def test_embed_reads_the_encoder_of_a_masked_lm_and_restores_the_mode(tokenizer) -> None:
    torch.manual_seed(0)
    linformer = LinformerForMaskedLM(tiny_linformer_config(hidden_dropout_prob=0.1)).train()
    bert = tiny_source("bert", "ForMaskedLM").train()
    for model, encoder in ((linformer, linformer.linformer), (bert, bert.bert)):
        assert encoder_of(model) is encoder
        got = embed(
            model, tokenizer, TEXTS, max_length=16, batch_size=2
        )  # dropout 0.1: eval mode, or it varies
        assert model.training, "the mode it came in"
        assert_close(got, embed(encoder, tokenizer, TEXTS, max_length=16))
    model = tiny_source("bert", "Model")
    assert encoder_of(model) is model
    embed(model, tokenizer, TEXTS, max_length=16)
    assert not model.training


def test_embed_of_a_peft_model_runs_its_adapters(tokenizer) -> None:
    peft = pytest.importorskip("peft")
    model = LinformerForMaskedLM(tiny_linformer_config())
    before = embed(model, tokenizer, TEXTS, max_length=16)
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=2, target_modules=["query", "value"]))
    assert encoder_of(wrapped) is model.linformer
    assert_close(embed(wrapped, tokenizer, TEXTS, max_length=16), before)  # LoRA starts at B = 0
    with torch.no_grad():
        for name, parameter in wrapped.named_parameters():
            if "lora_B" in name:
                parameter.fill_(0.5)
    assert not torch.allclose(embed(wrapped, tokenizer, TEXTS, max_length=16), before, atol=1e-3)


def test_embed_refuses_no_texts_and_a_batch_below_one(tokenizer) -> None:
    model = tiny_source("bert", "Model")
    with pytest.raises(ValueError, match="no texts"):
        embed(model, tokenizer, [], max_length=16)
    with pytest.raises(ValueError, match="batch_size=0"):
        embed(model, tokenizer, TEXTS, max_length=16, batch_size=0)


def test_fidelity_is_one_for_the_same_embeddings_and_near_zero_for_unrelated_ones() -> None:
    a, b = _unit(200, 64, 0), _unit(200, 64, 1)
    assert fidelity(a, a) == pytest.approx(1.0)
    assert fidelity(a, -a) == pytest.approx(-1.0)
    assert abs(fidelity(a, b)) < 0.05
    with pytest.raises(ValueError, match=r"shapes \(200, 64\) and \(199, 64\)"):
        fidelity(a, b[:-1])


def test_different_documents_compares_consecutive_rows_and_needs_two() -> None:
    assert different_documents(torch.ones(3, 1)) == pytest.approx(1.0)
    rows = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # consecutive rows orthogonal
    assert different_documents(rows) == pytest.approx(0.0)
    assert abs(different_documents(_unit(200, 64, 0))) < 0.05
    for count in (0, 1):
        with pytest.raises(ValueError, match=f"{count} embedding.*at least 2"):
            different_documents(_unit(count, 4, 0))
