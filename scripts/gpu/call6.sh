#!/usr/bin/env bash
# GPU call 6 (on the device, repo root; carry .whl and .gpu, made by scripts/gpu/pack_data.sh): the
# Figure 3a run (pretrain defaults that learn) of recipes/reproduction/gpu-learns.yaml, then collect what finished. Results come back
# in $OUT/study.tgz; unpack here at the repo root and commit docs/reproduction/gpu-learns/.
source scripts/gpu/setup.sh
mkdir -p ../shared && ln -sfn "$PWD/.gpu/data" ../shared/data
export OMP_NUM_THREADS=4
timeout ${STUDY_SECONDS:-540} python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu-learns.yaml 2>&1 | grep "^\[reproduce\] done\|FAILED"
pkill -f "linformer_kit.cli.main" || true; sleep 2
python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu-learns.yaml --collect-only 2>&1 | tail -2
head -12 docs/reproduction/gpu-learns/results.md
tar czf $OUT/study.tgz docs/reproduction/gpu-learns runs/reproduction-gpu-learns/logs runs/reproduction-gpu-learns/commands.sh $(ls runs/reproduction-gpu-learns/pretrain/*/metrics.json runs/reproduction-gpu-learns/pretrain/*/log_history.jsonl 2>/dev/null)
