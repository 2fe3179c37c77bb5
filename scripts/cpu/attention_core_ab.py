"""A/B in one run: the attention cores on CPU that `backend="auto"` chooses between.

Default: the bf16 cores (linformer_kit/nn/backends.py), PyTorch SDPA vs our query-blocked core, on the
same weights and input, timed in alternating rounds (median of ROUNDS), with a bf16 2048^3 GEMM sampled
in the same rounds:
  - one attention layer, forward (d=768, 12 heads, headwise k=256; and full attention at n=2048);
  - one training step (forward + backward + AdamW, autocast bf16) of the `small` encoder, k=128, batch 2.
Run from the repository root on a quiet machine with AVX512-bf16 or AMX (elsewhere bf16 is emulated):
    python scripts/cpu/attention_core_ab.py [ROUNDS]

--window: the local window's fp32 cores (linformer_kit/nn/local.py; "auto": nn/cores.py `choose`),
`sdpa_local_attention` (backend "sdpa") vs `banded_attention` ("blocked"), k = 128, w = 16, one global
token, 12 heads of 32 (all-MiniLM-L6-v2) and of 64 (RoBERTa-base): one layer (q, k, v and output
linears included) forward at n = 4 096 and forward + backward at n = 4 096 and 512 x 8, the last also
with attention dropout 0.1 (training); and the cores alone, forward at n = 4 096, the SDPA core at
blocks of 64 / 128 / 256 and the banded core at 16 / 32 / 64. Besides the medians it prints, per pair,
the ratio of each round's two samples (they ran in the same round: the ratio to read on a shared
machine):
    python scripts/cpu/attention_core_ab.py --window [--threads N] [ROUNDS]

--split: the distilled student's shape (all-MiniLM-L6-v2's, issue 53: 12 heads of 32, k = 128, w = 64,
one global token, batch 1, fp32, forward without gradients): `split_local_attention` ("split", the two
partial softmaxes merged by their log-sum-exp) against `sdpa_local_attention` ("sdpa") at n = 512,
2 048, 4 096, the cores alone and in one layer (D = 384, linears included), the split core also at
blocks of 32 and 128 at n = 4 096; medians and per-round ratios as --window:
    python scripts/cpu/attention_core_ab.py --split [--threads N] [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

import torch

from linformer_kit.allocator import reuse_freed_memory
from linformer_kit.bench.cases import EncoderForBenchmark, train_step
from linformer_kit.models import LinformerConfig, LinformerModel
from linformer_kit.nn import LinformerSelfAttention, local, local_split
from linformer_kit.nn.cores import CORES as CORE_TABLE

CORES = ("sdpa", "blocked")


def layers(cores: tuple[str, ...], *args, **kwargs) -> dict[str, LinformerSelfAttention]:
    """One layer per core (the `backend` option, nn/cores.py), each with the same seeded weights."""
    out = {}
    for core in cores:
        torch.manual_seed(0)
        out[core] = LinformerSelfAttention(*args, backend=core, **kwargs)
    return out


def layer_cases(n: int, k: int | None) -> dict[str, object]:
    by_core = {core: layer.to(torch.bfloat16).eval() for core, layer in layers(CORES, 768, 12, n, k).items()}
    x = torch.randn(1, n, 768, dtype=torch.bfloat16)

    def forward(backend: str) -> None:
        with torch.inference_mode():
            by_core[backend](x)

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
        model = LinformerModel(config, add_pooling_layer=False)
        model.set_attn_implementation(core)  # the core of every layer (nn/cores.py)
        cases[core] = train_step(EncoderForBenchmark(model), x, torch.bfloat16)
    return cases


def alternated(cases: dict[str, Callable[[], object]], rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each case, one sample a round, after one warm-up each; each round rotates the
    order, so neighbouring samples of two cases saw the same machine."""
    names = list(cases)
    times: dict[str, list[float]] = {name: [] for name in names}
    for fn in cases.values():
        fn()  # warm-up
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = time.perf_counter()
            cases[name]()
            times[name].append(time.perf_counter() - start)
    return times


