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

Five cores compute it, one contract (`LocalCore`): (q, k, v, keyset: KeySet, *, scale, dropout_p) ->
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
                              CPU flash kernel (it returns the log-sum-exp) for a CPU forward without
                              gradients or dropout, explicit scores otherwise.
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
inside its kernel). All five agree to float64 round-off, values and gradients (tests/nn/test_local.py; the
flex core: tests/nn/test_local_flex.py, gradients on CUDA);
which is faster where: docs/benchmarks.md, "Local window". Torch-only.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional as F

from linformer_kit.nn.backends import eager_attention, fill_empty_rows
from linformer_kit.nn.keys import (
    KeySet,
    LocalCore,
    Slots,
    global_rows,
    real_tokens,
    window_keys,
    window_or_global,
    window_sizes,
)
from linformer_kit.nn.local_band import band_keep, flat_blocks, flat_neighbourhoods, segments
from linformer_kit.nn.local_blocks import MIN_BLOCK, SDPA_BLOCK, banded_attention, sdpa_local_attention
from linformer_kit.nn.local_flex import flex_window_attention

SPLIT_BLOCK = 32  # `split_local_attention`'s band: B + 2w keys for B queries, the slots not copied

# a part of the split core: (q, k, v, keep, scale, dropout_p) -> (out (..., L, d), lse (..., L))
Part = Callable[[Tensor, Tensor, Tensor, "Tensor | None", float, float], tuple[Tensor, Tensor]]


def split_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """The module docstring's attention as two partial softmaxes merged by their log-sum-exp (split-KV
    decoding's merge) -> (out (b, h, n, d), None).

    Part 1, the keys every query shares: all n queries against [ E K (s) ; K_j, j < g ], one dense call, no
    per-query mask (the slot mask (b, 1|h, 1, s) broadcasts). Part 2, the band: query block c (B =
    `SPLIT_BLOCK` rows) against the keys of [cB - w, cB + B + w) only, with the band mask. Each gives its
    normalised output o_p and log-sum-exp l_p per query (-inf where the part holds no key the query may
    read); with m = max(l_1, l_2),

        out = (o_1 exp(l_1 - m) + o_2 exp(l_2 - m)) / (exp(l_1 - m) + exp(l_2 - m)),

    the one softmax over both key sets. The slots are read once for all queries (the SDPA core copies them
    into every block), and the band's keys are strided views of K and V themselves, the batch read flat
    (nn/local_band.py: at most three calls, no key copied; keys of a neighbouring row are masked).

    Each part is PyTorch's fused CPU flash kernel (`_fused_part`: out and log-sum-exp, scores never
    written out) for a CPU forward without gradients or dropout, and an explicit one (`_explicit_part`:
    scores, fp32 or wider, exact gradients) otherwise: the kernel's log-sum-exp has no gradient, and it
    has no dropout. Dropout on each part's normalised weights is dropout on the merged ones (it scales
    elementwise). A query with no key in either part (a pad query of a row that keeps no slot) gets 0,
    finite, gradients too. Needs a concrete n (the block count is a Python int).
    """
    b, n = q.shape[0], q.shape[2]
    slots = keyset.slots
    if keyset.real is None:  # nothing to zero: skip `_real_tokens`' copies of K and V
        real = torch.ones(b, n, dtype=torch.bool, device=q.device)
    else:
        real, k, v = real_tokens(keyset.real, k, v)
    w, g = window_sizes(keyset, n)
    key_ok = window_keys(real, slots.windowed)  # which keys a window or global may hold
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v, slots.keys, slots.values))
    fused = q.device.type == "cpu" and dropout_p == 0.0 and not grad
    part = _fused_part if fused else _explicit_part

    # part 1: [slots ; global keys] for every query, one mask (b, 1|h, 1, s + g) for all of them
    keys, values, keep = slots.keys, slots.values, slots.keep
    if g:
        keys = torch.cat([keys, k[:, :, :g]], dim=-2)
        values = torch.cat([values, v[:, :, :g]], dim=-2)
        if keep is not None or keyset.real is not None or slots.windowed is not None:  # else: no mask
            slot_ok = torch.ones(b, 1, 1, keys.shape[-2] - g, dtype=torch.bool, device=q.device)
            slot_ok = slot_ok if keep is None else keep.expand(b, -1, -1, -1)  # (a slot mask may broadcast)
            global_ok = key_ok[:, None, None, :g].expand(b, slot_ok.shape[1], 1, g)
            keep = torch.cat([slot_ok, global_ok], dim=-1)  # (b, 1|h, 1, s + g)
    out, lse = part(q, keys, values, keep, scale, dropout_p)  # (b, h, n, d), (b, h, n)

    if keyset.window is not None:  # part 2: the band, merged into part 1's rows (nn/local_band.py)
        every_key = keyset.real is None and slots.windowed is None  # no key_ok to AND into the band's mask
        band_ok = None if every_key else key_ok
        out = _with_band(q, k, v, out, lse, band_ok, w, g, scale, dropout_p, part, in_place=fused)
    out = out.to(v.dtype)  # (a tensor that no backward reads: the global rows may overwrite it)
    if g:
        out[:, :, :g] = global_rows(q, k, v, real, g, scale, dropout_p)
    return (
        out,
        None,
    )  # (b, h, n, d); a view of (b, n, h, d) where the kernel gave that (merging heads is free)


