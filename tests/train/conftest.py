"""Tiny on-disk fixtures for the training tests: a few KB of text, a learnable CSV, a tiny model."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import torch

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.train.data import load_text, train_tokenizer

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "a",
    "mat",
    "while",
    "one",
    "dog",
    "ran",
    "far",
    "away",
    "from",
    "the",
    "big",
    "red",
    "house",
    "and",
    "small",
    "birds",
    "sang",
]


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny models train many times faster on one thread, and far more so on a shared, loaded CPU."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """~6 KB of text drawn from a 20-word vocabulary (learnable: frequent words, short range structure)."""
    rng = random.Random(0)
    folder = tmp_path_factory.mktemp("corpus")
    paragraphs = [" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(40)]
    (folder / "train.txt").write_text("\n\n".join(paragraphs[:32]))
    (folder / "valid.txt").write_text("\n\n".join(paragraphs[32:]))
    return folder


@pytest.fixture(scope="session")
def sentiment_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Label 1 iff the sentence contains "good" (else it contains "bad"): learnable from one token."""
    rng = random.Random(1)
    folder = tmp_path_factory.mktemp("sentiment")
    for split, size in (("train", 160), ("dev", 48)):
        rows = ["sentence,label"]
        for _ in range(size):
            label = rng.randint(0, 1)
            words = [rng.choice(WORDS) for _ in range(6)]
            words.insert(rng.randint(0, 6), "good" if label else "bad")
            rows.append(f"{' '.join(words)},{label}")
        (folder / f"{split}.csv").write_text("\n".join(rows) + "\n")
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> Path:
    """A randomly initialised tiny Linformer MLM saved with a BPE tokenizer (max input 32 tokens)."""
    folder = tmp_path_factory.mktemp("tiny_model")
    text = load_text([str(corpus / "train.txt")], "text", "train")
    tokenizer = train_tokenizer(text, vocab_size=300, sample_chars=100_000)
    config = LinformerConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=34, projected_length=8,
    )  # fmt: skip
    torch.manual_seed(0)  # the same tiny model every session: tests that finetune it are repeatable
    LinformerForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