def medians(times: dict[str, list[float]]) -> dict[str, float]:
    return {name: statistics.median(t) for name, t in times.items()}


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
        med = {
            core: t * 1e3
            for core, t in alternated({**cases, "gemm": lambda: gemm_a @ gemm_a}, rounds).items()
        }
        rate = 2 * 2048**3 / (med["gemm"] / 1e3) / 1e9
        print(
            f"| {name} | {med['sdpa']:.1f} | {med['blocked']:.1f} | {med['sdpa'] / med['blocked']:.2f}x | {rate:.0f} |"
        )


# --- the local window's cores ------------------------------------------------------------------------

K, WINDOW, GLOBAL = 128, 16, 1


def window_layer_cases(head_dim: int, n: int, batch: int, backward: bool, dropout: float = 0.0):
    """One windowed layer, 12 heads of `head_dim`, in each of the window's backends."""
    hidden = 12 * head_dim
    by_core = layers(CORES, hidden, 12, n, K, local_window=WINDOW, global_tokens=GLOBAL, dropout=dropout)
    x = torch.randn(batch, n, hidden)

    def run(backend: str) -> None:
        layer = by_core[backend].train(dropout > 0)
        if backward:
            layer.zero_grad(set_to_none=True)
            layer(x).sum().backward()
        else:
            with torch.inference_mode():
                layer(x)

    return {core: (lambda core=core: run(core)) for core in CORES}


def window_core_cases(head_dim: int, n: int):
    """The cores alone (forward, no gradients) on random q, k, v and slots, each at three query blocks
    (`SDPA_BLOCK`, `MIN_BLOCK`); q, k, v (1, 12, n, d) are views of (1, n, 12, d), as the layer's heads are."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, n, 12, head_dim).transpose(1, 2) for _ in range(3))
    slots = local.Slots(torch.randn(1, 12, K, head_dim), torch.randn(1, 12, K, head_dim), None, None)
    keyset = local.KeySet(slots, None, WINDOW, GLOBAL)

    def run(backend: str, name: str, block: int) -> None:
        default = getattr(local, name)
        setattr(local, name, block)
        with torch.inference_mode():
            CORE_TABLE[backend].window(q, k, v, keyset, scale=head_dim**-0.5)
        setattr(local, name, default)

    sdpa = {f"sdpa B={b}": (lambda b=b: run("sdpa", "SDPA_BLOCK", b)) for b in (64, 128, 256)}
    banded = {f"banded B={b}": (lambda b=b: run("blocked", "MIN_BLOCK", b)) for b in (16, 32, 64)}
    return {**sdpa, **banded}


def paired(times: dict[str, list[float]], a: str, b: str) -> str:
    """Median (min, max) over rounds of a / b: each round's two samples ran next to each other."""
    ratios = sorted(x / y for x, y in zip(times[a], times[b]))
    return f"{statistics.median(ratios):.2f} ({ratios[0]:.2f}-{ratios[-1]:.2f})"


def window_main(rounds: int) -> None:
    reuse_freed_memory()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {rounds} rounds, fp32")
    print(
        f"k = {K}, w = {WINDOW}, g = {GLOBAL}, 12 heads; sdpa = sdpa_local_attention, banded = banded_attention"
    )
    print(
        "| one layer | sdpa ms, median / min | banded ms, median / min | sdpa / banded, per round: median (range) |"
    )
    print("|---|---|---|---|")
    for head_dim in (32, 64):
        for n, batch, backward, dropout in ((4096, 1, False, 0.0), (4096, 1, True, 0.0), (512, 8, True, 0.0),
                                            (512, 8, True, 0.1)):  # fmt: skip
            times = alternated(window_layer_cases(head_dim, n, batch, backward, dropout), rounds)
            pass_name = "forward + backward" if backward else "forward"
            pass_name += f", dropout {dropout}" if dropout else ""
            sdpa, banded = (
                f"{statistics.median(times[c]) * 1e3:.0f} / {min(times[c]) * 1e3:.0f}" for c in CORES
            )
            print(
                f"| d = {head_dim}, n = {n} x {batch}, {pass_name} | {sdpa} | {banded} | {paired(times, *CORES)} |"
            )
    print()
    names = " | ".join(window_core_cases(32, 8))
    print(
        f"| the core alone, forward, n = 4096, ms median / min | {names} | sdpa B=128 / banded B=32, per round |"
    )
    print("|---" * 8 + "|")
    for head_dim in (32, 64):
        times = alternated(window_core_cases(head_dim, 4096), rounds)
        cells = " | ".join(f"{statistics.median(t) * 1e3:.0f} / {min(t) * 1e3:.0f}" for t in times.values())
        print(f"| d = {head_dim} | {cells} | {paired(times, 'sdpa B=128', 'banded B=32')} |")


