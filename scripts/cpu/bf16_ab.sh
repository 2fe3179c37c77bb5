#!/usr/bin/env bash
# Issue 11 measurements on a quiet 2-core CPU (run from the repo root, nothing else running):
#   1. the layer in bf16 vs fp32 against SDPA and PyPI `linformer` (n = 4096, 16384; k = 256);
#   2. `linformer pretrain --bf16` vs fp32 tokens/s at n = 512 (small preset), A/B/A/B.
# Writes runs/bf16-ab/{bench-bf16,bench-fp32}/ and runs/bf16-ab/pretrain-*/metrics.json.
set -euo pipefail
D=${DATA:-../shared/data}; O=runs/bf16-ab; rm -rf "$O"; mkdir -p "$O"
for dtype in bfloat16 float32; do
  linformer benchmark --dtype $dtype --threads 2 --seq-lens 4096 16384 --projected-lengths 256 \
    --methods linformer-headwise linformer-kv full-sdpa peer-linformer --rounds 3 --no-memory --no-progress \
    --output-dir "$O/bench-$dtype" | grep -A6 "over full-sdpa" | head -8
done
COMMON="--train $D/gutenberg/train.jsonl.gz --validation $D/gutenberg/valid.jsonl.gz --max_train_documents 10 \
  --preset small --seq_len 512 --per_device_train_batch_size 8 --max_steps 30 --logging_steps 10 \
  --max_eval_blocks 8 --save_strategy no --disable_tqdm true --dataloader_num_workers 0"
linformer pretrain $COMMON --output_dir $O/pretrain-tok --max_steps 0 > /dev/null   # trains the shared tokenizer
for round in 1 2; do
  for precision in fp32 bf16; do
    flag=$([ $precision = bf16 ] && echo "--bf16 true" || echo "")
    linformer pretrain $COMMON --tokenizer $O/pretrain-tok $flag --output_dir $O/pretrain-$precision-$round | tail -1
  done
done
