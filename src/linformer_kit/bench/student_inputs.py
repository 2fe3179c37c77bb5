"""The inputs of scope "student": real text cut to exactly n tokens, and the same texts as chunks.

    ids = text_ids(tokenizer, None, at_least=4096)            # the built-in text (or a file's), as token ids
    rows = token_rows(ids, n=4096, batch=1, ends=ends_of(tokenizer))   # (1, 4096): [CLS] 4094 ids [SEP]
    chunks = chunked(rows, 512, ends_of(tokenizer))           # (8, 512): each chunk [CLS] ... [SEP]

Row i of a batch is the next stretch of the text after row i - 1 (the text repeated when it runs out),
so the texts of a batch differ, and every model reads the same ids. Chunking is what a user of a
512-token encoder does with a long text: ceil(n / chunk) chunks of `chunk` tokens, each its own
[CLS] ... [SEP], all in one batch; the last chunk holds what is left (n - (pieces - 1) * chunk tokens,
special tokens included) and is padded to `chunk`, with an attention mask. A text's chunks hold as
many real tokens as the text does.

Torch and the tokenizer only (no model): the memory subprocess builds the same inputs.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import torch

from linformer_kit.data_files import read_texts
from linformer_kit.token_pieces import pieces as text_pieces
from linformer_kit.token_pieces import special_ends

# The default text: no download. Plain prose of everyday words, repeated to any length; the time of a
# forward depends on the shapes, not on which ids fill them.
BUILT_IN_TEXT = (
    "The river rose slowly through the night, and by morning the lower fields were under water. "
    "Farmers who had lived in the valley for years said they had never seen it climb so fast. "
    "Some of them moved their animals to the hills before dawn; others waited, hoping the rain "
    "would stop. In the town, the old bridge was closed, and children watched from the windows "
    "as branches and broken fences drifted past. The mayor spoke on the radio at noon. She asked "
    "people to stay at home, to keep clean water in every pot they owned, and to check on their "
    "neighbours, especially those who lived alone. By evening the rain had eased. The clouds moved "
    "east over the mountains, and for the first time in three days the sun touched the roofs. "
    "Nobody knew yet how much had been lost. A teacher from the school on the hill wrote later that "
    "the week of the flood was the week the valley learned its own names again: people who had "
    "passed each other for years without a word now carried sandbags side by side, shared bread "
    "and blankets, and told stories late into the night about the winters of their childhood, the "
    "first car in the village, and the summer the lake froze twice. When the water went down, it "
    "left a line of mud on every wall, at the height of a man's shoulder. Some families painted "
    "over it. Others kept it, and still show it to visitors, with the date written beside it in "
    "small careful letters. Scientists came in the spring to measure the riverbed and the hills "
    "above it. Their report, long and full of numbers, said that floods like this one would come "
    "more often, and that the valley would have to decide what kind of place it wanted to be. "
)


class Ends(NamedTuple):
    """The special ids a text is wrapped in, and the id padding fills a short chunk with."""

    first: int | None  # [CLS] (or <s>): None if the tokenizer has none
    last: int | None  # [SEP] (or </s>)
    pad: int


def ends_of(tokenizer: Any) -> Ends:
    """[CLS] / [SEP] / [PAD] of a BERT tokenizer (<s> / </s> / <pad> of a RoBERTa one): the ids its own
    post-processor puts around a text (special_tokens.py)."""
    first, last = special_ends(tokenizer)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    return Ends(first[0] if first else None, last[-1] if last else None, pad)


def text_ids(tokenizer: Any, text_file: str | None, at_least: int) -> list[int]:
    """Token ids (no special tokens) of `text_file`'s documents in order (the built-in text if None),
    read until at least `at_least` ids or the file's end; ValueError if the text holds no token."""
    texts = read_texts(text_file) if text_file else iter([BUILT_IN_TEXT])
    ids: list[int] = []
    for text in texts:
        ids += tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) >= at_least:
            break
    if not ids:
        raise ValueError(f"text_file {text_file!r}: its text holds no token")
    return ids


def _wrapped(body: list[int], length: int, ends: Ends) -> list[int]:
    """[first] body [last], cut to `length` tokens (a missing special id is left out)."""
    row = ([] if ends.first is None else [ends.first]) + body + ([] if ends.last is None else [ends.last])
    return row[:length]


def _specials(ends: Ends) -> int:
    return (ends.first is not None) + (ends.last is not None)


def token_rows(ids: list[int], n: int, batch: int, ends: Ends) -> torch.Tensor:
    """(batch, n) int64: each row [CLS] + n - 2 ids + [SEP], row i the stretch after row i - 1 (`ids` cycled)."""
    body = n - _specials(ends)
    repeats = math.ceil(batch * body / len(ids)) if body > 0 else 0
    stream = ids * repeats
    rows = [_wrapped(stream[i * body : (i + 1) * body], n, ends) for i in range(batch)]
    return torch.tensor(rows, dtype=torch.long)


def pieces(n: int, chunk: int) -> int:
    """How many chunks of `chunk` tokens a text of n tokens is read as: ceil(n / chunk)."""
    return math.ceil(n / chunk)


def chunked(rows: torch.Tensor, chunk: int, ends: Ends) -> dict[str, torch.Tensor]:
    """(b, n) texts -> (b * ceil(n / chunk), chunk) chunks in one batch, a text's chunks in a row.

    Chunk j of a text is [CLS] + the text's next ids + [SEP], `chunk` tokens long, but the last: it
    holds n - (pieces - 1) * chunk tokens and is padded (attention mask 0), so a text's chunks hold n
    real tokens, as the text does. The ids are the text's own, without its [CLS] and [SEP].
    """
    b, n = rows.shape
    count, specials = pieces(n, chunk), _specials(ends)
    ids = torch.full((b, count, chunk), ends.pad, dtype=torch.long)
    mask = torch.zeros((b, count, chunk), dtype=torch.long)
    last = n - (count - 1) * chunk  # the last chunk's tokens
    for i, row in enumerate(rows.tolist()):
        body = row[(ends.first is not None) : n - (ends.last is not None)]
        cut = text_pieces(body, chunk - specials)[:count]  # longdocs' chunks (token_pieces.py) ...
        cut[-1] = cut[-1][: max(0, last - specials)]  # ... the last cut to n real tokens in all
        for j, part in enumerate(cut):
            piece = _wrapped(part, chunk if j < count - 1 else last, ends)
            ids[i, j, : len(piece)] = torch.tensor(piece, dtype=torch.long)
            mask[i, j, : len(piece)] = 1
    return {"input_ids": ids.view(b * count, chunk), "attention_mask": mask.view(b * count, chunk)}


def whole(rows: torch.Tensor) -> dict[str, torch.Tensor]:
    """The texts read whole: the rows and an attention mask of ones."""
    return {"input_ids": rows, "attention_mask": torch.ones_like(rows)}
