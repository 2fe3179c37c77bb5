"""ListOps: every label recomputed by an evaluator of our own, the lengths, the depth, the splits, the seed."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest

from linformer_kit.lra import ListOpsConfig, prepare_listops
from linformer_kit.lra.listops import MAX_DEPTH, Tree, draw_tree, evaluate, length, serialize

DIGITS = {str(digit) for digit in range(10)}
SIZES = {"train": 20, "val": 5, "test": 5}
FILES = {"train": "basic_train.tsv", "val": "basic_val.tsv", "test": "basic_test.tsv"}
# the operators as the README defines them, written apart from the library's
OPERATORS = {
    "[MIN": min,
    "[MAX": max,
    "[MED": lambda values: int(statistics.median(values)),  # even count: mean of the middle two, truncated
    "[SM": lambda values: sum(values) % 10,
}


def parse_source(source: str) -> tuple[int, int, int]:
    """(value, length without parentheses, depth) of a Source string, by a stack over its tokens."""
    stack: list[tuple[str, list[int]]] = []
    value, tokens, depth = None, 0, 0
    for token in source.split():
        if token in ("(", ")"):
            continue
        tokens += 1
        if token in OPERATORS:
            stack.append((token, []))
            depth = max(depth, len(stack))
            continue
        if token == "]":
            operator, values = stack.pop()
            result = OPERATORS[operator](values)
        else:
            assert token in DIGITS, token
            result = int(token)
            depth = max(depth, len(stack) + 1)
        if stack:
            stack[-1][1].append(result)
        else:
            assert value is None, "two roots"
            value = result
    assert not stack
    assert value is not None
    return value, tokens, depth


def read_rows(path: Path) -> list[tuple[str, int]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "Source\tTarget"
    rows = [line.split("\t") for line in lines[1:]]
    assert all(len(row) == 2 for row in rows)
    return [(source, int(target)) for source, target in rows]


def generate(out: Path, seed: int = 0) -> dict[str, list[tuple[str, int]]]:
    prepare_listops(ListOpsConfig(output_dir=str(out), seed=seed, train_size=SIZES["train"],
                                  val_size=SIZES["val"], test_size=SIZES["test"]))  # fmt: skip
    return {split: read_rows(out / name) for split, name in FILES.items()}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[tuple[str, int]]]]:
    out = tmp_path_factory.mktemp("listops")
    return out, generate(out)


# --- hand-written trees --------------------------------------------------------------------------------


def test_serializer_writes_the_readme_example() -> None:
    tree: Tree = ("[MAX", (2, 9))
    assert serialize(tree) == "( ( ( [MAX 2 ) 9 ) ] )"
    assert (evaluate(tree), length(tree)) == (9, 4)


def test_nested_operators_are_pairs_inside_pairs() -> None:
    tree: Tree = ("[MAX", (2, ("[MIN", (3, 4)), 1))
    assert serialize(tree) == "( ( ( ( [MAX 2 ) ( ( ( [MIN 3 ) 4 ) ] ) ) 1 ) ] )"
    assert parse_source(serialize(tree)) == (3, 8, 3)  # value, tokens, depth (3 and 4 at depth 3)


@pytest.mark.parametrize(
    ("arguments", "median"),
    [
        ((1, 5, 8), 5),  # odd count: the middle value
        ((8, 1, 5), 5),  # ... of the sorted arguments
        ((1, 2), 1),  # even: mean 1.5, truncated
        ((3, 8, 1, 6), 4),  # sorted 1 3 6 8: mean of 3 and 6 is 4.5 -> 4
        ((9, 9), 9),
        ((0, 0, 9, 9), 4),
        ((7, 2, 2, 2, 9), 2),
    ],
)
def test_med_is_the_truncated_median(arguments: tuple[int, ...], median: int) -> None:
    tree: Tree = ("[MED", arguments)
    assert evaluate(tree) == median
    assert parse_source(serialize(tree))[0] == median


@pytest.mark.parametrize(
    ("arguments", "total"), [((9, 8, 7), 4), ((5, 5), 0), ((1, 2, 3), 6), ((9,) * 10, 0), ((9, 9, 3), 1)]
)
def test_sm_is_the_sum_mod_10(arguments: tuple[int, ...], total: int) -> None:
    tree: Tree = ("[SM", arguments)
    assert evaluate(tree) == total
    assert parse_source(serialize(tree))[0] == total


def test_min_max_and_nesting() -> None:
    tree: Tree = ("[SM", (("[MIN", (4, 7, 5)), ("[MAX", (0, ("[MED", (1, 2, 3, 9)), 3)), 8))
    assert evaluate(tree) == (4 + max(0, 2, 3) + 8) % 10  # MED 1 2 3 9 = 2.5 -> 2
    assert parse_source(serialize(tree)) == (5, length(tree), 4)


# --- generated trees -----------------------------------------------------------------------------------


def test_every_label_is_the_value_of_its_tree(generated) -> None:
    _, splits = generated
    for rows in splits.values():
        for source, target in rows:
            assert parse_source(source)[0] == target


def test_lengths_depths_and_parentheses(generated) -> None:
    _, splits = generated
    for rows in splits.values():
        for source, _ in rows:
            _, tokens, depth = parse_source(source)
            assert 500 < tokens < 2000
            assert depth <= MAX_DEPTH
            # one pair per argument and one for the `]`: k + 1 pairs for k arguments, so length - 1 in all
            assert source.count("(") == source.count(")") == tokens - 1


def test_drawn_trees_respect_the_depth_and_the_lengths() -> None:
    rng, kept = random.Random(5), 0
    for _ in range(300):
        tree = draw_tree(rng)
        if tree is not None:
            kept += 1
            _, tokens, depth = parse_source(serialize(tree))
            assert 500 < tokens == length(tree) < 2000
            assert depth <= MAX_DEPTH
    assert kept > 0


def test_split_sizes_and_no_tree_twice(generated) -> None:
    _, splits = generated
    assert {split: len(rows) for split, rows in splits.items()} == SIZES
    sources = [source for rows in splits.values() for source, _ in rows]
    assert len(set(sources)) == len(sources)  # disjoint splits, no duplicate inside one


def test_header_and_no_partial_files(generated) -> None:
    out, _ = generated
    for name in FILES.values():
        assert (out / name).read_bytes().startswith(b"Source\tTarget\n")
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES.values(), "label_balance.json"])


def test_label_balance(generated) -> None:
    out, splits = generated
    balance = json.loads((out / "label_balance.json").read_text())
    train_labels = [target for _, target in splits["train"]]
    majority = balance["majority_class"]
    assert train_labels.count(majority) == max(train_labels.count(label) for label in range(10))
    for split, rows in splits.items():
        entry = balance["splits"][split]
        labels = [target for _, target in rows]
        assert entry["rows"] == len(rows)
        assert entry["counts"] == {str(label): labels.count(label) for label in range(10)}
        assert entry["majority_accuracy"] == pytest.approx(labels.count(majority) / len(rows))


def test_same_seed_same_bytes_other_seed_other_trees(generated, tmp_path: Path) -> None:
    out, splits = generated
    generate(tmp_path / "again")
    for name in FILES.values():
        assert (tmp_path / "again" / name).read_bytes() == (out / name).read_bytes()
    other = generate(tmp_path / "other", seed=1)
    assert {s for rows in other.values() for s, _ in rows}.isdisjoint(
        s for rows in splits.values() for s, _ in rows
    )


# --- the config ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"train_size": 0}, "train_size must be an int >= 1, got 0"),
        ({"val_size": -3}, "val_size must be an int >= 1, got -3"),
        ({"test_size": 2.5}, "test_size must be an int >= 1, got 2.5"),
        ({"train_size": True}, "train_size must be an int >= 1, got True"),
        ({"seed": "1"}, "seed must be an int, got '1'"),
    ],
)
def test_config_refuses_bad_values(changes: dict, message: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=message):
        ListOpsConfig(output_dir=str(tmp_path), **changes)


def test_config_refuses_a_file_as_output_dir(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="is an existing file, not a directory"):
        ListOpsConfig(output_dir=str(tmp_path / "file"))


def test_files_of_an_earlier_run_need_overwrite(tmp_path: Path) -> None:
    (tmp_path / "basic_val.tsv").write_text("the official release\n")
    with pytest.raises(ValueError, match=r"already holds basic_val.tsv; give --overwrite"):
        ListOpsConfig(output_dir=str(tmp_path))
    config = ListOpsConfig(output_dir=str(tmp_path), train_size=1, val_size=1, test_size=1, overwrite=True)
    prepare_listops(config)
    assert len(read_rows(tmp_path / "basic_val.tsv")) == 1
