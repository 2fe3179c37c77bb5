"""Pretraining data: whole documents are tokenized, then cut into blocks, without transformers' too-long warning."""

from __future__ import annotations

from pathlib import Path

import datasets
from transformers import AutoTokenizer

from linformer_kit.train.data import pack_blocks

TOO_LONG = "sequence-length-is-longer-than-the-specified-maximum"  # transformers' once-per-tokenizer flag


def test_long_documents_are_cut_into_blocks_without_a_too_long_warning(tiny_model_dir: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.model_max_length = 16
    document = " ".join(["the cat sat on a mat while one dog ran far away"] * 20)  # ~240 tokens
    blocks = pack_blocks(datasets.Dataset.from_dict({"text": [document]}), tokenizer, 16, "pack")
    assert len(blocks) > 5
    assert {len(ids) for ids in blocks["input_ids"]} == {16}
    assert not tokenizer.deprecation_warnings.get(TOO_LONG)  # set when the warning is printed
    tokenizer(document)  # the check itself: a plain call does warn
    assert tokenizer.deprecation_warnings.get(TOO_LONG)
