"""A local window and global tokens beside the projection, in one softmax (Long-Short Transformer's idea).

Per head (notation of nn/attention.py; w the window, g the global tokens, s the k projected slots,
m the padding mask, True = real token):

    query i >= g:  keys(i) = [ E K (s slots) ; K_j, j < g ; K_j, j >= g and |i - j| <= w ]   (real j only)
                   out_i   = softmax( q_i keys(i)ᵀ / sqrt(d) ) [ F V ; V_j ... ]              one softmax
    query i < g:   out_i   = softmax( q_i K_realᵀ / sqrt(d) ) V_real                          (Longformer's global rows)

Why: a head that reads a neighbour or one given token is full rank, and no k < n projection keeps it
(the CPU study's layer 1; in each of all-MiniLM-L6-v2's first five layers the most local head puts 63-80 %
of its attention within ±16 tokens, docs/reproduction/distill-minilm/spectrum.txt): docs/models.md,
"A local window beside the projection". A global key j < g is never also a window key, so no key counts
twice. A row whose k slots already hold its own real tokens (short_inputs="exact" in a mixed batch,
`windowed` False) takes no window and no global key: its slots are exact attention.

Six cores compute it, one contract (`LocalCore`): (q, k, v, keyset: KeySet, *, scale, dropout_p) ->
(out (b, h, n, d), weights or None), `KeySet` holding the slots (`Slots`), the padding mask, w, g (nn/keys.py,
with the pieces every core reads). The one table of cores, `CORES` in nn/cores.py, names them by backend
beside the plain softmax's, and its `choose` resolves "auto" (the two block cores live in nn/local_blocks.py):

    `sdpa_local_attention`    "sdpa": query blocks, each one problem of PyTorch's fused SDPA kernel over
                              its own keys [slots ; global keys ; neighbourhood] with a bool mask, so the
                              scores are never written out.
    `banded_attention`        "blocked", and any symbolic n (export): explicit scores. Queries in blocks
                              of B = max(32, w); block c attends to the keys of [cB - w, cB + B + w),
                              built from its own and its neighbouring key blocks by slicing and
                              concatenation (no unfold: one graph for export). Scores
                              (b, h, n, s + g + B + 2w): time and memory O(n (k + g + B + 2w)) for the
                              windowed rows, O(g n) for the global ones; no (n x n) tensor.
    `split_local_attention`   "split": two partial softmaxes merged by their log-sum-exp (split-KV
                              decoding's merge): every query against [slots ; global keys] in one call,
                              and query blocks of B = `SPLIT_BLOCK` against only their B + 2w band keys,
                              strided views of K and V themselves (nn/local_band.py). PyTorch's fused
                              CPU flash kernel (it returns the log-sum-exp) on a CPU without dropout, its
                              backward per part against the merged softmax; explicit scores otherwise
                              (nn/local_split.py).
    `native_local_attention`  "native": the window's CPU forward in one pass of a kernel of our own
                              (nn/local_native.py, csrc/local_window.cpp): per tile of queries and per key
                              one score vector, the mask, one softmax and the output, K and V read in
                              place; float32 (bfloat16 read in float32, its output cast back) without
                              gradients, every other call the split core's.
    `flex_local_attention`    "flex": one `flex_attention` call over [slots ; K] with a block mask of the
                              band, the global keys and the slots, built once per (n, s, w, g) and shared
                              by every layer; compiled into one block-sparse kernel (nn/local_flex.py).
                              Inference on a CPU; training needs CUDA; no dropout.
    `dense_local_attention`   "eager", the reference: an (n x (s + n)) score matrix with a band mask
                              through `eager_attention`. Its weights, (b, h, n, s + n), are what
                              `output_attentions` returns: columns [:s] the projected slots, column
                              s + j the weight on token j (zero outside the window and the global keys).

The global rows (i < g) are `eager_attention` in every core. The explicit ones take scores and softmax in
fp32 or wider (half precision promoted, as `eager_attention`; SDPA accumulates half precision in fp32
inside its kernel). All six agree to float64 round-off, values and gradients (tests/nn/test_local.py; the
flex core: tests/nn/test_local_flex.py, gradients on CUDA; the native kernel, in float32: to float32
round-off, tests/nn/test_local_native.py);
which is faster where: docs/benchmarks/cpu-window/README.md, "Local window". Torch-only.
"""

from __future__ import annotations

import torch
from torch import Tensor

from linformer_kit.nn.backends import eager_attention, fill_empty_rows
from linformer_kit.nn.keys import (
    KeySet,
    LocalCore,
    Slots,
    real_tokens,
    window_key_mask,
    window_or_global,
)
from linformer_kit.nn.local_blocks import MIN_BLOCK, SDPA_BLOCK, banded_attention, sdpa_local_attention
from linformer_kit.nn.local_flex import flex_window_attention
from linformer_kit.nn.local_split import SPLIT_BLOCK, split_local_attention


def dense_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, Tensor]:
    """The reference -> (out (b, h, n, d), weights (b, h, n, s + n)): `eager_attention` over [E K ; K].

    Scores [q (E K)ᵀ ; q Kᵀ] (n x (s + n)), masked to the slots, the global keys and the band
    |i - j| <= w (rows i < g: every real key and no slot), one softmax. O(n²): for tests and for
    reading the weights.
    """
    b, n = q.shape[0], q.shape[2]
    slots, window, g = keyset.slots, keyset.window, keyset.global_tokens
    real, k, v = real_tokens(keyset.real, k, v)
    i = torch.arange(n, device=q.device)[:, None]  # query position
    j = torch.arange(n, device=q.device)[None, :]  # key position
    key_keep = window_or_global(i, j, window, g)  # (n, n): the window and the global keys
    key_keep = key_keep & window_key_mask(real, slots.windowed)[:, None, None, :]  # (b, 1, n, n)
    global_row = (i < g)[None, None]  # (1, 1, n, 1): a global query attends to every real key ...
    key_keep = (key_keep & ~global_row) | (global_row & fill_empty_rows(real)[:, None, None, :])
    slot_shape = (b, 1, 1, slots.keys.shape[-2])
    slot_ok = torch.ones(slot_shape, dtype=torch.bool, device=q.device) if slots.keep is None else slots.keep
    slot_ok = slot_ok & ~global_row  # ... and no slot
    keep = torch.cat(_aligned(slot_ok, key_keep), dim=-1)  # (b, 1|h, n, s + n)
    key_rows, value_rows = torch.cat([slots.keys, k], dim=-2), torch.cat([slots.values, v], dim=-2)
    return eager_attention(q, key_rows, value_rows, keep, scale=scale, dropout_p=dropout_p)


def flex_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """The module docstring's attention in one FlexAttention kernel, compiled: nn/local_flex.py."""
    return flex_window_attention(q, k, v, keyset, scale=scale, dropout_p=dropout_p)


def _aligned(slot_ok: Tensor, key_keep: Tensor) -> list[Tensor]:
    """The slot mask (b, 1|h, 1|n, s) and the key mask (b, 1, n, n) broadcast to one (b, h', n, ·) shape."""
    lead = torch.broadcast_shapes(slot_ok.shape[:-1], key_keep.shape[:-1])
    return [slot_ok.expand(*lead, slot_ok.shape[-1]), key_keep.expand(*lead, key_keep.shape[-1])]


__all__ = [
    "MIN_BLOCK", "SDPA_BLOCK", "SPLIT_BLOCK", "KeySet", "LocalCore", "Slots", "banded_attention",
    "dense_local_attention", "flex_local_attention", "sdpa_local_attention",
    "split_local_attention",
]  # fmt: skip
