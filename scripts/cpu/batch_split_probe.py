"""Is a batch of 32 long rows slower per token than the same rows in smaller batches? A probe (issue "Never slower
on the user's machine"): a saved long student on 32 rows of 2 048 tokens (16 of 4 096) read in one batch, in
batches of 4 and one at a time, and the same tokens as 512-token chunks in batches of 32 (the student reads
those exactly, as the original does), rounds alternating, medians; writes them to OUT after each length. The
model's own token groups (models/token_groups.py) are off in those arms; `--budgets` adds one arm a budget,
the whole batch in one call with GROUP_TOKENS set to it (what picked the default).

    python scripts/cpu/batch_split_probe.py runs/distill/h40-whole-s42 docs/benchmarks/encode/batch-split.json \
        [--budgets 2048 4096 8192 16384]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch

from linformer_kit.models import LinformerModel, token_groups

OFF = 2**62  # GROUP_TOKENS no batch reaches: the groups off


def read(model: LinformerModel, ids: torch.Tensor, per: int, budget: int = OFF) -> float:
    """Seconds to read `ids` in batches of `per` rows, the model's token groups at `budget` tokens."""
    kept, token_groups.GROUP_TOKENS = token_groups.GROUP_TOKENS, budget
    try:
        start = time.perf_counter()
        with torch.no_grad():
            for i in range(0, len(ids), per):
                model(input_ids=ids[i : i + per], attention_mask=torch.ones_like(ids[i : i + per]))
        return time.perf_counter() - start
    finally:
        token_groups.GROUP_TOKENS = kept


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("student")
    parser.add_argument("out", type=Path)
    parser.add_argument("--budgets", type=int, nargs="*", default=[])
    args = parser.parse_args()
    torch.set_num_threads(2)
    model = LinformerModel.from_pretrained(args.student).eval()
    torch.manual_seed(0)
    out: dict[int, dict[str, float]] = {}
    for n, rows in ((2048, 32), (4096, 16)):
        ids = torch.randint(1000, 20000, (rows, n))
        arms = {"rows-all": (ids, rows, OFF), "rows-by-4": (ids, 4, OFF), "rows-by-1": (ids, 1, OFF),
                "chunks-by-32": (ids.reshape(-1, 512), 32, OFF),
                **{f"rows-all-groups-{b}": (ids, rows, b) for b in args.budgets}}  # fmt: skip
        for x, per, budget in arms.values():
            read(model, x[:per], per, budget)  # warm
        seconds: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(3):
            for name, (x, per, budget) in arms.items():
                seconds[name].append(read(model, x, per, budget))
        out[n] = {name: statistics.median(s) for name, s in seconds.items()}
        print(n, {name: round(s, 2) for name, s in out[n].items()}, flush=True)
        args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
