#!/usr/bin/env bash
# Issue 11: `linformer pretrain --preset small` tokens/s, Linformer k=128 vs full attention, fp32,
# n = 512, 1024, 2048, 4096; 8192 tokens per step (batch = 8192 / n), 6 steps each (the Trainer's
# throughput callback skips the first). Run from the repo root on a quiet machine (nothing else
# running); prints one line per run and writes runs/pretrain-throughput/<n>-<k>/metrics.json.
# Add `--bf16 true` to COMMON on a CPU with AVX512-bf16 or AMX (elsewhere bf16 is ~20x slower).
set -euo pipefail
D=${DATA:-../shared/data}; O=runs/pretrain-throughput; rm -rf "$O"; mkdir -p "$O"
COMMON="--train $D/gutenberg/train.jsonl.gz --validation $D/gutenberg/valid.jsonl.gz --max_train_documents 10 \
  --preset small --max_steps 6 --logging_steps 6 --max_eval_blocks 2 --per_device_eval_batch_size 1 \
  --save_strategy no --disable_tqdm true --dataloader_num_workers 0 --report_to none"
linformer pretrain $COMMON --seq_len 512 --output_dir $O/tokenizer --max_steps 0 > /dev/null  # one BPE for all runs
for n in 512 1024 2048 4096; do
  for k in none 128; do
    linformer pretrain $COMMON --tokenizer $O/tokenizer --seq_len $n --projected_length $k \
      --per_device_train_batch_size $((8192 / n)) --output_dir $O/$n-$k > /dev/null
    python -c "import json,sys; m=json.load(open('$O/$n-$k/metrics.json')); print(f'n={$n} k=$k tokens/s {m[\"tokens_per_second\"]:.0f}')"
  done
done
