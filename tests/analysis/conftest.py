"""A tiny random RoBERTa with a tokenizer built here, saved like a Hub model directory. No download."""

from __future__ import annotations

from pathlib import Path

import pytest

SENTENCES = [
    "the cat sat on the mat and looked at the dog",
    "a dog ran in the park while the cat slept",
    "attention is low rank in the higher layers of the model",
    "we cut the text into chunks of tokens and look at every head",
]


def build_tiny_tokenizer(max_length: int):
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's ids: bos 0, pad 1, eos 2
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(SENTENCES, trainers.WordLevelTrainer(special_tokens=specials))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        mask_token="<mask>",
        model_max_length=max_length,
    )


def tiny_roberta_config(vocab_size: int):
    from transformers import RobertaConfig

    return RobertaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=34,  # longest input 34 - pad_token_id(1) - 1 = 32
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )


@pytest.fixture(scope="session")
def tiny_roberta_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from transformers import RobertaModel

    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny-roberta")
    tokenizer = build_tiny_tokenizer(max_length=32)
    model = RobertaModel(tiny_roberta_config(len(tokenizer)), add_pooling_layer=False)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def text_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("text") / "text.txt"
    path.write_text("\n\n".join(SENTENCES * 6), encoding="utf-8")  # ~280 words: several 16-token inputs
    return path
