"""Where one forward of an encoder spends its CPU time (torch.profiler, ops by self time).

    python scripts/cpu/encoder_profile.py runs/distill/minilm-k128-w64-g1 --length 4096
    python scripts/cpu/encoder_profile.py runs/models/all-MiniLM-L6-v2 --length 4096

The batch is `encoder_speed.py`'s (IMDB test text cut to exactly n tokens, about 4 096 tokens a call) and
the model is read at n as there (`encoder_at`), under the malloc settings every `linformer` verb runs under
(allocator.py: freed memory reused, so no call pays page faults the benchmark does not). One warm-up call,
one timed call, then `--calls` profiled calls, whose totals it prints (divide by the calls for one forward).
Run it with the CPU to itself; docs/reproduction/distill-minilm/profile.txt holds what it printed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import AutoTokenizer

import linformer_kit.models  # noqa: F401  (registers model_type "linformer" with the Auto classes)
from linformer_kit.allocator import reuse_freed_memory
from linformer_kit.models.extend import encoder_at

sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoder_speed import BATCH, batch_of  # the same batch as the speed measurement


@torch.no_grad()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--length", type=int, default=4096, choices=sorted(BATCH))
    parser.add_argument("--data", default="../shared/data")
    parser.add_argument("--tokenizer", default="runs/models/all-MiniLM-L6-v2")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--rows", type=int, default=12)
    parser.add_argument("--calls", type=int, default=1)
    args = parser.parse_args()
    reuse_freed_memory()  # what the CLI does first (cli/main.py)
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    batch = batch_of(tokenizer, Path(args.data), args.length, BATCH[args.length])
    model = encoder_at(args.model, args.length)
    model(**batch)  # warm-up
    start = time.perf_counter()
    model(**batch)
    print(
        f"{args.model} n = {args.length} x {BATCH[args.length]}: {time.perf_counter() - start:.3f} s a forward"
    )
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.calls):
            model(**batch)
    print(f"{args.calls} profiled call(s)")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows))


if __name__ == "__main__":
    main()
