#!/usr/bin/env bash
# GPU call 1: the whole test suite on the GPU machine (gpu-marked tests included), then a CUDA smoke of
# the benchmark. Run from the repo root on the device: bash scripts/gpu/tests.sh
source scripts/gpu/setup.sh
python3 -m pytest -q -p no:cacheprovider -n 8 -rs 2>&1 | tee "$OUT/pytest.log" | tail -40
python3 -m pytest -q -p no:cacheprovider -m gpu -v 2>&1 | tee "$OUT/pytest-gpu.log" | tail -15
python3 -m linformer_kit.cli.main benchmark --quick --device cuda --dtype bfloat16 --no-progress \
  --output-dir "$OUT/bench-quick" 2>&1 | tail -40
