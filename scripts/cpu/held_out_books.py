"""The held-out books as one file for `linformer longdocs --documents`: the Gutenberg train books a long stage of
`distill --long-held-out SHARE` holds out of every stage (its last ones, `held_out_count`, the rule distill
itself applies), then the valid and test books, which no stage reads (docs/longdocs.md, "The held-out books").

    python scripts/cpu/held_out_books.py ../shared/data/gutenberg runs/heldout/books.jsonl --share 0.4
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from linformer_kit.train.distill.config import DistillConfig
from linformer_kit.train.distill.data import held_out_count


def books(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gutenberg", type=Path, help="the folder of train/valid/test.jsonl.gz")
    parser.add_argument("out", type=Path, help="the .jsonl to write (each record's `text` a book)")
    parser.add_argument(
        "--share", type=float, default=DistillConfig.long_held_out, help="distill's --long-held-out"
    )
    args = parser.parse_args()
    train = books(args.gutenberg / "train.jsonl.gz")
    count = held_out_count(len(train), DistillConfig.max_eval_documents, args.share)
    held = (
        train[len(train) - count :]
        + books(args.gutenberg / "valid.jsonl.gz")
        + books(args.gutenberg / "test.jsonl.gz")
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for book in held:
            f.write(json.dumps({"text": book["text"]}) + "\n")
    print(
        f"{args.out}: {len(held)} books ({count} of {len(train)} train books held out, then valid and test)"
    )


if __name__ == "__main__":
    main()
