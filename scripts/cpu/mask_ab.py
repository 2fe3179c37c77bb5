"""A/B in one run: a full-attention training step of the `pretrain --preset small` model given an
all-ones attention_mask, kept (the masked SDPA call: the math path on CPU) vs dropped (what
`LinformerModel` does since the mask holds no padding). Alternating rounds, median step time.

    python scripts/cpu/mask_ab.py --seq-lens 512 4096 --tokens 8192 --rounds 5
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import linformer_kit.models.modeling_linformer as modeling
from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.train.pretrain import PRESETS

DROPPING = modeling._key_padding_mask


def keeping(attention_mask: torch.Tensor | None) -> torch.Tensor | None:  # the behaviour before
    return None if attention_mask is None else attention_mask.bool()


def step(model, optimizer, batch, mask_fn) -> float:
    modeling._key_padding_mask = mask_fn
    start = time.perf_counter()
    optimizer.zero_grad(set_to_none=True)
    model(**batch, logits_for="labelled").loss.backward()
    optimizer.step()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq-lens", type=int, nargs="+", default=[512, 4096])
    parser.add_argument("--tokens", type=int, default=8192, help="tokens per step (batch = tokens / n)")
    parser.add_argument("--projected-length", default="none", help="k, or 'none' for full attention")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    k = None if args.projected_length == "none" else int(args.projected_length)
    for n in args.seq_lens:
        torch.manual_seed(0)
        config = LinformerConfig(**PRESETS["small"], max_position_embeddings=n + 2, projected_length=k)
        model = LinformerForMaskedLM(config).train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
        ids = torch.randint(3, config.vocab_size, (args.tokens // n, n))  # (b, n)
        labels = torch.where(torch.rand(ids.shape) < 0.15, ids, -100)
        batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
        times: dict[str, list[float]] = {"kept": [], "dropped": []}
        functions = {"kept": keeping, "dropped": DROPPING}
        for name in times:  # warm-up
            step(model, optimizer, batch, functions[name])
        for _ in range(args.rounds):
            for name, samples in times.items():
                samples.append(step(model, optimizer, batch, functions[name]))
        modeling._key_padding_mask = DROPPING
        kept, dropped = (statistics.median(times[name]) for name in ("kept", "dropped"))
        print(f"n={n} k={args.projected_length} batch={args.tokens // n}: mask kept {kept * 1e3:.0f} ms, "  # noqa: T201
              f"dropped {dropped * 1e3:.0f} ms, speed-up {kept / dropped:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