# --- the split core at the distilled student's shape ----------------------------------------------------

STUDENT_HEADS, STUDENT_HEAD_DIM, STUDENT_WINDOW = 12, 32, 64


def student_core_cases(n: int, blocks: tuple[int, ...] = ()):
    """The cores alone, forward (inference mode), on random q, k, v (views of (1, n, 12, 32), as the
    layer's heads are) and slots; the split core at `local_split.SPLIT_BLOCK` and at each of `blocks`."""
    torch.manual_seed(0)
    d = STUDENT_HEAD_DIM
    q, k, v = (torch.randn(1, n, STUDENT_HEADS, d).transpose(1, 2) for _ in range(3))
    slots = local.Slots(torch.randn(1, STUDENT_HEADS, K, d), torch.randn(1, STUDENT_HEADS, K, d), None, None)
    keyset = local.KeySet(slots, None, STUDENT_WINDOW, GLOBAL)

    def run(backend: str, block: int | None = None) -> None:
        default = local_split.SPLIT_BLOCK
        local_split.SPLIT_BLOCK = block or default
        with torch.inference_mode():
            CORE_TABLE[backend].window(q, k, v, keyset, scale=d**-0.5)
        local_split.SPLIT_BLOCK = default

    cases = {"sdpa": lambda: run("sdpa"), "split": lambda: run("split")}
    return {**cases, **{f"split B={b}": (lambda b=b: run("split", b)) for b in blocks}}


def student_layer_cases(n: int):
    """One windowed layer at the student's shape (D = 384, q, k, v, output linears), forward."""
    hidden = STUDENT_HEADS * STUDENT_HEAD_DIM
    by_core = layers(("sdpa", "split"), hidden, STUDENT_HEADS, n, K, local_window=STUDENT_WINDOW,
                     global_tokens=GLOBAL)  # fmt: skip
    x = torch.randn(1, n, hidden)

    def run(backend: str) -> None:
        with torch.inference_mode():
            by_core[backend].eval()(x)

    return {core: (lambda core=core: run(core)) for core in ("sdpa", "split")}


def split_main(rounds: int) -> None:
    reuse_freed_memory()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {rounds} rounds, fp32, forward")
    print(
        f"12 heads of 32, k = {K}, w = {STUDENT_WINDOW}, g = {GLOBAL}, batch 1; split B = {local_split.SPLIT_BLOCK}"
    )
    print(
        "| case | sdpa ms, median / min | split ms, median / min | split / sdpa, per round: median (range) |"
    )
    print("|---|---|---|---|")
    extra = {}
    for n in (512, 2048, 4096):
        for what, cases in (("the cores alone", student_core_cases(n, (32, 128) if n == 4096 else ())),
                            ("one layer", student_layer_cases(n))):  # fmt: skip
            times = alternated(cases, rounds)
            cells = (
                f"{statistics.median(times[c]) * 1e3:.1f} / {min(times[c]) * 1e3:.1f}"
                for c in ("sdpa", "split")
            )
            print(f"| {what}, n = {n} | {' | '.join(cells)} | {paired(times, 'split', 'sdpa')} |")
            extra.update({f"{name}, n = {n}": times for name in times if name.startswith("split B=")})
    for name, times in extra.items():
        med = statistics.median(times[name.split(",")[0]]) * 1e3
        print(f"{name}: {med:.1f} ms median; / sdpa per round {paired(times, name.split(',')[0], 'sdpa')}")


if __name__ == "__main__":
    args = sys.argv[1:]
    window = "--window" in args
    split = "--split" in args
    if "--threads" in args:  # e.g. 1 on a shared machine, where two threads wait on each other
        at = args.index("--threads")
        torch.set_num_threads(int(args[at + 1]))
        del args[at : at + 2]
    args = [a for a in args if a not in ("--window", "--split")]
    rounds = int(args[0]) if args else 7
    if split:
        split_main(rounds)
    elif window:
        window_main(rounds)
    else:
        main(rounds)
