"""A sentence-transformers folder stays one through `linformer convert` (and `distill`, which shares the code)."""

from __future__ import annotations

import json

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.cli.main import main

st = pytest.importorskip("sentence_transformers")


def test_convert_keeps_the_pipeline_and_with_full_attention_the_embeddings(st_folder, tmp_path) -> None:
    dst = tmp_path / "dst"
    assert main(["convert", str(st_folder), str(dst), "--projected-length", "none"]) == 0
    source, converted = st.SentenceTransformer(str(st_folder)), st.SentenceTransformer(str(dst))
    assert [type(m).__name__ for m in converted] == [type(m).__name__ for m in source]
    assert type(converted[0].auto_model).__name__ == "LinformerModel"
    assert converted.max_seq_length == 16  # the source's, below the model's longest input
    texts = ["hello world", "world hello hello world world", "hello"]
    assert_close(converted.encode(texts, convert_to_tensor=True), source.encode(texts, convert_to_tensor=True),
                 rtol=1e-4, atol=1e-5)  # fmt: skip


def test_a_longer_conversion_sets_max_seq_length(st_folder, tmp_path) -> None:
    dst = tmp_path / "dst"
    assert main(["convert", str(st_folder), str(dst), "--projected-length", "8", "--max-length", "64"]) == 0
    assert json.loads((dst / "sentence_bert_config.json").read_text())["max_seq_length"] == 64
    assert st.SentenceTransformer(str(dst)).max_seq_length == 64


def test_extend_keeps_the_pipeline_reading_the_new_length(st_folder, tmp_path) -> None:
    linformer, longer = tmp_path / "linformer", tmp_path / "longer"
    assert (
        main(["convert", str(st_folder), str(linformer), "--projected-length", "8", "--local-window", "4"])
        == 0
    )
    assert main(["extend", str(linformer), str(longer), "--max-length", "64"]) == 0
    assert json.loads((longer / "sentence_bert_config.json").read_text())["max_seq_length"] == 64
    model = st.SentenceTransformer(str(longer))
    assert model.max_seq_length == 64
    assert [type(m).__name__ for m in model] == [
        type(m).__name__ for m in st.SentenceTransformer(str(linformer))
    ]
    long_text = " ".join(["hello world"] * 25)  # 50 words: past the source's 32 tokens
    assert model.tokenize([long_text])["input_ids"].shape[1] > 32  # not cut at the source's length
    embedding = model.encode([long_text], convert_to_tensor=True)
    assert_close(embedding.norm(dim=-1), torch.ones(1), rtol=0, atol=1e-5)  # Normalize kept
