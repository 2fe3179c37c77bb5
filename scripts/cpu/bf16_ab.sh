#!/usr/bin/env bash
# bf16 on a CPU with AVX512-bf16 or AMX (docs/benchmarks/cpu-bf16/README.md, "bfloat16 on CPU"). Run from the repo
# root on a quiet machine (nothing else running); about 15 minutes on 2 cores.
#   1. the layer forward in bf16 against PyPI `linformer` (n = 4096, 16384; k = 256), and the same
#      with glibc's default malloc (any MALLOC_*_ variable turns linformer_kit/allocator.py off);
#   2. training steps of the `small` encoder, fp32 and bf16, against the GEMM rate;
#   3. the two bf16 attention cores, A/B in one run (scripts/cpu/attention_core_ab.py);
#   4. `linformer pretrain --bf16` vs fp32 tokens/s at n = 512 (small preset, batch 64), each with
#      our allocator settings and with glibc's defaults, alternating, two rounds.
# Writes runs/bf16-ab/...; the tables it prints are the ones in docs/benchmarks.md.
set -euo pipefail
D=${DATA:-../shared/data}; O=runs/bf16-ab; rm -rf "$O"; mkdir -p "$O"
GLIBC="env MALLOC_TOP_PAD_=131072"  # glibc's own default value: only turns our settings off
LAYER="--dtype bfloat16 --seq-lens 4096 16384 --projected-lengths 256 \
  --methods linformer-headwise linformer-kv peer-linformer --rounds 5 --no-memory --no-progress"
linformer benchmark $LAYER --output-dir "$O/layer" | grep -B2 -A5 "over peer-linformer"
$GLIBC linformer benchmark $LAYER --output-dir "$O/layer-glibc" | grep -B2 -A5 "over peer-linformer"
for dtype in float32 bfloat16; do
  linformer benchmark --preset training --dtype $dtype --seq-lens 512 2048 --methods linformer-headwise \
    --no-memory --no-progress --output-dir "$O/training-$dtype" | grep "^| encoder"
done
python scripts/cpu/attention_core_ab.py 7 | tee "$O/attention_core_ab.md"
COMMON="--train $D/gutenberg/train.jsonl.gz --validation $D/gutenberg/valid.jsonl.gz --max_train_documents 10 \
  --preset small --seq_len 512 --seq_len_schedule none --max_steps 8 --eval_strategy no \
  --max_eval_blocks 2 --save_strategy no --disable_tqdm true --dataloader_num_workers 0"
linformer pretrain $COMMON --output_dir $O/pretrain-tok --max_steps 0 > /dev/null 2>&1  # the shared tokenizer
for round in 1 2; do
  for precision in fp32 bf16; do
    flag=$([ $precision = bf16 ] && echo "--bf16 true" || echo "")
    for malloc in ours glibc; do
      run=$([ $malloc = glibc ] && echo "$GLIBC" || echo "")
      $run linformer pretrain $COMMON --tokenizer $O/pretrain-tok $flag \
        --output_dir $O/pretrain-$precision-$malloc-$round > /dev/null 2>&1
      python -c "import json; m=json.load(open('$O/pretrain-$precision-$malloc-$round/metrics.json')); \
print('$precision $malloc round $round: tokens/s', round(m['tokens_per_second']))"
    done
  done
done
