"""How much of the long reading a contextual chunk should take (issue "Long documents on prose", item 3).

`contextual-chunks-512` (models/readings.py) is each of the original's chunk rows c_i plus the student's whole
reading pooled over the same chunk's tokens s_i, normalised: c_i + 1 · s_i. This script reads the two passes
once and scores c_i + a · s_i for several weights a (a = 0 is the original's best chunk, a large a the student's
late chunks), and a one-row reading normalise(mean_i c_i + a · whole). The weight is chosen on the held-out
Gutenberg train books (the verdict's documents, not the test books), then read on the test books (valid + test),
the suite's seeds and pairs: the same documents as every `longdocs --tasks books` record.

    python scripts/cpu/contextual_weight.py STUDENT ORIGINAL HELD.jsonl OUT.json [--length 4096] [--pairs 50]

Not run in tests: needs a long student, all-MiniLM-L6-v2 and ../shared/data.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch
from torch.nn import functional as F

from linformer_kit.longdocs.config import LongDocsConfig
from linformer_kit.longdocs.suite import Suite
from linformer_kit.models.extend import encoder_at
from linformer_kit.models.halves import draw
from linformer_kit.models.readings import contextual_rows, read, rows_of
from linformer_kit.models.retrieval import retrieval_hits

WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 100.0)


def readings(
    chunks: list[torch.Tensor], wholes: list[torch.Tensor], size: int
) -> dict[str, list[torch.Tensor]]:
    """name -> each text's rows, for every weight."""
    out: dict[str, list[torch.Tensor]] = {}
    averaged = rows_of("chunks-mean-512", {"chunks": chunks})  # the suite's own readings, one row a text
    whole = rows_of("whole", {"whole": wholes})
    for a in WEIGHTS:
        out[f"contextual a={a:g}"] = [
            contextual_rows(c, w, size, a) for c, w in zip(chunks, wholes, strict=True)
        ]
        out[f"mean+whole a={a:g}"] = [
            F.normalize(c + a * w, dim=-1) for c, w in zip(averaged, whole, strict=True)
        ]
    return out


def scores(
    suite: Suite, corpus: list[str], task: str, length: int, pairs: int, seed: int
) -> dict[str, float]:
    """Each reading's halves accuracy@1 (%) on the pairs `longdocs` draws for (task, length, seed)."""
    rng = random.Random(f"{task}-{length}-{seed}")
    firsts, seconds = draw(suite.tokenizer, length, pairs, corpus, rng)
    size = suite.config.chunk_length
    chunk_reader, whole_reader = suite.reader("chunks", length), suite.reader("whole", length)
    assert chunk_reader is not None
    assert whole_reader is not None
    read_q = readings(
        read("chunks", chunk_reader, firsts, size), read("whole", whole_reader, firsts, size), size - 2
    )
    read_d = readings(
        read("chunks", chunk_reader, seconds, size), read("whole", whole_reader, seconds, size), size - 2
    )
    targets = list(range(len(firsts)))
    return {
        name: round(100 * float(retrieval_hits(read_q[name], read_d[name], targets).float().mean()), 2)
        for name in read_q
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("student")
    parser.add_argument("original")
    parser.add_argument("held")
    parser.add_argument("out")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--pairs", type=int, default=50)
    args = parser.parse_args()
    config = LongDocsConfig(model=args.student, original=args.original, data=args.data, documents=[args.held],
                            output_dir="/tmp/contextual-weight", lengths=[args.length], pairs=args.pairs)  # fmt: skip
    suite = Suite(config, encoder_at)
    result: dict[str, dict] = {"student": args.student, "length": args.length, "pairs": args.pairs,
                               "weights": list(WEIGHTS), "chosen on": {}, "test": {}}  # fmt: skip
    result["chosen on"]["held-out train books (seed 1)"] = scores(
        suite, suite.documents, "documents", args.length, args.pairs, 1
    )
    print(json.dumps(result["chosen on"], indent=1), flush=True)
    for seed in (1, 2, 3):
        result["test"][f"books seed {seed}"] = scores(
            suite, suite.books, "books", args.length, args.pairs, seed
        )
        print(seed, json.dumps(result["test"][f"books seed {seed}"]), flush=True)
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
