"""A/B in one run: a `pretrain --preset small` training step with the LM head on every position
(Hugging Face's default) vs on the masked positions only (`logits_for="labelled"`, what
`linformer pretrain` does). Alternating rounds, median step time; prints the speed-up per n.

    python scripts/cpu/masked_head_ab.py --seq-lens 512 2048 --tokens 8192 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.train.pretrain import PRESETS


def step(model, optimizer, batch, logits_for: str) -> None:
    optimizer.zero_grad(set_to_none=True)
    model(**batch, logits_for=logits_for).loss.backward()
    optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-lens", type=int, nargs="+", default=[512, 2048])
    parser.add_argument("--tokens", type=int, default=8192, help="tokens per step (batch = tokens / n)")
    parser.add_argument("--projected-length", default="128", help="k, or 'none' for full attention")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    k = None if args.projected_length == "none" else int(args.projected_length)
    for n in args.seq_lens:
        torch.manual_seed(0)
        config = LinformerConfig(**PRESETS["small"], max_position_embeddings=n + 2, projected_length=k)
        model = LinformerForMaskedLM(config).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        ids = torch.randint(3, config.vocab_size, (args.tokens // n, n))  # (b, n)
        labels = torch.where(torch.rand(ids.shape) < 0.15, ids, -100)  # the 15% to predict
        batch = {"input_ids": ids, "labels": labels}
        times: dict[str, list[float]] = {"all": [], "labelled": []}
        for choice in times:  # warm-up
            step(model, optimizer, batch, choice)
        for _ in range(args.rounds):
            for choice, samples in times.items():
                start = time.perf_counter()
                step(model, optimizer, batch, choice)
                samples.append(time.perf_counter() - start)
        every, masked = (statistics.median(times[c]) for c in ("all", "labelled"))
        print(f"n={n} k={args.projected_length} batch={args.tokens // n}: head on all positions {every * 1e3:.0f} ms, "
              f"masked only {masked * 1e3:.0f} ms, speed-up {every / masked:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
