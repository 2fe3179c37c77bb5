"""Is a converted or distilled encoder as good as the original? Fidelity, a frozen-embedding probe, retrieval.

Sentence embeddings are the sentence-transformers pipeline of all-MiniLM-L6-v2: the mean of the last
hidden states over real tokens, normalised (`embed`, models/embedding.py). On documents the student did
not see:

    fidelity     mean_i cos(e_i^student, e_i^original), the same document under both models; beside it
                 the original's mean cos(e_i, e_{i+1}) of two *different* documents (the no-information level)
    probe        MTEB's classification protocol: logistic regression on frozen embeddings of a labelled
                 train subset, accuracy on the test documents; one subset per seed
    retrieval    each document cut into two halves (by tokens); recall@1 of finding a first half's own
                 second half among all second halves by cosine

Torch, numpy and scikit-learn (the probe); `embed`, `fidelity` and `different_documents` are
models/embedding.py's (importable here too); the models are any `AutoModel`-loadable encoders,
read at a length above their own as `convert --max-length` / `linformer extend` would extend them (`encoder_at`).
"""

from __future__ import annotations

import numpy as np
import torch

# re-exported (their home is models/embedding.py) for the study's scripts (scripts/cpu/encoder_study.py)
from linformer_kit.models.embedding import different_documents as different_documents
from linformer_kit.models.embedding import embed as embed
from linformer_kit.models.embedding import fidelity as fidelity
from linformer_kit.models.extend import encoder_at as encoder_at  # its home: models/extend.py


def probe_correct(
    train: torch.Tensor, train_labels: list[int], test: torch.Tensor, test_labels: list[int], seed: int,
    subset: int,
) -> np.ndarray:  # fmt: skip
    """(N,) bool: which test documents a logistic regression on `subset` train embeddings drawn with `seed`
    classifies right (MTEB's protocol; a subset below the pool makes the seeds differ)."""
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(seed)
    chosen = rng.choice(len(train), size=min(subset, len(train)), replace=False)
    classifier = LogisticRegression(max_iter=1000, random_state=seed)
    classifier.fit(train[chosen].numpy(), np.asarray(train_labels)[chosen])
    return classifier.predict(test.numpy()) == np.asarray(test_labels)


def probe_accuracy(
    train: torch.Tensor, train_labels: list[int], test: torch.Tensor, test_labels: list[int], seed: int,
    subset: int,
) -> float:  # fmt: skip
    """Accuracy of `probe_correct`'s classifier over all test documents."""
    return float(probe_correct(train, train_labels, test, test_labels, seed, subset).mean())


def halves(tokenizer, texts: list[str], max_length: int) -> tuple[list[str], list[str]]:
    """Each text's first and second half by tokens (at most `max_length` tokens each), decoded back."""
    first, second = [], []
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        middle = len(ids) // 2
        first.append(tokenizer.decode(ids[:middle][:max_length]))
        second.append(tokenizer.decode(ids[middle:][:max_length]))
    return first, second


def recall_at_1(queries: torch.Tensor, documents: torch.Tensor) -> float:
    """Share of queries i whose most similar document (cosine) is document i."""
    return float(((queries @ documents.T).argmax(-1) == torch.arange(len(queries))).float().mean())
