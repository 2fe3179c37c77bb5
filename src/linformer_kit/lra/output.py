"""What every LRA task writes: TSV files that appear whole or not at all, and the label balance.

The TSV files quote nothing (`Source<TAB>Target` header, one example a line), as GLUE's and the LRA
release's do and as `linformer finetune` reads a .tsv (`quoting=QUOTE_NONE`): a cell must therefore
hold no tab and no line break, which the tasks make sure of. Standard library only.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from linformer_kit.output_dir import check_output_dir

HEADER = "Source\tTarget\n"
BALANCE_FILE = "label_balance.json"


def check_not_written(output_dir: str, names: Iterable[str], overwrite: bool) -> None:
    """ValueError if `output_dir` cannot be written, or already holds one of `names` and not `overwrite`.

    Regenerating over the official release (same file names) by accident would lose it.
    """
    out = check_output_dir(output_dir)
    held = [name for name in names if (out / name).exists()]
    if held and not overwrite:
        raise ValueError(
            f"output_dir {output_dir!r} already holds {', '.join(held)}; give --overwrite to replace them, "
            "or another directory"
        )


@contextmanager
def tsv_writers(output_dir: str | os.PathLike, names: Sequence[str]) -> Iterator[dict[str, TextIO]]:
    """Open `names` (with the header written) as hidden `.partial` files; on success rename them into place.

    A crash or Ctrl-C midway leaves the earlier files (or none) and no half-written one behind.
    """
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    partial = {name: out / f".{name}.partial" for name in names}
    try:
        with ExitStack() as stack:
            # newline="\n": the same bytes on every platform (same seed -> identical files)
            files: dict[str, TextIO] = {
                name: stack.enter_context(open(path, "w", encoding="utf-8", newline="\n"))
                for name, path in partial.items()
            }
            for file in files.values():
                file.write(HEADER)
            yield files
    except BaseException:
        for path in partial.values():
            path.unlink(missing_ok=True)
        raise
    for name, path in partial.items():
        path.replace(out / name)


def write_row(file: TextIO, source: str, target: int) -> None:
    file.write(f"{source}\t{target}\n")


@dataclass(frozen=True)
class PreparedSplits:
    """What a task's `prepare_*` wrote."""

    files: dict[str, Path]  # split -> its TSV file
    balance: dict[str, Any]  # label_balance's report
    balance_file: Path


def write_splits(
    output_dir: str,
    files: Mapping[str, str],
    examples: Mapping[str, Iterable[tuple[str, int]]],
    num_classes: int,
) -> PreparedSplits:
    """Each split's (Source, Target) examples into its TSV file `files[split]` (the files appear whole or not
    at all: `tsv_writers`), in the order of `examples`, whose first split is the training split; then
    label_balance.json."""
    labels: dict[str, list[int]] = {split: [] for split in files}
    with tsv_writers(output_dir, list(files.values())) as handles:
        for split, rows in examples.items():
            for source, target in rows:
                write_row(handles[files[split]], source, target)
                labels[split].append(target)
    balance = label_balance(labels, num_classes)
    out = Path(output_dir)
    return PreparedSplits(
        files={split: out / name for split, name in files.items()},
        balance=balance,
        balance_file=write_label_balance(out, balance),
    )


def label_balance(labels: Mapping[str, Sequence[int]], num_classes: int) -> dict[str, Any]:
    """Counts per class of each split, and the accuracy of always answering the training split's
    most frequent class (`majority_class`): the baseline a model must beat, well above chance on ListOps.

    `labels` maps split names to their labels; the first split is the training split.
    """
    counts = {split: Counter(values) for split, values in labels.items()}
    train = next(iter(counts.values()))
    majority = max(range(num_classes), key=lambda label: (train[label], -label))  # ties: the smaller label
    splits = {}
    for split, counter in counts.items():
        rows = sum(counter.values())
        splits[split] = {
            "rows": rows,
            "counts": {str(label): counter[label] for label in range(num_classes)},
            "majority_accuracy": counter[majority] / rows if rows else 0.0,
        }
    return {"num_classes": num_classes, "majority_class": majority, "splits": splits}


def write_label_balance(output_dir: str | os.PathLike, balance: Mapping[str, Any]) -> Path:
    path = Path(output_dir) / BALANCE_FILE
    path.write_text(json.dumps(balance, indent=2) + "\n")
    return path


def format_label_balance(balance: Mapping[str, Any]) -> str:
    """One line per split: its rows, each class's share, and the majority-class accuracy."""
    majority = balance["majority_class"]
    lines = []
    for split, entry in balance["splits"].items():
        rows = entry["rows"]
        shares = " ".join(f"{label}:{count / rows:.1%}" for label, count in entry["counts"].items())
        lines.append(f"{split}: {rows:,} rows, labels {shares}; "
                     f"always answering {majority}: {entry['majority_accuracy']:.1%}")  # fmt: skip
    return "\n".join(lines)
