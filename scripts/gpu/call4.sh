#!/usr/bin/env bash
# GPU call 4 (on the device, repo root): the benchmark rows call 2 ran out of time for, then the
# diagnostic pretraining recipe (does MLM leave the unigram plateau with more steps?).
source scripts/gpu/setup.sh
R=$OUT/r; mkdir -p $R
timeout 60 python3 scripts/gpu/table3.py --out $R --parts encoder-k256 > $R/log-encoder.txt 2>&1; tail -2 $R/log-encoder.txt
timeout 40 python3 scripts/gpu/table3.py --out $R --parts layer-large-k > $R/log-large-k.txt 2>&1; tail -2 $R/log-large-k.txt
mkdir -p ../shared && ln -sfn "$PWD/.gpu/data" ../shared/data
export OMP_NUM_THREADS=4
timeout ${STUDY_SECONDS:-220} python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu-long.yaml --probe-lengths 2>&1 | grep "^\[reproduce\] done\|FAILED"
pkill -f "linformer_kit.cli.main" || true; sleep 2
python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu-long.yaml --collect-only --probe-lengths 16 64 512 2>&1 | tail -2
head -12 docs/reproduction/gpu-long/results.md
tar czf $OUT/call4.tgz -C $OUT r env.txt && tar czf $OUT/study.tgz docs/reproduction/gpu-long runs/reproduction-gpu-long/logs runs/reproduction-gpu-long/commands.sh $(ls runs/reproduction-gpu-long/pretrain/*/metrics.json)
