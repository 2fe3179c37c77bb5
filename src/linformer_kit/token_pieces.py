"""The one way the kit cuts a text's token ids into pieces, and puts a tokenizer's special tokens around them.

    pieces               consecutive pieces of at most `size` ids: 512-token chunks (longdocs, the student
                         benchmark's chunked reading) are pieces of 510 ids with [CLS] / [SEP] around each
    special_ends         the ids the tokenizer puts before and after a text
    with_special_tokens  ids between them

Spans, chunks and blocks are cut from a text's ids without special tokens; each then gets the ids the
tokenizer's own post-processor puts around a text ([CLS] ... [SEP] for BERT, <s> ... </s> for RoBERTa),
read once from encoding nothing. transformers 5 dropped `build_inputs_with_special_tokens` from its fast
tokenizers, and the cls / bos attribute guess differs by family; the post-processor is what `tokenizer(text)`
itself applies, so a piece reads as the same text tokenized whole would.
"""

from __future__ import annotations

from typing import Any


def special_ends(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text: ([CLS],), ([SEP],) for BERT; ([], []) for none."""
    empty = list(tokenizer("")["input_ids"])
    return empty[:1], empty[1:]


def with_special_tokens(tokenizer: Any, ids: list[int]) -> list[int]:
    """`ids` between the tokenizer's own special tokens."""
    first, last = special_ends(tokenizer)
    return first + ids + last


def pieces(ids: list[int], size: int) -> list[list[int]]:
    """Consecutive pieces of at most `size` ids, in order (at least one: empty for an empty text)."""
    if size < 1:
        raise ValueError(f"pieces: size={size}; expected at least 1 id a piece")
    return [ids[a : a + size] for a in range(0, len(ids), size)] or [[]]
