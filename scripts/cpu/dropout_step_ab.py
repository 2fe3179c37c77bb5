"""A/B of attention dropout in a distill step: the teacher's 0.1 against 0 (`--attention-dropout`'s default),
for one long-stage step (window and halves terms, one backward each, long layers training, as the long stage
at its defaults) and one 512-stage end-to-end step (every weight training). On a CPU, 0 lets the window train
on the fused SDPA core (nn/cores.py `choose`: no scores written out); 0.1 takes the
explicit one.

    time   alternating steps of the two in one process (`--rounds` each, after a warm-up of each), median
    memory each (stage, dropout) alone in its own process (`--steps` steps), the peak resident set

Prints the ratios (0 / 0.1) and writes them to `--json`. Not run in tests: needs the models.

    python scripts/cpu/dropout_step_ab.py --student runs/distill/minilm-k128-w64-g1 \\
        --teacher runs/models/all-MiniLM-L6-v2 --json docs/reproduction/long-minilm/dropout-step-ab.json
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import tempfile
import time

import torch
from long_step_ab import alternated, peak_alone  # the same harness (scripts/cpu/long_step_ab.py)

from linformer_kit.bench.memory import peak_rss
from linformer_kit.models import LinformerModel
from linformer_kit.train.distill import DistillConfig
from linformer_kit.train.distill.long import long_student
from linformer_kit.train.distill.long_losses import long_terms
from linformer_kit.train.distill.losses import end_to_end_loss
from linformer_kit.train.distill.trainer import attention_dropout, load_teacher

DROPOUTS = (0.1, 0.0)


def _setup(args: argparse.Namespace, stage: str):
    config = DistillConfig(
        teacher=args.teacher, train=["unused"], output_dir=tempfile.mkdtemp(), projected_length=128,
        local_window=64, global_tokens=1, seq_len=512, exact_length=512, long_length=args.length,
        long_batch_size=args.batch, short_weight=0.0, use_cpu=True, report_to=[],
    )  # fmt: skip
    teacher = load_teacher(args.teacher)
    student = LinformerModel.from_pretrained(args.student).train()
    g = torch.Generator().manual_seed(0)
    rows, length = (args.batch, args.length) if stage == "long" else (args.short_batch, 512)
    ids = torch.randint(1000, 29000, (rows, length), generator=g)
    ids[:, 0], ids[:, -1] = 101, 102  # [CLS] ... [SEP]
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if stage == "long":  # the long layers train, every other weight stays
        student = long_student(student, config, teacher)
        for name, parameter in student.named_parameters():
            parameter.requires_grad_(".long_layer." in name)
    return config, teacher, student, inputs


def _step(setup, stage: str, dropout: float) -> float:
    config, teacher, student, inputs = setup
    student.zero_grad(set_to_none=True)
    start = time.perf_counter()
    with attention_dropout(student, dropout):
        if stage == "long":
            for term in long_terms(student, teacher, inputs, config):
                term.backward()
        else:
            end_to_end_loss(student, teacher, inputs, 1.0, 1.0).backward()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", required=True, help="a 512 student (distill's end-to-end output)")
    parser.add_argument("--teacher", required=True)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=2, help="spans a long step")
    parser.add_argument("--short-batch", type=int, default=8, help="documents of 512 tokens a 512 step")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2, help="steps of each memory process")
    parser.add_argument("--alone", nargs=2, metavar=("STAGE", "DROPOUT"), help="(internal) one peak RSS")
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.manual_seed(0)
    if args.alone:  # the memory process: one stage at one dropout, alone
        stage, dropout = args.alone[0], float(args.alone[1])
        setup = _setup(args, stage)
        for _ in range(args.steps):
            _step(setup, stage, dropout)
        print(json.dumps({"peak_rss_gb": peak_rss() / 1e9}))
        return
    result: dict = {"what": "one distill step at attention dropout 0.1 (the teacher's) and 0: a long-stage step "
                    f"(batch {args.batch} x {args.length}, window + halves terms, long layers training) and a "
                    f"512-stage end-to-end step (batch {args.short_batch} x 512, every weight training)",
                    "threads": torch.get_num_threads()}  # fmt: skip
    for stage in ("512", "long"):
        setup = _setup(args, stage)
        times = alternated(functools.partial(_step, setup, stage), DROPOUTS, args.rounds, f"{stage} dropout ")
        del setup
        memory = ["--student", args.student, "--teacher", args.teacher, "--length", str(args.length), "--batch",
                  str(args.batch), "--short-batch", str(args.short_batch), "--steps", str(args.steps), "--alone",
                  stage]  # fmt: skip
        peaks = {p: peak_alone(__file__, [*memory, str(p)], f"{stage}: dropout {p}") for p in DROPOUTS}
        median = {p: statistics.median(t) for p, t in times.items()}
        result[stage] = {
            "seconds": {str(p): t for p, t in times.items()}, "median_s": {str(p): m for p, m in median.items()},
            "time_ratio_0_over_0.1": median[0.0] / median[0.1], "peak_rss_gb": {str(p): v for p, v in peaks.items()},
            "peak_ratio_0_over_0.1": peaks[0.0] / peaks[0.1],
        }  # fmt: skip
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
