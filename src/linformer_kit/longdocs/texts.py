"""The documents of the long-document suite: generated (passkey, needle) and cut from real prose (halves).

Every document is text, sized in tokens of one tokenizer (the original's): a task at length L holds
documents of at most L tokens, special tokens included, so each method tokenizes the same text itself.
Everything is drawn from a `random.Random(seed)`: the same seed gives the same documents.

    passkey  LongEmbed's construction (Zhu et al. 2024): the filler "The grass is green. The sky is
             blue. ..." repeated, one "{Name}'s pass key is {digits}. Remember it. {digits} is the pass
             key for {Name}." at a random depth; query "what is the passkey for {Name}?"
    access-code  the same task built another way (`ACCESS_CODE`): another filler ("The river bends past
             the old mill. ..."), one "The access code of {Name} is {digits}." and the query "which
             code opens the door of {Name}?": a claim should not rest on one construction
    needle   one made-up fact ("{Name} hid the {colour} {thing} in {place}.") at a random depth of
             real prose (a span of a held-out book or article); query "where did {Name} hide the
             {colour} {thing}?". The facts are ours, the haystack differs per document.
    halves   a span of 2 (L - 2) tokens of held-out prose cut in two: the first half is the query,
             the second its document (the others' second halves are the candidates): models/halves.py,
             whose task distill's verdict on a long student runs too
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from linformer_kit.token_pieces import Spans, TooShort

FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
FIRST_NAMES = (
    "Ada", "Boris", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kira", "Lars",
    "Mira", "Nikolai", "Olga", "Pavel", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wim", "Xenia",
    "Yusuf", "Zora", "Anton", "Bianca", "Carlos", "Daria",
)  # fmt: skip
LAST_NAMES = (
    "Abbott", "Barros", "Castell", "Dunmore", "Eriksen", "Falk", "Gould", "Hartley", "Ivanov", "Jansen",
    "Kowal", "Lindqvist", "Moreau", "Novak", "Oakes", "Petrov", "Quade", "Ramos", "Sato", "Thorne",
)  # fmt: skip
COLOURS = ("red", "green", "blue", "golden", "silver", "purple", "orange", "black", "white", "crimson")
THINGS = ("key", "lantern", "violin", "compass", "teapot", "ring", "map", "clock", "kite", "statue")
PLACES = (
    "the old well", "the bakery cellar", "a hollow oak", "the lighthouse", "the train station",
    "the chapel tower", "a fishing boat", "the library attic", "the greenhouse", "the stone bridge",
)  # fmt: skip


@dataclass(frozen=True)
class Construction:
    """How a passkey document is built: the filler cycled around the key, the key sentence and the query
    (format strings of `name` and `digits`)."""

    filler: str
    key: str
    query: str


LONGEMBED = Construction(FILLER, "{name}'s pass key is {digits}. Remember it. {digits} is the pass key for {name}.",
                         "what is the passkey for {name}?")  # fmt: skip
ACCESS_CODE = Construction(
    "The river bends past the old mill. Rain fell on the hills all night. A cart rolled down the lane. "
    "Bells rang in the distant town. The baker opened his shop at dawn. ",
    "The access code of {name} is {digits}.",
    "which code opens the door of {name}?",
)


@dataclass(frozen=True)
class Document:
    """One candidate document, the query that names it (None: a distractor) and where its key sits."""

    text: str
    query: str | None
    depth: float | None  # the key's position as a share of the document (passkey, needle); None for halves


def names(count: int, rng: random.Random) -> list[str]:
    """`count` distinct "First Last" names (at most 600)."""
    pool = [f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES]
    if count > len(pool):
        raise ValueError(f"count={count}: at most {len(pool)} distinct names")
    return rng.sample(pool, count)


def token_count(tokenizer, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])  # a size, not an input


def fill_to(tokenizer, key: str, filler, budget: int, depth: float) -> str:
    """`key` at `depth` of filler text, the whole at most `budget` tokens. `filler(offset, tokens)` gives
    the filler's text of at most `tokens` tokens from token `offset` on (head: offset 0; tail: after it)."""
    room = budget - token_count(tokenizer, key)
    if room < 0:
        raise ValueError(f"length: {budget} tokens cannot hold the key sentence ({budget - room} tokens)")
    before = int(room * depth)
    text = " ".join(part for part in (filler(0, before), key, filler(before, room - before)) if part)
    while token_count(tokenizer, text) > budget:  # joins may tokenize a few tokens longer: trim the tail
        text = text[: text.rindex(" ")]
    return text


def passkey_documents(
    tokenizer,
    length: int,
    count: int,
    queries: int,
    rng: random.Random,
    construction: Construction = LONGEMBED,
) -> list[Document]:
    """`count` passkey documents of at most `length` tokens (special tokens included), built as
    `construction` says; the first `queries` of them are asked for."""
    sentences = [s.strip() + "." for s in construction.filler.split(".") if s.strip()]
    sizes = [token_count(tokenizer, s) for s in sentences]

    def filler(offset: int, tokens: int) -> str:  # whole filler sentences, cycling
        out, used, i = [], 0, 0
        while used + sizes[i % len(sizes)] <= tokens:
            out.append(sentences[i % len(sizes)])
            used, i = used + sizes[i % len(sizes)], i + 1
        return " ".join(out)

    documents = []
    for i, name in enumerate(names(count, rng)):
        digits = f"{rng.randrange(10**5):05d}"
        key = construction.key.format(name=name, digits=digits)
        depth = rng.random()
        text = fill_to(tokenizer, key, filler, length - 2, depth)
        query = construction.query.format(name=name) if i < queries else None
        documents.append(Document(text, query, depth))
    return documents


def needle_documents(
    tokenizer, length: int, count: int, queries: int, haystack: list[str], rng: random.Random
) -> list[Document]:
    """`count` documents of real prose (a random span of a `haystack` text each) holding one fact."""
    spans = Spans(tokenizer, haystack)
    documents = []
    for i, name in enumerate(names(count, rng)):
        colour, thing, place = rng.choice(COLOURS), rng.choice(THINGS), rng.choice(PLACES)
        key = f"{name} hid the {colour} {thing} in {place}."
        text_index, first = spans.start(length, rng)

        def filler(offset: int, tokens: int, text_index=text_index, first=first) -> str:
            return spans.text((text_index, first + offset), tokens)

        depth = rng.random()
        text = fill_to(tokenizer, key, filler, length - 2, depth)
        query = f"where did {name} hide the {colour} {thing}?" if i < queries else None
        documents.append(Document(text, query, depth))
    return documents


def passages(tokenizer, length: int, count: int, texts: list[str], rng: random.Random) -> list[str]:
    """Up to `count` passages of `length` tokens with special tokens, from non-overlapping spans of `texts`;
    `TooShort` when the texts hold none."""
    spans = Spans(tokenizer, texts)
    size = length - 2
    windows = [(i, a) for i, o in enumerate(spans.offsets) for a in range(0, len(o) - size + 1, size)]
    if not windows:
        raise TooShort(f"length={length}: the texts hold no span of {size} tokens")
    return [spans.text(w, size) for w in rng.sample(windows, min(count, len(windows)))]
