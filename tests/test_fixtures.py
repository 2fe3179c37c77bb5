"""The shared fixtures do what the tests that use them assume."""

from __future__ import annotations

from pathlib import Path

from transformers import AutoTokenizer

from tests.fixtures.tokenizers import write_tokenizer


def test_tiny_tokenizer_keeps_its_words(tmp_path: Path) -> None:
    """Every word a test writes must not turn into [UNK] (documents that differ only in length)."""
    write_tokenizer(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    assert tokenizer("hello world")["input_ids"] == [2, 5, 6, 3]
    assert tokenizer("world hello hello")["input_ids"] == [2, 6, 5, 5, 3]
