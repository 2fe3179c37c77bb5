"""Fixtures of the model tests: a sentence-transformers folder as the Hub ships them."""

from __future__ import annotations

import json

import pytest
from tests.fixtures.models import tiny_source
from tests.fixtures.tokenizers import write_tokenizer

MODULES = [  # all-MiniLM-L6-v2's pipeline: Transformer -> mean Pooling -> Normalize
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]
POOLING = {"word_embedding_dimension": 32, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
           "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}  # fmt: skip


@pytest.fixture
def st_folder(tmp_path):
    """A sentence-transformers folder as the Hub ships them (the files written by hand, as they are)."""
    folder = tmp_path / "st"
    tiny_source("bert", "Model").save_pretrained(folder)
    write_tokenizer(folder)
    (folder / "modules.json").write_text(json.dumps(MODULES))
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(POOLING))
    (folder / "sentence_bert_config.json").write_text(
        json.dumps({"max_seq_length": 16, "do_lower_case": False})
    )
    return folder
