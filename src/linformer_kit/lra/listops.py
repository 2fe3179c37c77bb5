"""LRA ListOps: nested list operations over digits, 10-way classification of sequences of 500-2000 tokens.

    [MAX 4 3 [MIN 2 3 ] 1 0 [MED 1 5 8 9 2 ] ]   ->   5

ListOps (Nangia & Bowman, NAACL SRW 2018) is the hierarchical-reasoning task of the Long Range Arena
(Tay et al., "Long Range Arena: A Benchmark for Efficient Transformers", ICLR 2021). This generator
is written from the description of the LRA generator (`lra_benchmarks/data/listops.py`), not copied:

- a node at depth < 10 (the root is depth 1) is an operator with probability 0.25, else a digit 0-9;
  a node at depth 10 is a digit. An operator is one of `[MIN`, `[MAX`, `[MED` (median, truncated to
  an int: with an even count the mean of the two middle values, truncated) and `[SM` (sum mod 10),
  with 2-10 arguments (uniform). The label is the value of the root.
- length counts tokens without parentheses (a digit 1, an operator 2 - its token and `]` - plus its
  arguments); only trees with 500 < length < 2000 are kept, and each tree only once.
- the serialization is LRA's: an operator and its arguments as a left-nested chain of pairs, each
  pair written `( A B )`, so `[MAX 2 9 ]` is `( ( ( [MAX 2 ) 9 ) ] )`. LRA's input pipeline (and a
  tokenizer here) drops the parentheses again.

`prepare_listops` writes `basic_train.tsv`, `basic_val.tsv` and `basic_test.tsv` (header
`Source<TAB>Target`; 96,000 / 2,000 / 2,000 rows by default: the sizes of the LRA release) and
`label_balance.json`. The files have the format of the official release (`lra_release/listops-1000/`),
so a user who has it points training at it instead. Same seed, same bytes: the draws come from
`random.Random(seed)` only. The labels are far from uniform (the majority class is well above the 10%
of chance), which is why the balance is written beside the data.

Standard library only.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from linformer_kit.lra.output import BALANCE_FILE, PreparedSplits, check_not_written, write_splits

logger = logging.getLogger(__name__)

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
CLOSE = "]"
MAX_DEPTH = 10
MAX_ARGS = 10
OPERATOR_P = 0.25
MIN_LENGTH, MAX_LENGTH = 500, 2000  # kept: MIN_LENGTH < length < MAX_LENGTH
NUM_CLASSES = 10
SPLITS = ("train", "val", "test")
FILES = {split: f"basic_{split}.tsv" for split in SPLITS}

# a digit, or (operator, arguments)
Tree: TypeAlias = int | tuple[str, tuple["Tree", ...]]


@dataclass(frozen=True)
class ListOpsConfig:
    """`linformer lra prepare listops`: where the files go, the seed, and the size of each split."""

    output_dir: str = field(
        metadata={"help": "where basic_{train,val,test}.tsv and label_balance.json go", "metavar": "DIR"}
    )
    seed: int = field(
        default=0, metadata={"help": "seed of the generator: same seed, same files", "metavar": "S"}
    )
    train_size: int = field(default=96_000, metadata={"help": "training trees (LRA: 96,000)", "metavar": "N"})
    val_size: int = field(default=2_000, metadata={"help": "validation trees (LRA: 2,000)", "metavar": "N"})
    test_size: int = field(default=2_000, metadata={"help": "test trees (LRA: 2,000)", "metavar": "N"})
    overwrite: bool = field(
        default=False, metadata={"help": "replace the files of an earlier run that output_dir holds"}
    )

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ValueError(f"seed must be an int, got {self.seed!r}")
        for name in ("train_size", "val_size", "test_size"):
            check_size(name, getattr(self, name))
        check_not_written(self.output_dir, [*FILES.values(), BALANCE_FILE], self.overwrite)

    @property
    def sizes(self) -> dict[str, int]:
        return {"train": self.train_size, "val": self.val_size, "test": self.test_size}


def check_size(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")


# --- one tree: value, length, serialization ------------------------------------------------------------


def apply(operator: str, values: Sequence[int]) -> int:
    """The value of `operator` over its arguments' values (each 0-9, so the result is too)."""
    if operator == "[MIN":
        return min(values)
    if operator == "[MAX":
        return max(values)
    if operator == "[SM":
        return sum(values) % 10
    if operator == "[MED":
        ordered, middle = sorted(values), len(values) // 2
        if len(values) % 2:
            return ordered[middle]
        return (ordered[middle - 1] + ordered[middle]) // 2  # truncated mean (values are >= 0)
    raise ValueError(f"unknown operator {operator!r}; expected one of {OPERATORS}")


