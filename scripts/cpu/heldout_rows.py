"""Read the held-out pairs once and keep what every reading is made of (issue "A long student worth it at 4 096").

A reading of the held-out books (docs/reproduction/long-minilm/heldout) costs two passes over 600 texts of
4 094 tokens: 20-25 minutes of 2 cores each time a way of scoring them changes. This script reads them once and
keeps, for each half: the original's 512-token chunk rows (what chunks-best-512 and chunks-mean-512 score), the
student's whole reading pooled (`whole`), and the student's text-token states summed over groups of 6 tokens
(6 divides the 510 text tokens of a chunk and the 4 092 of a half), from which any late-chunking or contextual
reading at a multiple of 6 tokens is exact. scripts/cpu/heldout_readings.py scores them.

Two draws: `test` is the suite's own (`longdocs --documents HELD --lengths 4096 --pairs 300 --seeds 1`, the
records under heldout/), `dev` the suite's draw for seed 2 without the pairs `test` holds, where readings are
chosen before `test` is read.

    python scripts/cpu/heldout_rows.py STUDENT ORIGINAL HELD.jsonl OUT_DIR [--length 4096] [--pairs 300]
        [--draws dev test] [--chunks-from OTHER_ROWS_DIR]

`--draws test` reads the test draw alone (half the time): for a student whose reading was chosen before, on
another student's dev draw. `--chunks-from` takes the original's rows from another student's folder of the same
draw (checked by its meta.json), so only the student is read: half the time again.

Not run in tests: needs a long student, all-MiniLM-L6-v2 and the held-out books (held_out_books.py).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from linformer_kit.longdocs.config import LongDocsConfig
from linformer_kit.longdocs.suite import Suite
from linformer_kit.models.extend import encoder_at
from linformer_kit.models.halves import draw
from linformer_kit.models.readings import _pooled, read

GROUP = 6  # tokens a stored state group sums: divides 510 (a 512-token chunk's text) and 4 092 (a half's)


def grouped(states: torch.Tensor, slots: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(slots, D) sums of the text-token states (special tokens first and last left out) over groups of GROUP
    tokens, and (slots,) how many tokens each group holds (0 past the text)."""
    text = states[1:-1]
    sums = torch.zeros(slots, text.shape[-1])
    counts = torch.zeros(slots)
    for g, a in enumerate(range(0, len(text), GROUP)):
        sums[g] = text[a : a + GROUP].sum(0)
        counts[g] = len(text[a : a + GROUP])
    return sums, counts


def original_rows(suite: Suite, texts: list[str], length: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The original's 512-token chunk rows of `texts`: (texts, most chunks, D) unit rows, zero-padded, and
    (texts,) how many each holds."""
    chunk_reader = suite.reader("chunks", length)
    assert chunk_reader is not None
    chunks = read("chunks", chunk_reader, texts, 512)  # each (m_i, D), unit rows
    width = max(len(c) for c in chunks)
    chunk_rows = torch.zeros(len(texts), width, chunks[0].shape[-1])
    for i, c in enumerate(chunks):
        chunk_rows[i, : len(c)] = c
    return chunk_rows, torch.tensor([len(c) for c in chunks])


def keep(suite: Suite, texts: list[str], length: int, path: Path, chunks_from: Path | None = None) -> float:
    """Read `texts` both ways and save what the readings need to `path`; returns seconds taken. `chunks_from`:
    a file of the same draw whose original's rows are taken as they are (the original reads them alike for
    every student)."""
    start = time.perf_counter()
    whole_reader = suite.reader("whole", length)
    assert whole_reader is not None
    if chunks_from is None:
        chunk_rows, chunk_counts = original_rows(suite, texts, length)
    else:
        kept = load_file(str(chunks_from))
        chunk_rows, chunk_counts = kept["chunk_rows"], kept["chunk_counts"]
        assert len(chunk_counts) == len(texts), (
            f"{chunks_from}: {len(chunk_counts)} texts, this draw {len(texts)}"
        )
    slots = -(-(length - 2) // GROUP)
    sums, counts, wholes = [], [], []
    for at in range(0, len(texts), 50):  # 50 whole readings at a time: 300 would hold 1.9 GB of states
        for states in read("whole", whole_reader, texts[at : at + 50], 512):
            s, c = grouped(states, slots)
            sums.append(s.half())
            counts.append(c)
            wholes.append(_pooled(states)[0])
    save_file(
        {
            "chunk_rows": chunk_rows.contiguous(),
            "chunk_counts": chunk_counts,
            "whole": torch.stack(wholes).contiguous(),
            "group_sums": torch.stack(sums).contiguous(),
            "group_counts": torch.stack(counts).contiguous(),
        },
        str(path),
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("student")
    parser.add_argument("original")
    parser.add_argument("held")
    parser.add_argument("out")
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--draws", nargs="+", choices=("dev", "test"), default=["dev", "test"])
    parser.add_argument("--chunks-from", type=Path, default=None,
                        help="another student's rows folder of the same books, length and pairs: its original's rows")  # fmt: skip
    args = parser.parse_args()
    if args.chunks_from is not None:  # the same draw, or the rows would belong to other texts
        theirs = json.loads((args.chunks_from / "meta.json").read_text())
        mine = {"original": args.original, "held": args.held, "length": args.length}
        if {k: theirs[k] for k in mine} != mine or any(theirs["pairs"].get(d) is None for d in args.draws):
            parser.error(
                f"--chunks-from {args.chunks_from}: read {theirs}, not this draw ({mine}, {args.draws})"
            )
    config = LongDocsConfig(model=args.student, original=args.original, data=args.data, documents=[args.held],
                            output_dir="/tmp/heldout-rows", lengths=[args.length], pairs=args.pairs)  # fmt: skip
    suite = Suite(config, encoder_at)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for name, seed in (("test", 1), ("dev", 2)):
        rng = random.Random(f"documents-{args.length}-{seed}")  # the suite's draw (Suite.halves)
        drawn[name] = draw(suite.tokenizer, args.length, args.pairs, suite.documents, rng)
    taken = set(drawn["test"][0])
    kept = [i for i, first in enumerate(drawn["dev"][0]) if first not in taken]
    drawn["dev"] = ([drawn["dev"][0][i] for i in kept], [drawn["dev"][1][i] for i in kept])
    seconds = {}
    for name in args.draws:
        firsts, seconds_ = drawn[name]
        for side, texts in (("firsts", firsts), ("seconds", seconds_)):
            seconds[f"{name}-{side}"] = round(
                keep(
                    suite,
                    texts,
                    args.length,
                    out / f"{name}-{side}.safetensors",
                    args.chunks_from and args.chunks_from / f"{name}-{side}.safetensors",
                ),
                1,
            )
            print(name, side, len(texts), seconds[f"{name}-{side}"], flush=True)
    meta = {"student": args.student, "chunks_from": args.chunks_from and str(args.chunks_from), "original": args.original, "held": args.held, "length": args.length,
            "pairs": {k: len(drawn[k][0]) for k in args.draws}, "group": GROUP, "seconds": seconds}  # fmt: skip
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
