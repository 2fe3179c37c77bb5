"""The attention cores: one table, one `auto` (the registry every layer reads).

A core computes softmax(q keysᵀ · scale) values over one of two kinds of key set, each with its own contract:

    plain    one key set: the k projected slots (E K, F V), or every key of a layer that attends exactly
             (nn/backends.py: (q, k, v, mask, *, scale, dropout_p, causal) -> (out, weights | None))
    window   the slots beside the local window and the global keys, in one softmax
             (nn/local.py: (q, k, v, keyset, *, scale, dropout_p) -> (out, weights | None))

The plain softmax is the window's case with no window (a key set of slots alone), so every name gives both:

    name      plain                  window                   what it is
    eager     eager_attention        dense_local_attention    the reference; the only one that returns the weights
    sdpa      sdpa_attention         sdpa_local_attention     PyTorch's fused kernel (the window by query blocks)
    blocked   blocked_attention      banded_attention         explicit scores a block of queries at a time
    split     sdpa_attention         split_local_attention    the window as two partial softmaxes merged
    native    sdpa_attention         native_local_attention   the window's CPU forward in one kernel of ours
    flex      sdpa_attention         flex_local_attention     the window in one FlexAttention kernel

"split", "native" and "flex" only change the window (one unmasked key set has nothing to split: SDPA is its
own case).
A layer names its core (`LinformerSelfAttention(backend=...)`); a model takes it from its config, the way
transformers models take `attn_implementation` (models/modeling_linformer.py). "auto", the default, picks per
call in `choose`: each rule is the faster core where it was measured (docs/benchmarks/cpu-bf16/README.md,
"bfloat16 on CPU", and docs/benchmarks/cpu-window/README.md, "Local window"). Flex is not among them until a
GPU times it against SDPA's window (issue "On a GPU", scripts/gpu/student_speed.py): `attn_implementation="flex"`
/ `backend="flex"` runs it by name. Those rules were measured on one CPU: where a call may be timed (a CPU
inference call), nn/autotune.py times the cores on the call's shape once and the layer runs the winner; the
rules stand everywhere else, and are what `choose` returns.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from linformer_kit.nn.backends import AttentionFn, blocked_attention, eager_attention, sdpa_attention
from linformer_kit.nn.keys import LocalCore, backward_reaches
from linformer_kit.nn.local import dense_local_attention, flex_local_attention, split_local_attention
from linformer_kit.nn.local_blocks import banded_attention, sdpa_local_attention
from linformer_kit.nn.local_native import native_local_attention, native_preferred


class Core(NamedTuple):
    plain: AttentionFn  # one key set
    window: LocalCore  # slots, window and global keys


CORES: dict[str, Core] = {
    "eager": Core(eager_attention, dense_local_attention),
    "sdpa": Core(sdpa_attention, sdpa_local_attention),
    "blocked": Core(blocked_attention, banded_attention),
    "split": Core(sdpa_attention, split_local_attention),
    "native": Core(sdpa_attention, native_local_attention),
    "flex": Core(sdpa_attention, flex_local_attention),
}

BLOCKED_MAX_KEYS_WITH_GRAD = 1024  # above it, "auto" trains in SDPA: O(n) saved for backward, not (n x m)


def choose(backend: str, q: Tensor, k: Tensor, v: Tensor, *, window: bool, dropout_p: float = 0.0) -> str:
    """The core (a name of `CORES`) that `backend` means for this call: q (b, h, n, d) and, with `window`, every
    token's k and v (the slots ride in the window core's KeySet), else the one key set's k and v (m keys).
    "auto" picks by the rules below.

    plain, "auto": PyTorch SDPA, except for bfloat16 on a CPU, where its fused kernel reaches about a third
        of the bf16 GEMM rate when the keys are a few hundred (its per-block softmax dominates): the blocked
        core, unless a backward will run over more than BLOCKED_MAX_KEYS_WITH_GRAD keys (autograd keeps the
        blocked core's (b, h, n, m) weights where SDPA keeps O(n) statistics), the length is symbolic (export:
        no Python blocks) or the batch is empty.
    window: a symbolic length takes the banded core whatever the name ("sdpa" and "split" count blocks in
        Python), the reference excepted; "auto": banded for a CPU step with dropout (the fused CPU kernel has
        none, and its unfused fallback is slower than writing the scores out), native for a CPU call the
        kernel takes where PyTorch's kernels run AVX-512 or AVX2 (float32 without gradients, nn/local_native.py:
        0.75-0.89x the split core's time on the student's layer on an AVX2-only CPU), split for
        any other CPU call (the slots read once, not copied per block; with gradients the fused kernel's
        backward per part, nn/local_split.py), SDPA by query blocks elsewhere.
    """
    grad = backward_reaches(q, k, v)
    symbolic = not isinstance(q.shape[-2], int)
    if window and symbolic and backend != "eager":
        return "blocked"
    if backend != "auto":
        return backend
    if window:
        if q.device.type == "cpu" and dropout_p > 0.0:
            return "blocked"
        if q.device.type != "cpu":
            return "sdpa"
        return "native" if native_preferred(q, k, v) else "split"
    if q.device.type != "cpu" or q.dtype != torch.bfloat16 or symbolic or q.numel() == 0 or k.numel() == 0:
        return "sdpa"
    return "sdpa" if grad and k.shape[-2] > BLOCKED_MAX_KEYS_WITH_GRAD else "blocked"


__all__ = ["BLOCKED_MAX_KEYS_WITH_GRAD", "CORES", "Core", "choose"]
