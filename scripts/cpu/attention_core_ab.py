"""A/B in one run: the bf16 attention cores on CPU, PyTorch SDPA vs our query-blocked core.

What `backend="auto"` chooses between (linformer_kit/nn/backends.py), on the same weights and input,
timed in alternating rounds (median of ROUNDS), with a bf16 2048^3 GEMM sampled in the same rounds:
  - one attention layer, forward (d=768, 12 heads, headwise k=256; and full attention at n=2048);
  - one training step (forward + backward + AdamW, autocast bf16) of the `small` encoder, k=128, batch 2.
Run from the repository root on a quiet machine with AVX512-bf16 or AMX (elsewhere bf16 is emulated):
    python scripts/cpu/attention_core_ab.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time

import torch

from linformer_kit.allocator import reuse_freed_memory
from linformer_kit.bench.cases import EncoderForBenchmark, train_step
from linformer_kit.models import LinformerConfig, LinformerModel
from linformer_kit.nn import LinformerSelfAttention

CORES = ("sdpa", "blocked")


def set_backend(module: torch.nn.Module, backend: str) -> None:
    for layer in module.modules():
        if isinstance(layer, LinformerSelfAttention):
            layer.backend = backend


def layer_cases(n: int, k: int | None) -> dict[str, object]:
    torch.manual_seed(0)
    layer = LinformerSelfAttention(768, 12, n, k).to(torch.bfloat16).eval()
    x = torch.randn(1, n, 768, dtype=torch.bfloat16)

    def forward(backend: str) -> None:
        set_backend(layer, backend)
        with torch.inference_mode():
            layer(x)

    return {core: (lambda core=core: forward(core)) for core in CORES}


def train_cases(n: int) -> dict[str, object]:
    torch.manual_seed(0)
    config = LinformerConfig(
        vocab_size=8, hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
        max_position_embeddings=n + 2, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
        projected_length=128, sharing="headwise",
    )  # fmt: skip
    x = torch.randn(2, n, 256)
    cases = {}
    for core in CORES:
        model = EncoderForBenchmark(LinformerModel(config, add_pooling_layer=False))
        set_backend(model, core)
        cases[core] = train_step(model, x, torch.bfloat16)
    return cases


def main(rounds: int) -> None:
    reuse_freed_memory()  # as the `linformer` command line runs
    gemm_a = torch.randn(2048, 2048, dtype=torch.bfloat16)
    groups = {
        "layer forward, k=256, n=4096": layer_cases(4096, 256),
        "layer forward, k=256, n=16384": layer_cases(16384, 256),
        "layer forward, full attention, n=2048": layer_cases(2048, None),
        "small encoder train step, k=128, n=512": train_cases(512),
        "small encoder train step, k=128, n=2048": train_cases(2048),
    }
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {rounds} rounds; median ms")
    print("| case | SDPA | blocked | SDPA / blocked | bf16 GEMM GFLOP/s |")
    print("|---|---|---|---|---|")
    for name, cases in groups.items():
        times: dict[str, list[float]] = {core: [] for core in CORES}
        gemm: list[float] = []
        for fn in cases.values():
            fn()  # warm-up
        for r in range(rounds):
            order = CORES if r % 2 == 0 else CORES[::-1]
            for core in order:
                start = time.perf_counter()
                cases[core]()
                times[core].append(time.perf_counter() - start)
            start = time.perf_counter()
            gemm_a @ gemm_a
            gemm.append(time.perf_counter() - start)
        med = {core: statistics.median(t) * 1e3 for core, t in times.items()}
        rate = 2 * 2048**3 / statistics.median(gemm) / 1e9
        print(
            f"| {name} | {med['sdpa']:.1f} | {med['blocked']:.1f} | {med['sdpa'] / med['blocked']:.2f}x | {rate:.0f} |"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
