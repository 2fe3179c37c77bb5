"""A padded batch against its rows read alone, through a saved long student, A/B in one process (issue 82):
before, the short rows ran layer by layer at the batch's padded width (`routed`); now the model reads the short
rows as a batch of their own at width exact_length (`apart`, models/row_groups.py), and now reads a CPU inference
batch in groups of at most GROUP_TOKENS tokens, each cut to its rows (`groups`, models/token_groups.py). Rounds
alternate the readings; the ratios are medians over rounds of (batch time) / (sum of its rows' times alone).

    python scripts/cpu/padded_batch_ab.py runs/distill/minilm-long4096 docs/benchmarks/padded-batch/ab.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from unittest import mock

import torch

from linformer_kit.models import LinformerModel

CASES = ((4096, 300), (3000, 2900), (4096, 4000))  # real tokens a row; the batch is padded to the longest


def timed(model: LinformerModel, ids: torch.Tensor, mask: torch.Tensor) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a saved long student (exact_length set, e.g. distill --long-length)")
    parser.add_argument("out", type=Path, help="the JSON record to write")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = LinformerModel.from_pretrained(args.model).eval()
    info = Path("/proc/cpuinfo").read_text().splitlines()
    cpu = next((line.split(":", 1)[1].strip() for line in info if "model name" in line), "?")
    record = {
        "model": Path(args.model).name, "exact_length": model.config.exact_length, "threads": args.threads,
        "rounds": args.rounds, "cpu": cpu, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch": torch.__version__, "python": platform.python_version(), "cases": [],
    }  # fmt: skip
    torch.manual_seed(0)
    for lengths in CASES:
        n = max(lengths)
        ids = torch.randint(1000, 20000, (len(lengths), n))
        mask = (torch.arange(n)[None, :] < torch.tensor(lengths)[:, None]).long()
        times: dict[str, list[float]] = {"routed": [], "apart": [], "groups": [], "alone": []}
        timed(model, ids, mask)  # warm: the kernel's build, the allocator
        for _ in range(args.rounds):
            with mock.patch("linformer_kit.models.modeling_linformer.read_grouped", return_value=False):
                with mock.patch("linformer_kit.models.modeling_linformer.read_apart", return_value=False):
                    times["routed"].append(timed(model, ids, mask))
                times["apart"].append(timed(model, ids, mask))
            times["groups"].append(timed(model, ids, mask))
            times["alone"].append(
                sum(timed(model, ids[r : r + 1, :m], mask[r : r + 1, :m]) for r, m in enumerate(lengths))
            )
        ratio = {
            k: statistics.median(t / a for t, a in zip(times[k], times["alone"], strict=True))
            for k in ("routed", "apart", "groups")
        }
        case = {"lengths": list(lengths), "seconds": times, "routed_over_alone": round(ratio["routed"], 3),
                "apart_over_alone": round(ratio["apart"], 3), "groups_over_alone": round(ratio["groups"], 3)}  # fmt: skip
        record["cases"].append(case)
        print(
            f"{lengths}: routed {ratio['routed']:.2f}x, apart {ratio['apart']:.2f}x, groups {ratio['groups']:.2f}x the rows alone",
            flush=True,
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
