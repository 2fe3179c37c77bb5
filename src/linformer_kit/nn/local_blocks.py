"""Two window cores by query blocks: `banded_attention` (scores written out) and `sdpa_local_attention`
(PyTorch's fused SDPA kernel, one problem a block). nn/local.py's module docstring describes both beside the
other cores; what they read is nn/keys.py's `KeySet`. Torch-only.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

from linformer_kit.nn.keys import (
    KeySet,
    band_mask,
    global_rows,
    neighbourhoods,
    past_globals,
    real_tokens,
    window_key_mask,
    window_sizes,
)

# Queries per block of `banded_attention` when the window is narrower (B = max(MIN_BLOCK, w)), and of
# `sdpa_local_attention` (B = max(SDPA_BLOCK, w)): a larger block copies the slots fewer times and wastes
# more of the band (B + 2w keys for 2w + 1 used); each the fastest of three blocks measured, or within the
# noise of it (docs/benchmarks/cpu-window/README.md, "Local window").
MIN_BLOCK = 32
SDPA_BLOCK = 128


def banded_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """nn/local.py's attention by query blocks, scores written out -> (out (b, h, n, d), None).

    With a symbolic n (torch.export, dynamic compile), the input is padded to `keyset.longest` rounded up to
    whole blocks, so the graph has the same blocks at every n (a block count that depends on n would pin
    the export to one n).
    """
    b, h, n, d = q.shape
    dtype = torch.promote_types(q.dtype, torch.float32)
    slots = keyset.slots
    real, k, v = real_tokens(keyset.real, k, v)
    w, g = window_sizes(keyset, n)
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
    key_ok = window_key_mask(real, slots.windowed)
    window_ok = F.pad(key_ok.to(dtype), (0, pad)) * past_globals(position, g).to(dtype)  # (b, n + pad)

    def blocked(t: Tensor) -> Tensor:  # (b, h, n, c) -> (b, h, blocks, B, c)
        return F.pad(t, (0, 0, 0, pad)).view(b, h, blocks, block, t.shape[-1])

    qp = F.pad(q.to(dtype) * scale, (0, 0, 0, pad))  # (b, h, padded n, d), scaled once
    qb = qp.view(b, h, blocks, block, d)  # (b, h, nb, B, d)
    near_k = neighbourhoods(blocked(k), w).to(dtype)  # (b, h, nb, B + 2w, d)
    near_v = neighbourhoods(blocked(v), w)  # (b, h, nb, B + 2w, d)
    near_ok = neighbourhoods(window_ok.view(b, 1, blocks, block, 1), w)[..., 0] > 0  # (b, 1, nb, B + 2w)
    near_keep = band_mask(block, w, q.device) & near_ok[:, :, :, None, :]  # (b, 1, nb, B, B + 2w)

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
        out = torch.cat([global_rows(q, k, v, real, g, scale, dropout_p), out[:, :, g:]], dim=2)
    return out[:, :, :n], None  # (b, h, n, d)


def sdpa_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """nn/local.py's attention through PyTorch's fused SDPA kernel -> (out (b, h, n, d), None).

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
    real, k, v = real_tokens(keyset.real, k, v)
    w, g = window_sizes(keyset, n)
    block = max(SDPA_BLOCK, w) if keyset.window is not None else max(n, 1)
    blocks = -(-n // block)
    pad = blocks * block - n
    key_ok = window_key_mask(real, slots.windowed)  # which keys a window or global may hold

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
            neighbourhoods(by_block(k).transpose(1, 2), w).transpose(1, 2)
        )  # (b, nb, h, B + 2w, d)
        value_rows.append(neighbourhoods(by_block(v).transpose(1, 2), w).transpose(1, 2))
        position = torch.arange(blocks * block, device=q.device)
        near_ok = F.pad(key_ok & past_globals(position[:n], g), (0, pad)).view(b, 1, blocks, block, 1)
        near_ok = neighbourhoods(near_ok, w)[..., 0].transpose(1, 2)  # (b, nb, 1, B + 2w)
        keep.append(band_mask(block, w, q.device) & near_ok[..., None, :])  # (b, nb, 1, B, B + 2w)
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
        top = global_rows(q, k, v, real, g, scale, dropout_p).transpose(1, 2)  # (b, g, h, d)
        out = torch.cat([top, out[:, g:]], dim=1)
    return out.transpose(1, 2), None  # (b, h, n, d), a view of (b, n, h, d): merging the heads is free
