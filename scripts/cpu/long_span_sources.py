"""How many documents the long stage's spans come from (issue "A long student worth it at 4 096").

`long_spans` (train/distill/data.py) takes every span of a document, in a seeded order of the documents, until
it has long_steps x long_batch_size of them: a Gutenberg book of 100 000 tokens gives 12 spans of 8 190. This
counts, for the README's long command with `--long-held-out 0.4` (and `--halves whole` or not), how many
documents, and which sources, the spans it trains on are cut from: `drawn_spans`, the stage's own draw.

    python scripts/cpu/long_span_sources.py OUT.json [--halves split whole] [--seed 42] [--per-document 0 4]

Not run in tests: reads ../shared/data and all-MiniLM-L6-v2's tokenizer (about a minute of one core).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from transformers import AutoTokenizer

from linformer_kit.train.distill import DistillConfig
from linformer_kit.train.distill.data import drawn_spans, long_text
from linformer_kit.train.distill.long import span_length


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--teacher", default="runs/models/all-MiniLM-L6-v2")
    parser.add_argument("--halves", nargs="+", default=["split", "whole"])
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument(
        "--per-document", type=int, nargs="+", default=[0], help="0: every span (the default)"
    )
    args = parser.parse_args()
    tokenizer = AutoTokenizer.from_pretrained(args.teacher)
    record = {}
    for halves, cap in ((h, c) for h in args.halves for c in args.per_document):
        config = DistillConfig(
            teacher=args.teacher, train=[f"{args.data}/imdb/train.jsonl.gz"], output_dir="/tmp/long-span-sources",
            long_length=4096, long_held_out=0.4, halves=halves, seed=args.seed, seq_len=512,
            long_spans_per_document=cap or None,
            long_train=[f"{args.data}/gutenberg/train.jsonl.gz", f"{args.data}/imdb/unsup.jsonl.gz"],
        )  # fmt: skip
        long = long_text(config, tokenizer)
        books = len(long.sources[0])  # the first source's documents come first in `train`
        count = (
            config.long_steps * config.long_batch_size * config.gradient_accumulation_steps
        )  # long.py's `wanted`
        drawn = drawn_spans(long.train, tokenizer, span_length(config), count, config.seed,
                            config.long_spans_per_document)  # fmt: skip
        owners = [i for i, _ in drawn]
        per = Counter(owners)
        name = halves if cap == 0 else f"{halves}, {cap} a document"
        record[name] = {
            "span_tokens": span_length(config), "spans": len(owners), "documents": len(per),
            "from_gutenberg": sum(1 for i in owners if i < books), "most_from_one_document": max(per.values()),
            "spans_per_document": sorted(per.values(), reverse=True),
        }  # fmt: skip
        print(name, record[name], flush=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
