"""One-row readings of a long student on book halves (issue "Long documents on prose"): can a document vector
built from the student's one pass beat the original's averaged chunks, where its whole reading (the mean of every
token state) does not?

Each reading is one row a text, scored as the suite scores `whole` and `chunks-mean-512` (models/readings.py):

    whole                 the mean of the student's token states, normalised (the suite's `whole`)
    chunks-mean           the original's 512-token chunk rows averaged (the suite's `chunks-mean-512`)
    late-mean             the student's late chunks (its states pooled per 510 text tokens) averaged
    late-best             the student's late chunks, scored by the best row (the suite's `late-chunking-512`)
    contextual-mean       the contextual chunks (models/readings.py `contextual_rows`) averaged
    *-centred             minus the mean vector of the held-out train books' rows (whole or chunks-mean):
                          the common direction of every document taken out (estimated on text not scored)
    mean+late-mean        averaged chunks plus the student's late-mean, normalised (and both centred)

The held-out train books (the verdict's documents, seed 1) and the test books (seeds 1-3), 50 pairs each:

    python scripts/cpu/one_row_readings.py STUDENT HELD.jsonl OUT.json [--original DIR] [--length 4096]

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

Passes = tuple[list[torch.Tensor], list[torch.Tensor]]  # each text's chunk rows, each text's whole states


def late(whole: torch.Tensor, size: int) -> torch.Tensor:
    """(m, D): the student's states pooled per `size` text tokens (special tokens left out), normalised."""
    text = whole[1:-1]
    return torch.cat(
        [F.normalize(text[a : a + size].mean(0, keepdim=True), dim=-1) for a in range(0, len(text), size)]
    )


def _unit(v: torch.Tensor) -> torch.Tensor:
    return F.normalize(v, dim=-1)


def readings(passes: Passes, size: int, centre: dict[str, torch.Tensor]) -> dict[str, list[torch.Tensor]]:
    chunks, wholes = passes
    out = {
        "whole": rows_of("whole", {"whole": wholes}),
        "chunks-mean": rows_of("chunks-mean-512", {"chunks": chunks}),
    }
    out["late-mean"] = [_unit(late(w, size).mean(0, keepdim=True)) for w in wholes]
    out["late-best"] = [late(w, size) for w in wholes]
    out["contextual-mean"] = [
        _unit(contextual_rows(c, w, size).mean(0, keepdim=True)) for c, w in zip(chunks, wholes, strict=True)
    ]
    out["whole-centred"] = [_unit(r - centre["whole"]) for r in out["whole"]]
    out["chunks-mean-centred"] = [_unit(r - centre["chunks-mean"]) for r in out["chunks-mean"]]
    out["late-mean-centred"] = [_unit(r - centre["whole"]) for r in out["late-mean"]]
    out["mean+late-mean"] = [_unit(a + b) for a, b in zip(out["chunks-mean"], out["late-mean"], strict=True)]
    out["mean-c+late-mean-c"] = [
        _unit(a + b) for a, b in zip(out["chunks-mean-centred"], out["late-mean-centred"], strict=True)
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("student")
    parser.add_argument("held")
    parser.add_argument("out")
    parser.add_argument("--original", default="runs/models/all-MiniLM-L6-v2")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--pairs", type=int, default=50)
    args = parser.parse_args()
    config = LongDocsConfig(model=args.student, original=args.original, data=args.data, documents=(args.held,),
                            output_dir="/tmp/one-row-readings", lengths=(args.length,), pairs=args.pairs)  # fmt: skip
    suite = Suite(config, encoder_at)
    size = suite.config.chunk_length - 2
    chunk_reader, whole_reader = suite.reader("chunks", args.length), suite.reader("whole", args.length)
    assert chunk_reader is not None
    assert whole_reader is not None

    def passes(corpus: list[str], task: str, seed: int) -> tuple[Passes, Passes]:
        rng = random.Random(f"{task}-{args.length}-{seed}")  # the suite's draw: the same pairs as its records
        firsts, seconds = draw(suite.tokenizer, args.length, args.pairs, corpus, rng)
        return tuple(  # type: ignore[return-value]
            (read("chunks", chunk_reader, t, size + 2), read("whole", whole_reader, t, size + 2))
            for t in (firsts, seconds)
        )

    held = passes(suite.documents, "documents", 1)
    centre = {  # the held-out books' mean rows: the common direction, estimated on text not scored
        "whole": torch.cat([r for side in held for r in rows_of("whole", {"whole": side[1]})]).mean(0),
        "chunks-mean": torch.cat(
            [r for side in held for r in rows_of("chunks-mean-512", {"chunks": side[0]})]
        ).mean(0),
    }
    result: dict[str, dict] = {
        "student": args.student,
        "length": args.length,
        "pairs": args.pairs,
        "seeds": {},
    }
    for name, (corpus, task, seed) in {"held1": (suite.documents, "documents", 1), "books1": (suite.books, "books", 1),
                                       "books2": (suite.books, "books", 2), "books3": (suite.books, "books", 3)}.items():  # fmt: skip
        queries, documents = held if name == "held1" else passes(corpus, task, seed)
        rq, rd = readings(queries, size, centre), readings(documents, size, centre)
        targets = list(range(len(rq["whole"])))
        result["seeds"][name] = {
            k: round(100 * float(retrieval_hits(rq[k], rd[k], targets).float().mean()), 1) for k in rq
        }
        print(name, json.dumps(result["seeds"][name]), flush=True)
    books = [result["seeds"][f"books{s}"] for s in (1, 2, 3)]
    result["books mean"] = {k: round(sum(b[k] for b in books) / 3, 1) for k in books[0]}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
