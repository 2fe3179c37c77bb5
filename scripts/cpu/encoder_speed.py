r"""Replaced by `linformer benchmark --preset student` (docs/benchmarks.md, "A saved student against its original").

This script measured a student's encode speed against its original (texts/s, A/B in one process, the two
models alternated every repeat; peak RSS of one forward in a fresh process) at n = 512 ... 4 096, about
4 096 tokens a call. The command measures the same, and more: the batch sizes a user encodes with and
batch 1 at every n, the original on 512-token chunks beside it reading n tokens with copied positions,
ONNX Runtime beside torch, and every student given, the ratios printed and written to student.json /
student.md. Its run of this script's measurement, on the IMDB test text this script read:

    linformer benchmark --preset student --original runs/models/all-MiniLM-L6-v2 \
        --student runs/distill/minilm-k128-w64-g1 --seq-lens 512 2048 4096 --tokens-per-batch 4096 \
        --text-file ../shared/data/imdb/test.jsonl.gz --runtimes torch --rounds 3 --output-dir runs/speed-w64

What stays here is the batch `encoder_profile.py` profiles (`BATCH`, `batch_of`): the command's inputs
(linformer_kit.bench.student_inputs), IMDB test text cut to exactly n tokens. Run, this file prints the
command above and exits with status 2.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from linformer_kit.bench.student_inputs import ends_of, text_ids, token_rows, whole

BATCH = {512: 8, 1024: 4, 2048: 2, 4096: 1}  # texts a call: about 4 096 tokens each


def batch_of(tokenizer, data: Path, length: int, size: int) -> dict[str, torch.Tensor]:
    """`size` rows of exactly `length` tokens of IMDB test text, each [CLS] ... [SEP] (the command's inputs)."""
    ids = text_ids(tokenizer, str(Path(data) / "imdb" / "test.jsonl.gz"), size * length)
    return whole(token_rows(ids, length, size, ends_of(tokenizer)))


def main() -> int:
    command = __doc__.split("\n\n")[2].strip() if __doc__ else ""
    print(
        f"scripts/cpu/encoder_speed.py is replaced by `linformer benchmark --preset student`, e.g.\n\n    {command}"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
