#!/usr/bin/env bash
# Run here (not on the GPU machine), from the repository root: copies what the GPU recipes read into
# .gpu/data (git-ignored; it travels with the device tool's `carry`, 64 MiB in all): the first 130
# Gutenberg training books (the recipes' max_train_documents), the validation books, SST-2 train/dev
# and IMDB train/test. On the GPU machine: DATA=.gpu/data bash scripts/gpu/run.sh study RECIPE
# (scripts/gpu/README.md).
#
#   bash scripts/gpu/pack_data.sh [SOURCE]    # SOURCE: the data folder (default $DATA, else ../shared/data)
set -euo pipefail
src=${1:-${DATA:-../shared/data}}
src=$(cd "$src" && pwd) # as given, from where it was called
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
dst=.gpu/data
rm -rf "$dst" && mkdir -p "$dst"/{gutenberg,sst2,imdb}
(zcat "$src/gutenberg/train.jsonl.gz" || true) | head -n 130 | gzip -1 >"$dst/gutenberg/train.jsonl.gz"
cp "$src/gutenberg/valid.jsonl.gz" "$dst/gutenberg/"
cp "$src/sst2/train.tsv" "$src/sst2/dev.tsv" "$dst/sst2/"
cp "$src/imdb/train.jsonl.gz" "$src/imdb/test.jsonl.gz" "$dst/imdb/"
du -sh "$dst"
