"""What the spectrum reads: a saved encoder that returns its attention maps, and text cut into inputs.

    load_encoder           AutoModel with eager attention (so it returns maps) and its tokenizer
    max_input_length       the longest input the model and its tokenizer take
    read_text, chunk_text  a text file's documents, cut into inputs of exactly seq_len tokens
    no_context_warning     the note for a model whose metrics.json says it learned no context

Its own room apart from analysis/spectrum.py, which runs a model over inputs and averages: these
load files and tokenize, and `compute_spectrum` takes any encoder and any token ids without them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from linformer_kit.data_files import read_texts


def read_text(path: str) -> str:
    """The documents of `path`, one after another (a blank line between two)."""
    return "\n\n".join(read_texts(path))


def max_input_length(model: nn.Module, tokenizer: Any) -> int:
    """Longest input the model takes: RoBERTa-style positions start at pad_token_id + 1."""
    from transformers import PreTrainedConfig

    config = model.config
    if not isinstance(config, PreTrainedConfig):
        raise ValueError(
            f"model: expected a transformers encoder (with a config), got {type(model).__name__}"
        )
    limit = int(config.max_position_embeddings)
    padding_idx = getattr(getattr(model, "embeddings", None), "padding_idx", None)
    if padding_idx is not None:  # RoBERTa, Linformer: positions padding_idx+1 .. max_position_embeddings-1
        limit -= int(padding_idx) + 1
    tokenizer_limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < limit:
        limit = tokenizer_limit
    return limit


def special_tokens_around(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids a tokenizer puts before and after one text (e.g. <s> ... </s>, [CLS] ... [SEP]).

    Found by encoding a probe with and without special tokens (transformers 5 fast tokenizers have
    no `build_inputs_with_special_tokens`), so it works for any tokenizer's post-processor.
    """
    with_special = tokenizer("a", add_special_tokens=True)["input_ids"]
    body = tokenizer("a", add_special_tokens=False)["input_ids"]
    for start in range(len(with_special) - len(body) + 1):
        if with_special[start : start + len(body)] == body:
            return with_special[:start], with_special[start + len(body) :]
    raise ValueError(
        f"cannot locate the text inside the tokenizer's special tokens: {with_special} vs {body}"
    )


def chunk_text(text: str, tokenizer: Any, seq_len: int, max_inputs: int) -> list[list[int]]:
    """Cut `text` into at most `max_inputs` inputs of exactly `seq_len` tokens (special tokens included).

    Tokenizes paragraph by paragraph and stops as soon as enough tokens are in hand, so a whole book
    costs only what is analysed. A text shorter than one input gives one shorter input.
    """
    prefix, suffix = special_tokens_around(tokenizer)
    body_len = seq_len - len(prefix) - len(suffix)
    if body_len < 1:
        raise ValueError(f"seq_len={seq_len} leaves no room for text after the tokenizer's special tokens")
    buffer: list[int] = []
    chunks: list[list[int]] = []
    for paragraph in text.split("\n\n"):
        if not paragraph.strip():
            continue
        # verbose=False: no "longer than the specified maximum" warning, the paragraph is cut into inputs below
        buffer.extend(tokenizer(paragraph.strip(), add_special_tokens=False, verbose=False)["input_ids"])
        while len(buffer) >= body_len and len(chunks) < max_inputs:
            chunks.append(prefix + buffer[:body_len] + suffix)
            buffer = buffer[body_len:]
        if len(chunks) >= max_inputs:
            break
    if not chunks and buffer:
        chunks.append(prefix + buffer + suffix)
    return chunks


def load_encoder(path: str, device: str | None = None) -> tuple[nn.Module, Any]:
    """AutoModel (eager attention, so it can return maps) and AutoTokenizer from a directory or name."""
    from transformers import AutoModel, AutoTokenizer

    import linformer_kit.models  # noqa: F401  (registers model_type="linformer" with the Auto classes)
    from linformer_kit.models.loading import load_pretrained

    # every encoder weight from the checkpoint (a config.json of another model type is an error); the
    # pooler an MLM checkpoint lacks and its MLM head are not used here: no line about them
    # a Module to the type checker: transformers' `to` is typed as Module.to unbound (self its first argument)
    model: nn.Module = load_pretrained(
        AutoModel, path, "model", report_head=False, attn_implementation="eager"
    )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as error:
        raise ValueError(
            f"model: cannot load the tokenizer of {path!r}: {str(error).splitlines()[0]}"
        ) from None
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    return model.to(device).eval(), tokenizer


def no_context_warning(model: str) -> str | None:
    """A warning when the model's own metrics.json (`linformer pretrain`) says it learned no context.

    Such a model's attention is close to uniform or positional: its maps are low rank because it
    reads nothing yet, and a k taken from them says nothing about a trained model.
    """
    path = Path(model) / "metrics.json"
    try:
        metrics = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return None
    if not isinstance(metrics, dict) or metrics.get("learned_context") is not False:
        return None
    return (
        f"WARNING: this model has not learned to use context (validation perplexity "
        f"{metrics.get('perplexity', float('nan')):.1f} vs its no-context floor "
        f"{metrics.get('no_context_perplexity', float('nan')):.1f}, metrics.json): its attention maps "
        "reflect an untrained model, and the recommended projected_length may be far too small; "
        "measure a model that left the floor"
    )
