#!/usr/bin/env bash
# GPU call 2 (on the device, repo root): Table 3 grid, kernels, profile, compiled path, training throughput.
source scripts/gpu/setup.sh
R=$OUT/r; mkdir -p $R
timeout 150 python3 scripts/gpu/table3.py --out $R --parts kernels compiled 2>&1 | tee $R/log-kernels.txt | tail -60
timeout 150 python3 scripts/gpu/train_throughput.py --out $R 2>&1 | tee $R/log-train.txt | tail -16
timeout 115 python3 scripts/gpu/table3.py --out $R --parts layer 2>&1 > $R/log-layer.txt; tail -3 $R/log-layer.txt
timeout 50 python3 scripts/gpu/table3.py --out $R --parts layer-batch8 2>&1 > $R/log-layer8.txt; tail -3 $R/log-layer8.txt
timeout 100 python3 scripts/gpu/table3.py --out $R --parts encoder 2>&1 > $R/log-encoder.txt; tail -3 $R/log-encoder.txt
tar czf $OUT/call2.tgz -C $OUT r env.txt
