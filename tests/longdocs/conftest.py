"""A tiny BERT reading 64 tokens with a word-level tokenizer that knows the suite's words, and a tiny data folder."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
import torch

from linformer_kit.longdocs import texts

PROSE_WORDS = [
    "the",
    "river",
    "ran",
    "past",
    "a",
    "mill",
    "where",
    "old",
    "men",
    "told",
    "long",
    "stories",
    "of",
    "ships",
    "and",
    "storms",
    "at",
    "sea",
]


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    sentences = []
    while sum(len(s.split()) for s in sentences) < words:
        sentences.append(
            " ".join(rng.choice(PROSE_WORDS) for _ in range(rng.randint(5, 12))).capitalize() + "."
        )
    return " ".join(sentences)


def vocabulary() -> list[str]:
    words = set(PROSE_WORDS)
    for construction in (texts.LONGEMBED, texts.ACCESS_CODE):  # the key and query words, names left out
        text = construction.filler + construction.key + construction.query
        words |= set(text.format(name="", digits="").lower().replace(".", " ").replace("?", " ").split())
    for group in (texts.FIRST_NAMES, texts.LAST_NAMES, texts.COLOURS, texts.THINGS, texts.PLACES):
        words |= {w.lower() for item in group for w in item.split()}
    words |= {"s", "pass", "key", "is", "remember", "it", "for", "what", "passkey", "where", "did", "hide", "hid",
              "in", "good", "bad", "film"} | {str(d) for d in range(10)}  # fmt: skip
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "?", "'", *sorted(words)]


def word_tokenizer():
    """BERT-style (lower case, punctuation split, [CLS] ... [SEP]) over `vocabulary()`: a digit a token."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(vocabulary())}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.BertPreTokenizer(), pre_tokenizers.Digits(True)]
    )
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)  # fmt: skip


def save_tiny_bert(path: Path, seed: int, blind: bool = False) -> Path:
    """A random tiny BertModel (64 positions) saved with `word_tokenizer`. `blind`: its last LayerNorm's weight
    is 0, so every output row is that LayerNorm's bias, whatever the text."""
    from transformers import BertConfig, BertModel

    tokenizer = word_tokenizer()
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=64, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)  # fmt: skip
    model = BertModel(config, add_pooling_layer=False)
    if blind:
        last = model.encoder.layer[-1].output.LayerNorm
        torch.nn.init.zeros_(last.weight)
        torch.nn.init.normal_(last.bias)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


@pytest.fixture(scope="session")
def tiny_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A random tiny BertModel (64 positions) saved with `word_tokenizer`."""
    return save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), seed=0)


@pytest.fixture(scope="session")
def other_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tiny_bert_dir's shape and tokenizer with other random weights: an original that differs from it."""
    return save_tiny_bert(tmp_path_factory.mktemp("other-bert"), seed=1)


@pytest.fixture(scope="session")
def blind_bert_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An original that tells no two texts apart: one vector for every row of every text."""
    return save_tiny_bert(tmp_path_factory.mktemp("blind-bert"), seed=0, blind=True)


def write_jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in records)


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """../shared/data's layout, small: 4 books, 3 articles, IMDB reviews of 40-90 words."""
    data = tmp_path_factory.mktemp("data")
    for split, seed in (("valid", 0), ("test", 2)):
        write_jsonl(
            data / "gutenberg" / f"{split}.jsonl.gz", [{"text": prose(seed + i, 400)} for i in range(2)]
        )
    for split in ("train", "test"):
        reviews = [{"text": ("good film " if i % 2 else "bad film ") * 5 + prose(i, 40 + i), "label": i % 2}
                   for i in range(40)]  # fmt: skip
        write_jsonl(data / "imdb" / f"{split}.jsonl.gz", reviews)
    wiki = data / "wikitext" / "wikitext-2-raw"
    wiki.mkdir(parents=True)
    articles = [
        f" = Title {i} = \n \n {prose(10 + i, 300)}\n \n = = Part = = \n {prose(20 + i, 100)}\n"
        for i in range(3)
    ]
    (wiki / "wiki.test.raw").write_text(" \n" + "".join(articles), encoding="utf-8")
    (data / "sst2").mkdir()
    rows = [f"{prose(30 + i, 8 + i)}\t{i % 2}" for i in range(12)]
    (data / "sst2" / "dev.tsv").write_text("sentence\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return data
