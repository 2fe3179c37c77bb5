"""Sentence embeddings of a text encoder, and the two measures that compare encoders by them.

    sentence_embedding   (b, n, D) last hidden states, (b, n) mask -> (b, D): mean over real tokens, normalised
    embed                texts -> (N, D) sentence embeddings, in the texts' order
    fidelity             mean_i cos(a_i, b_i): the same N documents under two models (1: identical)
    different_documents  mean_i cos(e_i, e_{i+1}): consecutive *different* documents under one model, the
                         level of a model that keeps nothing document-specific (its baseline)

The embedding is the pipeline of a mean-pooling sentence-transformers model (Pooling "mean", then
Normalize), e.g. all-MiniLM-L6-v2. `distill` measures its student with these (train/distill/run.py) and the
encoder study its models (reproduction/encoder_eval.py). The measures are formulas only: the sample
(which documents, how many, their length) is the caller's, and so is what a number means on it.

Needs torch alone at import (the tokenizer is any Hugging Face tokenizer, passed in).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


def sentence_embedding(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(b, n, D) last hidden states, (b, n) mask -> (b, D): the mean over real tokens, normalised.

    The pipeline of a mean-pooling sentence-transformers model (Pooling "mean", then Normalize), e.g.
    all-MiniLM-L6-v2: what `distill` measures and matches, and what the encoder study compares.
    """
    weight = attention_mask[..., None].to(hidden.dtype)  # (b, n, 1)
    return torch.nn.functional.normalize((hidden * weight).sum(1) / weight.sum(1), dim=-1)


def encoder_of(model: torch.nn.Module) -> torch.nn.Module:
    """The encoder whose `last_hidden_state` is embedded: the model itself (a `LinformerModel`, an
    `AutoModel` BERT), a head model's base model (`LinformerForMaskedLM.linformer`, `BertForMaskedLM.bert`),
    also inside a PEFT wrapper (its adapters stay in the modules, so they act)."""
    unwrap = getattr(model, "get_base_model", None)  # PEFT: the wrapped transformers model
    if callable(unwrap):
        model = unwrap()
    base = getattr(model, "base_model", model)  # transformers: the encoder of a head, itself for a base model
    return base if isinstance(base, torch.nn.Module) else model


@torch.no_grad()
def embed(
    model: torch.nn.Module,
    tokenizer: PreTrainedTokenizerBase,
    texts: list[str],
    max_length: int,
    batch_size: int = 16,
) -> torch.Tensor:
    """(N, D) normalised mean-pooled embeddings of `texts`, each truncated to `max_length` tokens, on the CPU.

    Batches are formed longest first (sentence-transformers' `encode` does the same) so a batch pads to
    lengths close to its own: the result is in `texts`' order and does not depend on the batching, since
    padding changes nothing (tests/models/test_embedding.py). The model runs in eval mode on its own device
    (`encoder_of`: a masked-LM or PEFT model's encoder); its train / eval mode is restored after.
    """
    if not texts:
        raise ValueError("embed: no texts to embed")
    if batch_size < 1:
        raise ValueError(f"embed: batch_size={batch_size}; expected at least 1")
    encoder = encoder_of(model)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        encoded = tokenizer(texts, truncation=True, max_length=max_length)  # once; each batch padded below
        ids, masks = encoded["input_ids"], encoded["attention_mask"]
        order = sorted(range(len(texts)), key=lambda i: -len(ids[i]))
        out = []
        for start in range(0, len(texts), batch_size):
            chosen = order[start : start + batch_size]
            batch = tokenizer.pad(
                {"input_ids": [ids[i] for i in chosen], "attention_mask": [masks[i] for i in chosen]},
                return_tensors="pt",
            )
            input_ids, attention_mask = batch["input_ids"].to(device), batch["attention_mask"].to(device)
            hidden = encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            out.append(sentence_embedding(hidden, attention_mask).cpu())
    finally:
        model.train(was_training)
    return torch.cat(out)[torch.tensor(order).argsort()]  # back to `texts`' order


def fidelity(a: torch.Tensor, b: torch.Tensor) -> float:
    """mean_i cos(a_i, b_i) of two models' (N, D) normalised embeddings of the same N documents."""
    if a.shape != b.shape:
        raise ValueError(
            f"fidelity: embeddings of shapes {tuple(a.shape)} and {tuple(b.shape)}; expected the same"
        )
    return float((a * b).sum(-1).mean())


def different_documents(embeddings: torch.Tensor) -> float:
    """mean_i cos(e_i, e_{i+1}) of one model's (N, D) normalised embeddings of N different documents: the
    fidelity of a model that keeps nothing document-specific. Needs N >= 2 (ValueError names N)."""
    if len(embeddings) < 2:
        raise ValueError(
            f"different_documents: {len(embeddings)} embedding(s); two different documents need at least 2"
        )
    return float((embeddings[:-1] * embeddings[1:]).sum(-1).mean())
