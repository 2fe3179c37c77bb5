#!/usr/bin/env bash
# GPU call 3 (on the device, repo root): the GPU tier of the reproduction study.
# The carried .gpu/data stands in for ../shared/data, so the recorded commands are the ones a user runs.
source scripts/gpu/setup.sh
mkdir -p ../shared && ln -sfn "$PWD/.gpu/data" ../shared/data
export OMP_NUM_THREADS=2
timeout ${STUDY_SECONDS:-480} python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu.yaml 2>&1 | tee $OUT/study.log | grep -v "^\[reproduce\] started"
pkill -f "linformer_kit.cli.main" || true; sleep 2
python3 -m linformer_kit.cli.main reproduce recipes/reproduction/gpu.yaml --collect-only 2>&1 | tail -3
cat docs/reproduction/gpu/results.md
tar czf $OUT/study.tgz docs/reproduction/gpu runs/reproduction-gpu/logs runs/reproduction-gpu/commands.sh \
  $(ls runs/reproduction-gpu/*/*/metrics.json runs/reproduction-gpu/finetune/*/eval_predictions.jsonl 2>/dev/null)
