"""Which cases a sweep skips, and why: the reason a record carries instead of its times.

A case that cannot run at all (k > n, a peer package not installed: `structural_skip`) is skipped
alone; one predicted past the time cap or the memory available, or skipped at a smaller n
(`skip_reason`), also skips the same case at every larger n (`case_key` names "the same case").
The predictions are rough on purpose: they only keep a sweep inside its cap. Apart from
bench/measure.py, which runs the sweep and keeps the history these read.
"""

from __future__ import annotations

import dataclasses

import torch

from linformer_kit.bench.cases import Case
from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.timing import predicted_seconds
from linformer_kit.nn.local import MIN_BLOCK

PEER_MODULES = {"peer-linformer": "linformer", "peer-linformer-pytorch": "linformer_pytorch"}


def case_key(case: Case) -> tuple:
    """What makes two cases the same case at different n (a skip at one n skips the larger ones)."""
    return (case.method, case.k, case.local_window, case.scope, case.pass_type)


def structural_skip(case: Case) -> str | None:
    """Cases that cannot run at all. Unlike a time or memory skip, they do not skip larger n."""
    if case.k is not None and case.k > case.n:
        return f"k={case.k} > n={case.n}"
    if case.method in PEER_MODULES and not _importable(PEER_MODULES[case.method]):
        return f"{PEER_MODULES[case.method]} not installed (pip install 'linformer-kit[peers]')"
    return None


def skip_reason(case: Case, config: BenchmarkConfig, rate: float, history: dict) -> str | None:
    previous_n, previous_time = history.get(case_key(case), (None, None))
    if previous_n is not None and previous_time is None:
        return f"skipped at n={previous_n}"
    if previous_time is not None:
        previous = dataclasses.replace(case, n=previous_n)
        predicted = predicted_seconds(previous_time, previous.flops, case.flops)
    else:
        predicted = case.flops / (0.25 * rate)
    if predicted > config.time_cap_s:
        return f"predicted {predicted:.0f} s per call > time cap {config.time_cap_s:.0f} s"
    need, available = _predicted_memory(case), _available_memory(case.device)
    if need > 0.8 * available:
        return f"predicted {need / 2**30:.1f} GiB > 80% of {available / 2**30:.1f} GiB available"
    return None


def _predicted_memory(case: Case) -> int:
    """Bytes of the dominant transient tensors: attention matrices (eager) plus activations."""
    b, n, D, elem = (
        case.batch_size,
        case.n,
        case.hidden_size,
        torch.finfo(getattr(torch, case.dtype)).bits // 8,
    )
    backward = case.pass_type != "forward"
    kept = case.num_layers if backward else 1  # activations kept for backward
    activations = 8 * b * n * (D + case.intermediate_size) * elem * kept
    if case.method in ("full-eager", "peer-linformer-pytorch", "peer-linformer"):
        width = n if case.method == "full-eager" else (case.k or n)
        scores = 2 * b * case.num_heads * n * width * 4  # fp32 scores + softmax
        return activations + scores * (2 * kept if backward else 1)
    if case.local_window is not None:  # nn/local.py: fp32 scores and weights over k + B + 2w keys per query
        w = min(case.local_window, n)
        width = (case.k or 0) + max(MIN_BLOCK, w) + 2 * w
        scores = 2 * b * case.num_heads * n * width * 4
        return activations + scores * (2 * kept if backward else 1)
    return activations


def _available_memory(device: str) -> int:
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated()  # ours to reuse, not "used"
        return int(free + cached)
    import psutil

    return int(psutil.virtual_memory().available)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