def evaluate(tree: Tree) -> int:
    if isinstance(tree, int):
        return tree
    operator, arguments = tree
    return apply(operator, [a if isinstance(a, int) else evaluate(a) for a in arguments])


def length(tree: Tree) -> int:
    """Tokens without parentheses: a digit 1, an operator 2 (its token and `]`) plus its arguments."""
    if isinstance(tree, int):
        return 1
    return 2 + sum(length(argument) for argument in tree[1])


def serialize(tree: Tree) -> str:
    """LRA's form: `[OP a b c ]` as the left-nested pairs (((([OP a) b) c) ]), each pair `( A B )`."""
    parts: list[str] = []
    _serialize(tree, parts)
    return "".join(parts)


def _serialize(tree: Tree, parts: list[str]) -> None:
    # one list of pieces, joined once: nesting f-strings would copy the text again at every pair
    if isinstance(tree, int):
        parts.append(str(tree))
        return
    operator, arguments = tree
    parts.append("( " * (len(arguments) + 1) + operator)  # the pairs open before the operator
    for argument in arguments:
        if isinstance(argument, int):  # most arguments: one piece instead of three
            parts.append(_DIGIT_PAIRS[argument])
        else:
            parts.append(" ")
            _serialize(argument, parts)
            parts.append(" )")
    parts.append(f" {CLOSE} )")


_DIGIT_PAIRS = tuple(f" {digit} )" for digit in range(10))


# --- drawing trees ---------------------------------------------------------------------------------------


class _TooLong(Exception):
    """A tree reached MAX_LENGTH tokens: it would be rejected, so stop drawing it."""


class _Builder:
    """Draws one tree from `rng`, counting its length as it grows.

    Most draws are rejected (too short, or far too long: a tree can grow to millions of tokens), so a
    tree is abandoned as soon as its length reaches MAX_LENGTH. That changes nothing about the trees
    kept: the draws of each tree are independent of the ones before it.
    """

    def __init__(self, rng: random.Random) -> None:
        self.random = rng.random  # one bound method: random.random()*n is ~5x faster than randint/choice
        self.length = 0

    def node(self, depth: int) -> Tree:
        draw = self.random
        leaf = depth >= MAX_DEPTH or draw() > OPERATOR_P
        self.length += 1 if leaf else 2  # a digit, or an operator's token and its `]`
        if self.length >= MAX_LENGTH:
            raise _TooLong
        if leaf:
            return int(draw() * 10)
        operator = OPERATORS[int(draw() * len(OPERATORS))]
        num_args = 2 + int(draw() * (MAX_ARGS - 1))  # uniform on 2..MAX_ARGS
        return operator, tuple([self.node(depth + 1) for _ in range(num_args)])  # a list: faster


def draw_tree(rng: random.Random) -> Tree | None:
    """One draw: a tree with MIN_LENGTH < length < MAX_LENGTH, or None (rejected)."""
    builder = _Builder(rng)
    try:
        tree = builder.node(1)
    except _TooLong:
        return None
    return tree if builder.length > MIN_LENGTH else None


def distinct_examples(seed: int, count: int) -> Iterator[tuple[str, int]]:
    """(Source, Target) of the first `count` distinct kept trees drawn from `random.Random(seed)`.

    Distinct by the SHA-256 of the Source text (with ~6 KB per tree, a set of the texts themselves
    would hold ~600 MB at the default sizes).
    """
    rng = random.Random(seed)
    seen: set[bytes] = set()
    while len(seen) < count:
        tree = draw_tree(rng)
        if tree is None:
            continue
        source = serialize(tree)
        key = hashlib.sha256(source.encode()).digest()
        if key not in seen:
            seen.add(key)
            yield source, evaluate(tree)


ListOpsResult = PreparedSplits


def prepare_listops(config: ListOpsConfig) -> ListOpsResult:
    """Write the three splits (disjoint: each tree is drawn once) and label_balance.json."""
    total = sum(config.sizes.values())
    logger.info(
        f"drawing {total:,} distinct ListOps trees (seed {config.seed}; about 2 CPU minutes per 100,000)"
    )
    examples = distinct_examples(config.seed, total)  # one stream, cut into the splits in order
    splits = {split: itertools.islice(examples, size) for split, size in config.sizes.items()}
    return write_splits(config.output_dir, FILES, splits, NUM_CLASSES)
