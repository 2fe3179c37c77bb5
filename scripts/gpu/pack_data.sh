#!/usr/bin/env bash
# Copy what the GPU tier reads into .gpu/data (git-ignored; it travels with `carry`, 64 MiB in all):
# the first 130 Gutenberg training books (the recipe's max_train_documents), the validation books,
# SST-2 train/dev and IMDB train/test. Run here, from the repo root.
set -euo pipefail
src=${1:-../shared/data}
dst=.gpu/data
rm -rf "$dst" && mkdir -p "$dst"/{gutenberg,sst2,imdb}
(zcat "$src/gutenberg/train.jsonl.gz" || true) | head -n 130 | gzip -1 > "$dst/gutenberg/train.jsonl.gz"
cp "$src/gutenberg/valid.jsonl.gz" "$dst/gutenberg/"
cp "$src/sst2/train.tsv" "$src/sst2/dev.tsv" "$dst/sst2/"
cp "$src/imdb/train.jsonl.gz" "$src/imdb/test.jsonl.gz" "$dst/imdb/"
du -sh "$dst"
