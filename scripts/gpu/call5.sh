#!/usr/bin/env bash
# GPU call 5 (on the device, repo root; carry .whl and .gpu, made by scripts/gpu/pack_data.sh): the
# plateau run of recipes/reproduction/gpu-plateau.yaml, then collect what finished. Results come back
# in $OUT/study.tgz; unpack here at the repo root and commit docs/reproduction/gpu-plateau/.
source scripts/gpu/setup.sh
mkdir -p ../shared && ln -sfn "$PWD/.gpu/data" ../shared/data
export OMP_NUM_THREADS=4
timeout ${STUDY_SECONDS:-540} python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu-plateau.yaml 2>&1 | grep "^\[reproduce\] done\|FAILED"
pkill -f "linformer_kit.cli.main" || true; sleep 2
python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu-plateau.yaml --collect-only 2>&1 | tail -2
head -12 docs/reproduction/gpu-plateau/results.md
tar czf $OUT/study.tgz docs/reproduction/gpu-plateau runs/reproduction-gpu-plateau/logs runs/reproduction-gpu-plateau/commands.sh $(ls runs/reproduction-gpu-plateau/pretrain/*/metrics.json 2>/dev/null)
