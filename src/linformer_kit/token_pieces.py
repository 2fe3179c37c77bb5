"""The one way the kit cuts a text's token ids into pieces, and puts a tokenizer's special tokens around them.

    pieces               consecutive pieces of at most `size` ids: 512-token chunks (longdocs, the student
                         benchmark's chunked reading) are pieces of 510 ids with [CLS] / [SEP] around each
    special_ends         the ids the tokenizer puts before and after a text
    with_special_tokens  ids between them
    Spans                a list of texts' token spans, cut back to text at token boundaries (the characters
                         kept): the long-document suite's passages and halves, distill's held-out passages

Spans, chunks and blocks are cut from a text's ids without special tokens; each then gets the ids the
tokenizer's own post-processor puts around a text ([CLS] ... [SEP] for BERT, <s> ... </s> for RoBERTa),
read once from encoding nothing. transformers 5 dropped `build_inputs_with_special_tokens` from its fast
tokenizers, and the cls / bos attribute guess differs by family; the post-processor is what `tokenizer(text)`
itself applies, so a piece reads as the same text tokenized whole would.
"""

from __future__ import annotations

import random
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


class TooShort(ValueError):
    """The texts hold no span of the length asked for: that length is skipped, not an error of the input."""


class Spans:
    """Token spans of a list of texts, cut back to text at token boundaries (the original characters kept)."""

    def __init__(self, tokenizer, texts: list[str]) -> None:
        self.texts = texts
        # whole, however long: the spans are cut below, so no text reaches a model whole, and the tokenizer's
        # "longer than the specified maximum ... indexing errors" warning would be false (verbose=False)
        encoded = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        self.offsets: list[list[tuple[int, int]]] = encoded["offset_mapping"]

    def start(self, tokens: int, rng: random.Random) -> tuple[int, int]:
        """(text index, token index) of a random span of `tokens` tokens, from a text that holds one."""
        long_enough = [i for i, o in enumerate(self.offsets) if len(o) >= tokens]
        if not long_enough:
            longest = max((len(o) for o in self.offsets), default=0)
            raise TooShort(f"length: no text holds {tokens} tokens (the longest has {longest})")
        i = rng.choice(long_enough)
        return i, rng.randrange(len(self.offsets[i]) - tokens + 1)

    def text(self, start: tuple[int, int], tokens: int) -> str:
        """The text of `tokens` tokens from `start` (fewer where the text ends); re-tokenized it gives
        at most `tokens` tokens for a WordPiece / BPE tokenizer (the same boundaries)."""
        i, first = start
        offsets = self.offsets[i][first : first + tokens]
        if not offsets:
            return ""
        return self.texts[i][offsets[0][0] : offsets[-1][1]]
