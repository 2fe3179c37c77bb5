"""`contextual-chunks-512` (models/readings.py): the original's chunk rows, each plus the model's whole reading
pooled over the same chunk's tokens, normalised."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F
from torch.testing import assert_close

from linformer_kit.models.readings import MODEL_METHODS, PASSES, rows_of


def _chunk_rows(m: int, d: int = 8) -> torch.Tensor:
    return F.normalize(torch.randn(m, d), dim=-1)


def test_each_chunk_row_gains_the_whole_reading_of_its_own_tokens() -> None:
    """Chunks of 4 text tokens (chunk 6 with its two special tokens); a text of 10 tokens: 3 chunks."""
    torch.manual_seed(0)
    chunks = _chunk_rows(3)
    whole = torch.randn(12, 8)  # [CLS] + 10 text tokens + [SEP]
    (got,) = rows_of("contextual-chunks-512", {"chunks": [chunks], "whole": [whole]}, chunk=6)
    text = whole[1:-1]
    spans = [text[0:4], text[4:8], text[8:10]]
    want = torch.stack([F.normalize(c + F.normalize(s.mean(0), dim=0), dim=0) for c, s in zip(chunks, spans)])
    assert_close(got, want)
    assert_close(got.norm(dim=-1), torch.ones(3))


def test_chunks_beyond_the_whole_reading_keep_their_own_rows() -> None:
    """A text longer than the model reads: its last chunks have no context row and stay the original's."""
    torch.manual_seed(1)
    chunks = _chunk_rows(4)
    whole = torch.randn(2 + 8, 8)  # the model read 8 of the text's 16 tokens
    (got,) = rows_of("contextual-chunks-512", {"chunks": [chunks], "whole": [whole]}, chunk=6)
    assert_close(got[2:], chunks[2:])
    assert not torch.allclose(got[:2], chunks[:2])


def test_a_whole_reading_longer_than_the_chunks_is_refused() -> None:
    """More spans than chunks: the model's tokenizer is not the original's."""
    with pytest.raises(ValueError, match="must share one tokenizer"):
        rows_of("contextual-chunks-512", {"chunks": [_chunk_rows(1)], "whole": [torch.randn(12, 8)]}, chunk=6)


def test_it_reads_the_original_s_chunks_and_the_model_s_whole_reading() -> None:
    assert PASSES["contextual-chunks-512"] == ("chunks", "whole")
    assert "contextual-chunks-512" in MODEL_METHODS  # records name the model under test
