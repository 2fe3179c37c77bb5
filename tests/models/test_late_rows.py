"""Late spans through sentence-transformers (models/late_rows.py): one pass of the user's `encode`, its text
tokens pooled per span as the suite's late chunking pools them; Chamfer as the suite scores it."""

from __future__ import annotations

import pytest
import torch
from torch.nn import functional as F
from torch.testing import assert_close

from linformer_kit.models.late_rows import chamfer, late_rows
from linformer_kit.models.retrieval import retrieval_scores

st = pytest.importorskip("sentence_transformers")


def test_late_rows_pool_each_span_of_the_whole_reading(st_folder) -> None:
    model = st.SentenceTransformer(str(st_folder))
    texts = ["hello world " * 6, "world", "hello hello world"]
    rows = late_rows(model, texts, span=4, batch_size=2)
    transformer = model[0].auto_model.eval()
    for text, got in zip(texts, rows, strict=True):
        batch = model.tokenize([text])
        with torch.no_grad():
            states = transformer(**batch).last_hidden_state[0]  # (n, D), [CLS] first and [SEP] last
        inner = states[1:-1]
        expected = torch.cat([F.normalize(inner[a : a + 4].mean(0, keepdim=True), dim=-1)
                              for a in range(0, len(inner), 4)])  # fmt: skip
        assert got.shape == (-(-len(inner) // 4), 32)
        assert_close(got, expected, rtol=1e-4, atol=1e-5)
    # a text of one span: one row, the model's own sentence embedding of its text tokens
    assert rows[1].shape[0] == 1


def test_chamfer_is_the_suite_s_and_a_bad_span_is_named(st_folder) -> None:
    torch.manual_seed(0)
    queries = [F.normalize(torch.randn(m, 8), dim=-1) for m in (1, 3)]
    documents = [F.normalize(torch.randn(m, 8), dim=-1) for m in (2, 5, 1)]
    scores = chamfer(queries, documents)
    assert scores.shape == (2, 3)
    assert_close(scores[1, 1], (queries[1] @ documents[1].T).max(-1).values.mean())
    assert_close(scores, retrieval_scores(queries, documents, chamfer=True))
    model = st.SentenceTransformer(str(st_folder))
    with pytest.raises(ValueError, match="span=0: expected a whole number of tokens >= 1"):
        late_rows(model, ["text"], span=0)
    with pytest.raises(ValueError, match=r"texts='hello world': expected a list of texts, got one str"):
        late_rows(model, "hello world")
