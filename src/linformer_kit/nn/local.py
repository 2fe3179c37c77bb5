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
(out (b, h, n, d), weights or None), `KeySet` holding the slots (`Slots`), the padding mask, w, g. The
table `LOCAL_CORES` names them by backend, and `local_attention_function` resolves "auto":

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
                              strided views of K padded once; no key copied per block. PyTorch's fused
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

from typing import NamedTuple, Protocol

import torch
from torch import Tensor
from torch.nn import functional as F

from linformer_kit.nn.backends import eager_attention, fill_empty_rows

# Queries per block of `banded_attention` when the window is narrower (B = max(MIN_BLOCK, w)), and of
# `sdpa_local_attention` (B = max(SDPA_BLOCK, w)): a larger block copies the slots fewer times and wastes
# more of the band (B + 2w keys for 2w + 1 used); each the fastest of three blocks measured, or within the
# noise of it (docs/benchmarks.md, "Local window").
MIN_BLOCK = 32
SDPA_BLOCK = 128
SPLIT_BLOCK = 64  # `split_local_attention`'s band: B + 2w keys for B queries, the slots not copied


class Slots(NamedTuple):
    """The k projected slots a query attends to."""

    keys: Tensor  # E K (b, h, s, d)
    values: Tensor  # F V (b, h, s, d)
    keep: Tensor | None  # which slots count, (b, 1|h, 1, s) (broadcast over queries); None: all of them
    windowed: Tensor | None  # (b,) which rows take the local window and global keys; None: all


class KeySet(NamedTuple):
    """Every key a query of the window cores may read, but its own row's K, V: one value for every core."""

    slots: Slots
    real: Tensor | None  # (b, n) the padding mask, True = real token; None: every token is real
    window: int | None  # w; None: no window (the global tokens only)
    global_tokens: int = 0  # g
    longest: int | None = None  # the longest input: a symbolic n's blocks are its (`banded_attention`)


class LocalCore(Protocol):
    """The window cores' one contract: q, k, v (b, h, n, d) -> (out (b, h, n, d), weights or None)."""

    def __call__(
        self, q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
    ) -> tuple[Tensor, Tensor | None]: ...