def _explicit_part(
    q: Tensor, k: Tensor, v: Tensor, keep: Tensor | None, scale: float, dropout_p: float
) -> tuple[Tensor, Tensor]:
    """softmax(q kᵀ scale) v over the keys `keep` (bool, broadcast to the scores) allows, and its
    log-sum-exp -> (out (..., L, d), lse (..., L)), both in fp32 or wider. A row with no key: out 0, lse
    -inf, and finite gradients (no exp(-inf + inf), no log(0) on the backward path)."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    neg = float("-inf")
    with torch.autocast(device_type=q.device.type, enabled=False):
        scores = torch.matmul(q.to(dtype), k.to(dtype).transpose(-1, -2)) * scale  # (..., L, S)
        if keep is not None:
            scores = scores.masked_fill(~keep, neg)
        top = scores.detach().amax(dim=-1, keepdim=True)  # a shift: the result does not depend on it
        top = torch.where(top.isfinite(), top, 0.0)
        exp = (scores - top).exp()
        total = exp.sum(dim=-1, keepdim=True)
        some = total > 0
        total = torch.where(some, total, 1.0)
        lse = torch.where(some, total.log() + top, neg)[..., 0]
        weights = exp / total
        if dropout_p > 0.0:
            weights = F.dropout(weights, p=dropout_p)
        return torch.matmul(weights, v.to(dtype)), lse


def _fused_part(
    q: Tensor, k: Tensor, v: Tensor, keep: Tensor | None, scale: float, dropout_p: float
) -> tuple[Tensor, Tensor]:
    """`_explicit_part` through PyTorch's fused CPU flash kernel (4-d q, k, v; any strides, last one 1):
    out in q's dtype, lse in fp32 or wider. No gradient through lse, no dropout (callers check)."""
    mask = None
    if keep is not None:  # the kernel takes an additive mask in q's dtype (one pass over keep)
        mask = torch.where(keep, torch.zeros((), dtype=q.dtype, device=q.device), float("-inf"))
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, False, attn_mask=mask, scale=scale
    )
    if keep is not None:  # the kernel gives a row with no key lse 0 (and out 0): make it -inf
        lse = lse.masked_fill(~keep.any(dim=-1), float("-inf"))
    return out, lse


def _with_band(
    q: Tensor, k: Tensor, v: Tensor, out: Tensor, lse: Tensor, key_ok: Tensor | None, w: int, g: int,
    scale: float, dropout_p: float, part: Part, *, in_place: bool,
) -> Tensor:  # fmt: skip
    """Part 1's out (b, h, n, d) and lse (b, h, n) merged with the band's, a segment at a time
    (nn/local_band.py) -> (b, h, n, d). The batch is read flat, (b n, h, d): views where a tensor holds
    (b, n, h, d), the linears' layout and the fused kernel's. `in_place`: part 1's out takes the merge (no
    gradient runs through it); else the merged segments are joined."""
    b, h, n, d = q.shape
    flat_q, flat_k, flat_v, flat_out = (t.transpose(1, 2).reshape(b * n, h, d) for t in (q, k, v, out))
    flat_lse = lse.transpose(1, 2).reshape(b * n, h)
    flat_ok = None if key_ok is None else key_ok.reshape(b * n)
    merged = []
    for segment in segments(b * n, SPLIT_BLOCK, w):
        keep = band_keep(segment, n, w, g, flat_ok, q.device)
        keys, values = flat_neighbourhoods(flat_k, segment), flat_neighbourhoods(flat_v, segment)
        near_out, near_lse = part(flat_blocks(flat_q, segment), keys, values, keep, scale, dropout_p)
        rows = slice(segment.start, segment.stop)
        near_out = near_out.transpose(1, 2).reshape(-1, h, d)  # (blocks size, h, d)
        near_lse = near_lse.transpose(1, 2).reshape(-1, h)
        merged.append(_merge(flat_out[rows], flat_lse[rows], near_out, near_lse, in_place=in_place))
    flat = flat_out if in_place or not merged else torch.cat(merged)  # (none: an empty batch)
    return flat.view(b, n, h, d).transpose(1, 2)


def _merge(out_1: Tensor, lse_1: Tensor, out_2: Tensor, lse_2: Tensor, *, in_place: bool = False) -> Tensor:
    """Two partial softmax outputs (..., L, d) over disjoint key sets, with their log-sum-exps (..., L),
    -> the softmax over both, out_1 + t (out_2 - out_1) with t = exp(lse_2) / (exp(lse_1) + exp(lse_2)), in the
    wider dtype of out_1 and the lse (`in_place`: in out_1's, into out_1). A row with no key in either part -> 0
    (each part's out is 0 there)."""
    top = torch.maximum(lse_1, lse_2).detach()  # a shift, as in `_explicit_part`
    top = torch.where(top.isfinite(), top, 0.0)
    share_1, share_2 = (lse_1 - top).exp(), (lse_2 - top).exp()  # exp(-inf) = 0 for an empty part
    total = share_1 + share_2
    t = (share_2 / torch.where(total > 0, total, 1.0))[..., None]
    if in_place:
        return out_1.lerp_(out_2.to(out_1.dtype), t.to(out_1.dtype))
    dtype = torch.promote_types(out_1.dtype, t.dtype)
    return torch.lerp(out_1.to(dtype), out_2.to(dtype), t.to(dtype))


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
    key_keep = key_keep & window_keys(real, slots.windowed)[:, None, None, :]  # (b, 1, n, n)
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
