"""What one score costs in PyTorch's fused CPU flash kernel, by the shape of the key set (fp32, 12 heads of
32, 4 096 queries, 2 threads): 8 chunks of 512 (the original on chunks), the split core's band blocks (32
queries against 32 + 2w keys at w = 64, no mask, a mask broadcast over blocks and heads, a full mask), and
every query against the 129 shared keys (the slots and the global key).

    python scripts/cpu/flash_key_sets.py [--rounds 15] > flash-key-sets.json

Prints one JSON object: per case the median ms of a call and ns per score (scores computed, masked or not).
The reason for the native window kernel (nn/local_native.py; docs/benchmarks/native/README.md, "The native window kernel").
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from linformer_kit.allocator import reuse_freed_memory

H, D = 12, 32
FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu


def _qkv(batch: int, queries: int, keys: int) -> list[torch.Tensor]:
    """q (batch, H, queries, D), k and v (batch, H, keys, D): views of (batch, ·, H, D), the linears' layout."""
    shapes = [(batch, queries, H, D), (batch, keys, H, D), (batch, keys, H, D)]
    return [torch.randn(*shape).transpose(1, 2) for shape in shapes]


def _median_ms(call, rounds: int) -> float:
    call(), call()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    reuse_freed_memory()  # as every `linformer` verb: no page faults on fresh buffers
    torch.manual_seed(0)
    w, block = 64, 32
    blocks = 4096 // block
    band = torch.zeros(block, block + 2 * w)
    band[(torch.arange(block)[:, None] - torch.arange(block + 2 * w)[None, :] + w).abs() > w] = float("-inf")
    cases = {  # name: (batch, queries, keys, mask)
        "chunks 8 x 512": (8, 512, 512, None),
        "band 32 x 160, no mask": (blocks, block, block + 2 * w, None),
        "band 32 x 160, broadcast mask": (blocks, block, block + 2 * w, band.expand(blocks, 1, -1, -1)),
        "band 32 x 160, full mask": (
            blocks,
            block,
            block + 2 * w,
            band.expand(blocks, H, -1, -1).contiguous(),
        ),
        "shared 4096 x 129": (1, 4096, 129, None),
    }
    result: dict[str, object] = {"threads": torch.get_num_threads(), "torch": torch.__version__}
    with torch.inference_mode():
        for name, (batch, queries, keys, mask) in cases.items():
            q, k, v = _qkv(batch, queries, keys)
            ms = _median_ms(
                lambda q=q, k=k, v=v, m=mask: FLASH(q, k, v, 0.0, False, attn_mask=m, scale=D**-0.5),
                args.rounds,
            )
            result[name] = {"ms": ms, "ns_per_score": ms * 1e6 / (batch * H * queries * keys)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