def banded_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """The module docstring's attention by query blocks, scores written out -> (out (b, h, n, d), None).

    With a symbolic n (torch.export, dynamic compile), the input is padded to `keyset.longest` rounded up to
    whole blocks, so the graph has the same blocks at every n (a block count that depends on n would pin
    the export to one n).
    """
    b, h, n, d = q.shape
    dtype = torch.promote_types(q.dtype, torch.float32)
    slots = keyset.slots
    real, k, v = _real_tokens(keyset.real, k, v)
    w, g = _sizes(keyset, n)
    local = keyset.window is not None
    block = max(MIN_BLOCK, w)
    span = (
        keyset.longest if not isinstance(n, int) and keyset.longest is not None else n
    )  # fixed blocks, or n's
    blocks = -(-span // block)
    pad = blocks * block - n  # (symbolic when n is)
    position = torch.arange(blocks * block, device=q.device)
    # which keys a window may hold: real, past the global tokens, in a row that takes the window. As 0 / 1
    # in the compute dtype, not bool: padded and sliced bool masks miscompile in torch.compile's C++ backend
    key_ok = _window_keys(real, slots.windowed)
    window_ok = F.pad(key_ok.to(dtype), (0, pad)) * (position >= g).to(dtype)  # (b, n + pad)

    def blocked(t: Tensor) -> Tensor:  # (b, h, n, c) -> (b, h, blocks, B, c)
        return F.pad(t, (0, 0, 0, pad)).view(b, h, blocks, block, t.shape[-1])

    qp = F.pad(q.to(dtype) * scale, (0, 0, 0, pad))  # (b, h, padded n, d), scaled once
    qb = qp.view(b, h, blocks, block, d)  # (b, h, nb, B, d)
    near_k = _neighbourhood(blocked(k), w).to(dtype)  # (b, h, nb, B + 2w, d)
    near_v = _neighbourhood(blocked(v), w)  # (b, h, nb, B + 2w, d)
    near_ok = _neighbourhood(window_ok.view(b, 1, blocks, block, 1), w)[..., 0] > 0  # (b, 1, nb, B + 2w)
    near_keep = _band(block, w, q.device) & near_ok[:, :, :, None, :]  # (b, 1, nb, B, B + 2w)

    # Slots and global keys are the same for every query: one matmul over all queries, not one per block
    neg = float("-inf")
    with torch.autocast(device_type=q.device.type, enabled=False):
        scores = torch.matmul(qp, slots.keys.to(dtype).transpose(-1, -2))  # (b, h, padded n, s)
        if slots.keep is not None:
            scores = scores.masked_fill(~slots.keep, neg)
        parts = [scores.view(b, h, blocks, block, -1)]
        if g:
            global_scores = torch.matmul(qp, k[:, :, :g].to(dtype).transpose(-1, -2))  # (b, h, padded n, g)
            global_scores = global_scores.masked_fill(~key_ok[:, None, None, :g], neg)
            parts.append(global_scores.view(b, h, blocks, block, g))
        if local:
            near = torch.matmul(qb, near_k.transpose(-1, -2))  # (b, h, nb, B, B + 2w)
            parts.append(near.masked_fill(~near_keep, neg))
        weights = torch.cat(parts, dim=-1).softmax(dim=-1)  # (b, h, nb, B, s + g + B + 2w)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    weights = weights.to(v.dtype)
    s = slots.keys.shape[-2]
    flat = weights.view(b, h, blocks * block, -1)  # (b, h, padded n, s + g + B + 2w)
    out = torch.matmul(flat[..., :s], slots.values)  # (b, h, padded n, d)
    if g:
        out = out + torch.matmul(flat[..., s : s + g], v[:, :, :g])
    if local:
        out = out + torch.matmul(weights[..., s + g :], near_v).view(b, h, blocks * block, d)
    out = out.reshape(b, h, blocks * block, d)  # (b, h, padded n, d)
    if g:  # (replaced before the padding is cut: sizes that do not depend on a symbolic n)
        out = torch.cat([_global_rows(q, k, v, real, g, scale, dropout_p), out[:, :, g:]], dim=2)
    return out[:, :, :n], None  # (b, h, n, d)


def sdpa_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """The module docstring's attention through PyTorch's fused SDPA kernel -> (out (b, h, n, d), None).

    Query block c (B = max(SDPA_BLOCK, w) rows) is one SDPA problem over its own keys
    [ E K (s) ; K_j, j < g ; K_j, cB - w <= j < cB + B + w ] with a bool mask (b, 1|h, B, s + g + B + 2w),
    the blocks stacked in SDPA's batch: one kernel call computes scores, mask, softmax and weights @ values
    without writing the scores out (`banded_attention` writes them, and masks, concatenates and normalises
    them in separate passes). The slots are copied once per block (b, nb, h, s + g + B + 2w, d):
    O(n (k + g + B + 2w) d / B) memory. Without a window the keys are the same for every query: one block
    of n rows. Needs a concrete n (the block count is a Python int).
    """
    b, h, n, d = q.shape
    slots = keyset.slots
    real, k, v = _real_tokens(keyset.real, k, v)
    w, g = _sizes(keyset, n)
    block = max(SDPA_BLOCK, w) if keyset.window is not None else max(n, 1)
    blocks = -(-n // block)
    pad = blocks * block - n
    key_ok = _window_keys(real, slots.windowed)  # which keys a window or global may hold

    def by_block(t: Tensor) -> Tensor:  # (b, h, n, c) -> (b, nb, h, B, c)
        return F.pad(t, (0, 0, 0, pad)).view(b, h, blocks, block, t.shape[-1]).transpose(1, 2)

    def per_block(t: Tensor) -> Tensor:  # rows all blocks read: (b, h, m, c) -> (b, nb, h, m, c)
        return t[:, None].expand(b, blocks, *t.shape[1:])

    key_rows, value_rows = [per_block(slots.keys)], [per_block(slots.values)]
    slot_ok = torch.ones(b, 1, 1, slots.keys.shape[-2], dtype=torch.bool, device=q.device)
    keep = [
        per_block(slot_ok if slots.keep is None else slots.keep.expand(b, -1, 1, -1))
    ]  # (b, nb, 1|h, 1, s)
    if g:
        key_rows.append(per_block(k[:, :, :g]))
        value_rows.append(per_block(v[:, :, :g]))
        keep.append(per_block(key_ok[:, None, None, :g]))  # (b, nb, 1, 1, g)
    if keyset.window is not None:
        key_rows.append(
            _neighbourhood(by_block(k).transpose(1, 2), w).transpose(1, 2)
        )  # (b, nb, h, B + 2w, d)
        value_rows.append(_neighbourhood(by_block(v).transpose(1, 2), w).transpose(1, 2))
        position = torch.arange(blocks * block, device=q.device)
        near_ok = F.pad(key_ok & (position[:n] >= g), (0, pad)).view(b, 1, blocks, block, 1)
        near_ok = _neighbourhood(near_ok, w)[..., 0].transpose(1, 2)  # (b, nb, 1, B + 2w)
        keep.append(_band(block, w, q.device) & near_ok[..., None, :])  # (b, nb, 1, B, B + 2w)
    rows = (b, blocks, max(m.shape[2] for m in keep), block)  # heads: 1, or h where the slot mask is per head
    mask = torch.cat([m.expand(*rows, m.shape[-1]) for m in keep], dim=-1)  # (b, nb, 1|h, B, s + g + B + 2w)
    out = F.scaled_dot_product_attention(
        by_block(q).flatten(0, 1),  # (b nb, h, B, d)
        torch.cat(key_rows, dim=-2).flatten(0, 1),  # (b nb, h, s + g + B + 2w, d)
        torch.cat(value_rows, dim=-2).flatten(0, 1),
        attn_mask=mask.flatten(0, 1),
        dropout_p=dropout_p,
        scale=scale,
    )  # (b nb, h, B, d)
    out = out.view(b, blocks, h, block, d).transpose(2, 3).reshape(b, blocks * block, h, d)[:, :n]
    if g:
        top = _global_rows(q, k, v, real, g, scale, dropout_p).transpose(1, 2)  # (b, g, h, d)
        out = torch.cat([top, out[:, g:]], dim=1)
    return out.transpose(1, 2), None  # (b, h, n, d), a view of (b, n, h, d): merging the heads is free


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
    into every block), and the band's keys are a strided view: K is copied once into a zero-padded
    (h, w + b nB + w, d) buffer, the batch rows end to end, and `unfold` cuts the (h, b nb, B + 2w, d)
    neighbourhoods out of it (keys of a neighbouring batch row fall in the padding the mask drops).

    Each part is PyTorch's fused CPU flash kernel (`_fused_part`: out and log-sum-exp, scores never
    written out) for a CPU forward without gradients or dropout, and an explicit one (`_explicit_part`:
    scores, fp32 or wider, exact gradients) otherwise: the kernel's log-sum-exp has no gradient, and it
    has no dropout. Dropout on each part's normalised weights is dropout on the merged ones (it scales
    elementwise). A query with no key in either part (a pad query of a row that keeps no slot) gets 0,
    finite, gradients too. Needs a concrete n (the block count is a Python int).
    """
    b, h, n, d = q.shape
    slots = keyset.slots
    if keyset.real is None:  # nothing to zero: skip `_real_tokens`' copies of K and V
        real = torch.ones(b, n, dtype=torch.bool, device=q.device)
    else:
        real, k, v = _real_tokens(keyset.real, k, v)
    w, g = _sizes(keyset, n)
    key_ok = _window_keys(real, slots.windowed)  # which keys a window or global may hold
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

    if keyset.window is not None:  # part 2: the band
        block = SPLIT_BLOCK
        blocks = -(-n // block)
        span = blocks * block  # each batch row padded to whole blocks
        near = block + 2 * w

        def rows(t: Tensor, ends: int) -> Tensor:  # (b, h, n, d) -> (h, ends + b span + ends, d), one copy
            buffer = t.new_zeros(h, ends + b * span + ends, d)
            buffer[:, ends : ends + b * span].view(h, b, span, d)[:, :, :n] = t.transpose(0, 1)
            return buffer

        def neighbourhoods(t: Tensor) -> Tensor:  # (b, h, n, d) -> (h, b nb, B + 2w, d), a view
            return rows(t, w).unfold(1, near, block).transpose(-1, -2)

        position = torch.arange(n, device=q.device)
        near_ok = F.pad(key_ok & (position >= g), (w, span - n + w))  # (b, w + span + w): own row only
        near_ok = near_ok.unfold(1, near, block).reshape(b * blocks, 1, near)  # (b nb, 1, B + 2w)
        band_keep = (_band(block, w, q.device) & near_ok)[None]  # (1, b nb, B, B + 2w)
        by_block = (  # (h, b nb, B, d): a view of q where no row needs padding
            q.transpose(0, 1).reshape(h, b * blocks, block, d)
            if span == n
            else rows(q, 0).view(h, b * blocks, block, d)
        )
        near_out, near_lse = part(by_block, neighbourhoods(k), neighbourhoods(v), band_keep, scale, dropout_p)
        near_out = near_out.reshape(h, b, span, d)[:, :, :n].transpose(0, 1)  # (b, h, n, d)
        near_lse = near_lse.reshape(h, b, span)[:, :, :n].transpose(0, 1)  # (b, h, n)
        out = _merge(out, lse, near_out, near_lse)
    out = out.to(v.dtype)  # (a new tensor that no backward reads: the global rows may overwrite it)
    if g:
        out[:, :, :g] = _global_rows(q, k, v, real, g, scale, dropout_p)
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
    if keep is not None:  # the kernel takes an additive mask in q's dtype
        mask = torch.zeros(keep.shape, dtype=q.dtype, device=q.device).masked_fill(~keep, float("-inf"))
    out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, 0.0, False, attn_mask=mask, scale=scale
    )
    if keep is not None:  # the kernel gives a row with no key lse 0 (and out 0): make it -inf
        lse = lse.masked_fill(~keep.any(dim=-1), float("-inf"))
    return out, lse


def _merge(out_1: Tensor, lse_1: Tensor, out_2: Tensor, lse_2: Tensor) -> Tensor:
    """Two partial softmax outputs (..., L, d) over disjoint key sets, with their log-sum-exps (..., L),
    -> the softmax over both, in the wider dtype of the lse. A row with no key in either part -> 0."""
    dtype = torch.promote_types(lse_1.dtype, lse_2.dtype)
    top = torch.maximum(lse_1, lse_2).detach()  # a shift, as in `_explicit_part`
    top = torch.where(top.isfinite(), top, 0.0)
    share_1, share_2 = (lse_1 - top).exp(), (lse_2 - top).exp()  # exp(-inf) = 0 for an empty part
    total = share_1 + share_2
    total = torch.where(total > 0, total, 1.0)
    return out_1.to(dtype) * (share_1 / total)[..., None] + out_2.to(dtype) * (share_2 / total)[..., None]


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
    real, k, v = _real_tokens(keyset.real, k, v)
    i = torch.arange(n, device=q.device)[:, None]  # query position
    j = torch.arange(n, device=q.device)[None, :]  # key position
    near = (i - j).abs() <= window if window is not None else torch.zeros_like(i == j)
    key_keep = (near & (j >= g)) | (j < g)  # (n, n): the window and the global keys
    key_keep = key_keep & _window_keys(real, slots.windowed)[:, None, None, :]  # (b, 1, n, n)
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
    """The module docstring's attention in one FlexAttention kernel, compiled: nn/local_flex.py.

    Imported at the call: that module builds on this one's types, and torch < 2.5 has no flex_attention.
    """
    from linformer_kit.nn.local_flex import flex_window_attention

    return flex_window_attention(q, k, v, keyset, scale=scale, dropout_p=dropout_p)


LOCAL_CORES: dict[str, LocalCore] = {
    "eager": dense_local_attention,
    "sdpa": sdpa_local_attention,
    "blocked": banded_attention,
    "split": split_local_attention,
    "flex": flex_local_attention,
}  # by backend name, as nn/backends.py's BACKENDS

FLEX_MIN_HEAD_DIM = 16  # FlexAttention's Triton kernels take head dims >= 16


def local_attention_function(backend: str, q: Tensor, dropout_p: float = 0.0) -> LocalCore:
    """The window core `backend` names for these queries; "auto" picks by the rules below, each measured
    in docs/benchmarks.md ("Local window": sdpa / banded and split / sdpa A/B in one process)."""
    if backend == "eager":
        return dense_local_attention  # the reference, and the one that returns the weights
    if not isinstance(q.shape[-2], int):  # SDPA's block count is a Python int; banded's blocks are longest's
        return banded_attention
    if backend != "auto":
        return LOCAL_CORES[backend]
    if q.device.type == "cuda" and dropout_p == 0.0 and q.shape[-1] >= FLEX_MIN_HEAD_DIM and _has_flex():
        return flex_local_attention  # one block-sparse kernel: no slots copied per block, no launch per part
    if q.device.type == "cpu" and dropout_p > 0.0:  # PyTorch's fused CPU kernel has no dropout: its unfused
        return banded_attention  # fallback is slower than writing the scores out
    if q.device.type == "cpu" and not (torch.is_grad_enabled() and q.requires_grad):  # a CPU forward: slots
        return split_local_attention  # read once, not copied per block, fewer band keys; no backward to pay
    return sdpa_local_attention  # one fused kernel, no scores written out: the faster core everywhere else


def _has_flex() -> bool:
    from linformer_kit.nn.local_flex import flex_available

    return flex_available()


def _aligned(slot_ok: Tensor, key_keep: Tensor) -> list[Tensor]:
    """The slot mask (b, 1|h, 1|n, s) and the key mask (b, 1, n, n) broadcast to one (b, h', n, ·) shape."""
    lead = torch.broadcast_shapes(slot_ok.shape[:-1], key_keep.shape[:-1])
    return [slot_ok.expand(*lead, slot_ok.shape[-1]), key_keep.expand(*lead, key_keep.shape[-1])]


def _global_rows(
    q: Tensor, k: Tensor, v: Tensor, real: Tensor, g: int, scale: float, dropout_p: float
) -> Tensor:
    """Exact attention of the g global queries over every real key -> (b, h, g, d). O(g n)."""
    return eager_attention(
        q[:, :, :g], k, v, fill_empty_rows(real)[:, None, None, :], scale=scale, dropout_p=dropout_p
    )[0]


def _band(block: int, w: int, device: torch.device) -> Tensor:
    """(B, B + 2w) bool: which keys of a block's neighbourhood (`_neighbourhood`) query r of the block may read.

    Key c of the neighbourhood is token j = i - r + c - w for query i = cB + r, so |i - j| <= w is
    r <= c <= r + 2w.
    """
    row = torch.arange(block, device=device)[:, None]  # query r of a block ...
    col = torch.arange(block + 2 * w, device=device)[None, :]  # ... and key c of its neighbourhood
    return (col >= row) & (col <= row + 2 * w)


def _neighbourhood(blocks: Tensor, w: int) -> Tensor:
    """(..., nb, B, c) -> (..., nb, B + 2w, c): each block with the last w rows of the block before it
    and the first w rows of the block after it (zeros past either end). Needs w <= B."""
    if w == 0:
        return blocks
    before = F.pad(blocks[..., :-1, -w:, :], (0, 0, 0, 0, 1, 0))  # block c - 1's tail; zeros before block 0
    after = F.pad(blocks[..., 1:, :w, :], (0, 0, 0, 0, 0, 1))  # block c + 1's head; zeros after the last
    return torch.cat([before, blocks, after], dim=-2)


def _real_tokens(real: Tensor | None, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The padding mask (b, n) (all True for None), and K, V with pad rows zero by a select: NaN or inf
    there would survive a zero weight."""
    b, _, n, _ = k.shape
    real = torch.ones(b, n, dtype=torch.bool, device=k.device) if real is None else real
    pad = ~real[:, None, :, None]
    return real, k.masked_fill(pad, 0.0), v.masked_fill(pad, 0.0)


def _sizes(keyset: KeySet, n: int) -> tuple[int, int]:
    """(w, g) at most n (w = 0 without a window); a symbolic n keeps them as given."""
    w = 0 if keyset.window is None else keyset.window
    return (min(w, n), min(keyset.global_tokens, n)) if isinstance(n, int) else (w, keyset.global_tokens)


def _window_keys(real: Tensor, windowed: Tensor | None) -> Tensor:
    """(b, n) bool: which tokens a window or the global keys may hold: real, in a row that takes the window."""
    return real if windowed is None else real & windowed[:, None]
