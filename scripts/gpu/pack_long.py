"""Packs the text scripts/gpu/long_student.py reads into a git-ignored folder the device tool carries.

    python scripts/gpu/pack_long.py smoke   # .gpu/smoke: a few books and reviews (~3 MiB, beside the teacher)
    python scripts/gpu/pack_long.py full    # .gpu/long: what the README's long command and longdocs read

JSON lines go as `dir_name.jsonl.xz` (xz -9: a third smaller than gzip, so more text fits the 64 MiB a
call carries); long_student.py writes them back as dir/name.jsonl.gz. `full` keeps every Gutenberg training
book, IMDB train and test whole (longdocs draws its long reviews from the whole files with a seed: the same
draw as on the CPU), IMDB unsup's first 10 000 reviews (the long text's second source: its 512-token windows),
and the held-out books as they are. DATA (default ../shared/data) is the source folder.
"""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import sys
from itertools import islice
from pathlib import Path

SOURCE = Path(os.environ.get("DATA", "../shared/data"))
# name -> (source file, how many lines (None: all), every how many-th line: IMDB's files are sorted by label)
FULL = {
    "gutenberg_train": ("gutenberg/train.jsonl.gz", None, 1),
    "imdb_train": ("imdb/train.jsonl.gz", None, 1),
    "imdb_test": ("imdb/test.jsonl.gz", None, 1),
    "imdb_unsup": ("imdb/unsup.jsonl.gz", 10_000, 1),
}
SMOKE = {
    "gutenberg_train": ("gutenberg/train.jsonl.gz", 8, 1),
    "imdb_train": ("imdb/train.jsonl.gz", 25_000, 50),
    "imdb_test": ("imdb/test.jsonl.gz", 25_000, 50),
    "imdb_unsup": ("imdb/unsup.jsonl.gz", 400, 1),
}
AS_THEY_ARE = ("gutenberg/valid.jsonl.gz", "gutenberg/test.jsonl.gz")


def pack(files: dict[str, tuple[str, int | None, int]], target: Path) -> None:
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name, (source, lines, step) in files.items():
        with (
            gzip.open(SOURCE / source, "rb") as src,
            lzma.open(target / f"{name}.jsonl.xz", "wb", preset=9) as dst,
        ):
            dst.writelines(islice(src, 0, lines, step))
    for source in AS_THEY_ARE:
        (target / source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SOURCE / source, target / source)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    print(f"{target}: {size / 2**20:.1f} MiB")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode not in ("smoke", "full"):
        sys.exit("usage: python scripts/gpu/pack_long.py smoke|full")
    pack(SMOKE if mode == "smoke" else FULL, Path(".gpu/smoke" if mode == "smoke" else ".gpu/long"))
