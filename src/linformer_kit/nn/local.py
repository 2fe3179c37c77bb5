"""A local window and global tokens beside the projection, in one softmax (Long-Short Transformer's idea).

Per head (notation of nn/attention.py; w the window, g the global tokens, s the k projected slots,
m the padding mask, True = real token):

    query i >= g:  keys(i) = [ E K (s slots) ; K_j, j < g ; K_j, j >= g and |i - j| <= w ]   (real j only)
                   out_i   = softmax( q_i keys(i)ᵀ / sqrt(d) ) [ F V ; V_j ... ]              one softmax
    query i < g:   out_i   = softmax( q_i K_realᵀ / sqrt(d) ) V_real                          (Longformer's global rows)

Why: a head that reads a neighbour or one given token is full rank, and no k < n projection keeps it
(the CPU study's layer 1; in each of all-MiniLM-L6-v2's first five layers the most local head puts 63-80 %
of its attention within ±16 tokens, docs/reproduction/distill-minilm/spectrum.txt):
DESIGN.md, "Local window beside the projection". A global key j < g is never also a window key, so no
key counts twice. A row whose k slots already hold its own real tokens (short_inputs="exact" in a
mixed batch, `windowed` False) takes no window and no global key: its slots are exact attention.

Three cores compute it:

    `sdpa_local_attention`    the fast one (the "sdpa" backend; "auto" as `local_core` says): the
                              same query blocks, each one problem of PyTorch's fused SDPA kernel over its
                              own keys [slots ; global keys ; neighbourhood] with a bool mask, so the
                              scores are never written out. At all-MiniLM-L6-v2's shape (12 heads of
                              32, k = 128, w = 16, n = 4 096) the core is 2.9x faster than
                              `banded_attention` (29 / 85 ms).
    `banded_attention`        explicit scores (the "blocked" backend, and any symbolic n: export). Queries in blocks of B = max(32, w); block c attends to the
                              keys of [cB - w, cB + B + w), built from its own and its neighbouring key
                              blocks by slicing and concatenation (no unfold: one graph for export).
                              Scores (b, h, n, s + g + B + 2w): time and memory O(n (k + g + B + 2w))
                              for the windowed rows, O(g n) for the global ones; no (n x n) tensor.
    `dense_local_attention`   the reference: an (n x (s + n)) score matrix with a band mask. Its
                              weights, (b, h, n, s + n), are what `output_attentions` returns: columns
                              [:s] the projected slots, column s + j the weight on token j (zero
                              outside the window and the global keys).

The explicit ones take scores and softmax in fp32 or wider (half precision promoted, as
`eager_attention`; SDPA accumulates half precision in fp32 inside its kernel). All three agree to
float64 round-off, values and gradients (tests/nn/test_local.py). Torch-only.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

MIN_BLOCK = 32  # queries per block when the window is narrower; 16-64 measured in docs/benchmarks.md
# the same for `sdpa_local_attention`. The core alone, k = 128, w = 16, 12 heads, one layer, ms for blocks of
# 32 / 64 / 128 / 256 (banded_attention beside): d = 32, n = 4 096: 54 / 29 / 29 / 32 (85); d = 64, n = 4 096:
# 123 / 92 / 76 / 71 (90); d = 64, n = 1 024: 13.5 / 12.0 / 12.1 / 14.1 (13.1). Larger blocks copy the slots
# fewer times (it is memory-bound at d = 64) and waste more of the band (B + 2w keys for 2w + 1 used).
SDPA_BLOCK = 128


def banded_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slot_k: torch.Tensor,
    slot_v: torch.Tensor,
    slot_keep: torch.Tensor | None,
    real: torch.Tensor | None,
    windowed: torch.Tensor | None,
    *,
    window: int | None,
    global_tokens: int,
    scale: float,
    dropout_p: float = 0.0,
    longest: int | None = None,
) -> torch.Tensor:
    """The module docstring's attention by query blocks -> out (b, h, n, d).

    q, k, v (b, h, n, d) per token; slot_k, slot_v (b, h, s, d) the projected slots; slot_keep a bool
    mask broadcastable to (b, h, 1, s) (True = the slot counts) or None; real (b, n) the padding mask or
    None; windowed (b,) whether a row takes the window and the global keys, or None (every row);
    window None: no window (global tokens only). `longest`: with a symbolic n (torch.export, dynamic
    compile), the input is padded to `longest` rounded up to whole blocks, so the graph has the same
    blocks at every n (a block count that depends on n would pin the export to one n).
    """
    b, h, n, d = q.shape
    dtype = torch.promote_types(q.dtype, torch.float32)
    real = _real(real, b, n, q.device)
    k, v = _zero_pad_rows(k, real), _zero_pad_rows(v, real)
    local = window is not None
    w = 0 if window is None else min(window, n) if isinstance(n, int) else window
    g = min(global_tokens, n) if isinstance(n, int) else global_tokens
    block = max(MIN_BLOCK, w)
    span = longest if not isinstance(n, int) and longest is not None else n  # fixed blocks, or n's
    blocks = -(-span // block)
    pad = blocks * block - n  # (symbolic when n is)
    position = torch.arange(blocks * block, device=q.device)
    # which keys a window may hold: real, past the global tokens, in a row that takes the window. As 0 / 1
    # in the compute dtype, not bool: padded and sliced bool masks miscompile in torch.compile's C++ backend
    key_ok = real if windowed is None else real & windowed[:, None]
    key_ok = F.pad(key_ok.to(dtype), (0, pad)) * (position >= g).to(dtype)  # (b, n + pad)

    def blocked(t: torch.Tensor) -> torch.Tensor:  # (b, h, n, c) -> (b, h, blocks, B, c)
        return F.pad(t, (0, 0, 0, pad)).view(b, h, blocks, block, t.shape[-1])

    qp = F.pad(q.to(dtype) * scale, (0, 0, 0, pad))  # (b, h, padded n, d), scaled once
    qb = qp.view(b, h, blocks, block, d)  # (b, h, nb, B, d)
    near_k = _neighbourhood(blocked(k), w).to(dtype)  # (b, h, nb, B + 2w, d)
    near_v = _neighbourhood(blocked(v), w)  # (b, h, nb, B + 2w, d)
    near_ok = _neighbourhood(key_ok.view(b, 1, blocks, block, 1), w)[..., 0] > 0  # (b, 1, nb, B + 2w)
    near_keep = _band(block, w, q.device) & near_ok[:, :, :, None, :]  # (b, 1, nb, B, B + 2w)

    # Slots and global keys are the same for every query: one matmul over all queries, not one per block
    neg = float("-inf")
    with torch.autocast(device_type=q.device.type, enabled=False):
        slots = torch.matmul(qp, slot_k.to(dtype).transpose(-1, -2))  # (b, h, padded n, s)
        if slot_keep is not None:
            slots = slots.masked_fill(~slot_keep, neg)
        parts = [slots.view(b, h, blocks, block, -1)]
        if g:
            global_keep = real[:, :g] if windowed is None else real[:, :g] & windowed[:, None]  # (b, g)
            global_scores = torch.matmul(qp, k[:, :, :g].to(dtype).transpose(-1, -2))  # (b, h, padded n, g)
            global_scores = global_scores.masked_fill(~global_keep[:, None, None, :], neg)
            parts.append(global_scores.view(b, h, blocks, block, g))
        if local:
            near = torch.matmul(qb, near_k.transpose(-1, -2))  # (b, h, nb, B, B + 2w)
            parts.append(near.masked_fill(~near_keep, neg))
        weights = torch.cat(parts, dim=-1).softmax(dim=-1)  # (b, h, nb, B, s + g + B + 2w)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    weights = weights.to(v.dtype)
    s = slot_k.shape[-2]
    flat = weights.view(b, h, blocks * block, -1)  # (b, h, padded n, s + g + B + 2w)
    out = torch.matmul(flat[..., :s], slot_v)  # (b, h, padded n, d)
    if g:
        out = out + torch.matmul(flat[..., s : s + g], v[:, :, :g])
    if local:
        out = out + torch.matmul(weights[..., s + g :], near_v).view(b, h, blocks * block, d)
    out = out.reshape(b, h, blocks * block, d)  # (b, h, padded n, d)
    if g:  # (replaced before the padding is cut: sizes that do not depend on a symbolic n)
        top = _global_rows(q[:, :, :g], k, v, real, scale, dropout_p)  # (b, h, g, d)
        out = torch.cat([top, out[:, :, g:]], dim=2)
    return out[:, :, :n]  # (b, h, n, d)


def local_core(backend: str, q: torch.Tensor, dropout_p: float = 0.0) -> str:
    """Which core computes the layer's window for `backend` ("auto", "sdpa", "blocked", "eager") and these queries.

    "eager" -> "dense" (the reference); "blocked", or a symbolic n (export) -> "banded"; "sdpa" -> "sdpa".
    "auto" -> "sdpa", except on a CPU with attention dropout (PyTorch's fused CPU kernel has none and falls
    back to its unfused path: 814 against 421 ms, 12 heads of 32, n = 512 x 8, p = 0.1, forward + backward)
    or a forward without gradients at head dim > 32 -> "banded". Measured,
    one layer, k = 128, w = 16, one global token, n = 4 096, A/B in one process on 2 AVX512 cores (ms,
    sdpa / banded): 12 heads of 32: forward 62.7 / 64.3, forward + backward 193 / 234; 12 heads of 64:
    forward 194 / 161, forward + backward 507 / 558 (and at 12 heads of 32, n = 512 x 8: 194 / 259 with
    backward). SDPA's kernel wins wherever a backward runs; its forward loses at d = 64, where copying the
    slots per block costs more than writing the scores out.
    """
    if backend == "eager":
        return "dense"
    if backend == "blocked" or not isinstance(q.shape[-2], int):
        return "banded"
    if backend == "sdpa":
        return "sdpa"
    if q.device.type != "cpu":
        return "sdpa"
    grad = torch.is_grad_enabled() and q.requires_grad
    return "banded" if dropout_p > 0.0 or (not grad and q.shape[-1] > 32) else "sdpa"


def sdpa_local_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slot_k: torch.Tensor,
    slot_v: torch.Tensor,
    slot_keep: torch.Tensor | None,
    real: torch.Tensor | None,
    windowed: torch.Tensor | None,
    *,
    window: int | None,
    global_tokens: int,
    scale: float,
    dropout_p: float = 0.0,
) -> torch.Tensor:
    """The module docstring's attention through PyTorch's fused SDPA kernel -> out (b, h, n, d).

    Query block c (B = max(SDPA_BLOCK, w) rows) is one SDPA problem over its own keys
    [ E K (s) ; K_j, j < g ; K_j, cB - w <= j < cB + B + w ] with a bool mask (b, 1|h, B, s + g + B + 2w),
    the blocks stacked in SDPA's batch: one kernel call computes scores, mask, softmax and weights @ values
    without writing the scores out (the explicit `banded_attention` writes them, and masks, concatenates and
    normalises them in separate passes: 3x slower on a CPU at all-MiniLM-L6-v2's shape, docs/distill.md).
    The slots are copied once per block (b, nb, h, s + g + B + 2w, d): O(n (k + g + B + 2w) d / B) memory.
    Without a window the keys are the same for every query: one block of n rows. Needs a concrete n (the
    block count is a Python int); `banded_attention` serves a symbolic n. Same arguments and result as it.
    """
    b, h, n, d = q.shape
    real = _real(real, b, n, q.device)
    k, v = _zero_pad_rows(k, real), _zero_pad_rows(v, real)
    g = min(global_tokens, n)
    w = 0 if window is None else min(window, n)
    block = max(SDPA_BLOCK, w) if window is not None else max(n, 1)
    blocks = -(-n // block)
    pad = blocks * block - n
    key_ok = real if windowed is None else real & windowed[:, None]  # which keys a window or global may hold

    def by_block(t: torch.Tensor) -> torch.Tensor:  # (b, h, n, c) -> (b, nb, h, B, c)
        return F.pad(t, (0, 0, 0, pad)).view(b, h, blocks, block, t.shape[-1]).transpose(1, 2)

    def per_block(t: torch.Tensor) -> torch.Tensor:  # rows all blocks read: (b, h, m, c) -> (b, nb, h, m, c)
        return t[:, None].expand(b, blocks, *t.shape[1:])

    keys, values = [per_block(slot_k)], [per_block(slot_v)]
    slot_ok = torch.ones(b, 1, 1, slot_k.shape[-2], dtype=torch.bool, device=q.device)
    keep = [per_block(slot_ok if slot_keep is None else slot_keep.expand(b, -1, 1, -1))]  # (b, nb, 1|h, 1, s)
    if g:
        keys.append(per_block(k[:, :, :g]))
        values.append(per_block(v[:, :, :g]))
        keep.append(per_block(key_ok[:, None, None, :g]))  # (b, nb, 1, 1, g)
    if window is not None:
        keys.append(_neighbourhood(by_block(k).transpose(1, 2), w).transpose(1, 2))  # (b, nb, h, B + 2w, d)
        values.append(_neighbourhood(by_block(v).transpose(1, 2), w).transpose(1, 2))
        position = torch.arange(blocks * block, device=q.device)
        near_ok = F.pad(key_ok & (position[:n] >= g), (0, pad)).view(b, 1, blocks, block, 1)
        near_ok = _neighbourhood(near_ok, w)[..., 0].transpose(1, 2)  # (b, nb, 1, B + 2w)
        keep.append(_band(block, w, q.device) & near_ok[..., None, :])  # (b, nb, 1, B, B + 2w)
    rows = (b, blocks, max(m.shape[2] for m in keep), block)  # heads: 1, or h where the slot mask is per head
    mask = torch.cat([m.expand(*rows, m.shape[-1]) for m in keep], dim=-1)  # (b, nb, 1|h, B, s + g + B + 2w)
    out = F.scaled_dot_product_attention(
        by_block(q).flatten(0, 1),  # (b nb, h, B, d)
        torch.cat(keys, dim=-2).flatten(0, 1),  # (b nb, h, s + g + B + 2w, d)
        torch.cat(values, dim=-2).flatten(0, 1),
        attn_mask=mask.flatten(0, 1),
        dropout_p=dropout_p,
        scale=scale,
    )  # (b nb, h, B, d)
    out = out.view(b, blocks, h, block, d).transpose(2, 3).reshape(b, blocks * block, h, d)[:, :n]
    if g:
        top = _global_rows(q[:, :, :g], k, v, real, scale, dropout_p).transpose(1, 2)  # (b, g, h, d)
        out = torch.cat([top, out[:, g:]], dim=1)
    return out.transpose(1, 2)  # (b, h, n, d), a view of (b, n, h, d): merging the heads is free


def dense_local_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    slot_k: torch.Tensor,
    slot_v: torch.Tensor,
    slot_keep: torch.Tensor | None,
    real: torch.Tensor | None,
    windowed: torch.Tensor | None,
    *,
    window: int | None,
    global_tokens: int,
    scale: float,
    dropout_p: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The reference: the same arguments as `banded_attention` -> (out (b, h, n, d), weights (b, h, n, s + n)).

    Scores [q (E K)ᵀ ; q Kᵀ] (n x (s + n)), masked to the slots, the global keys and the band
    |i - j| <= w (rows i < g: every real key and no slot), one softmax. O(n²): for tests and for
    reading the weights.
    """
    b, n = q.shape[0], q.shape[2]
    dtype = torch.promote_types(q.dtype, torch.float32)
    real = _real(real, b, n, q.device)
    k, v = _zero_pad_rows(k, real), _zero_pad_rows(v, real)
    i = torch.arange(n, device=q.device)[:, None]  # query position
    j = torch.arange(n, device=q.device)[None, :]  # key position
    g = global_tokens
    near = (i - j).abs() <= window if window is not None else torch.zeros_like(i == j)
    key_keep = (near & (j >= g)) | (j < g)  # (n, n): the window and the global keys
    key_keep = key_keep & real[:, None, None, :]  # (b, 1, n, n)
    if windowed is not None:
        key_keep = key_keep & windowed[:, None, None, None]
    global_row = (i < g)[None, None]  # (1, 1, n, 1): a global query attends to every real key ...
    key_keep = (key_keep & ~global_row) | (global_row & real[:, None, None, :])
    key_keep = key_keep | (global_row & ~real.any(-1)[:, None, None, None])  # (... of an empty row: all)
    slot_shape = (b, 1, 1, slot_k.shape[-2])
    slot_ok = torch.ones(slot_shape, dtype=torch.bool, device=q.device) if slot_keep is None else slot_keep
    slot_ok = slot_ok & ~global_row  # ... and no slot
    with torch.autocast(device_type=q.device.type, enabled=False):
        keys = torch.cat([slot_k.to(dtype), k.to(dtype)], dim=-2)  # (b, h, s + n, d)
        scores = torch.matmul(q.to(dtype), keys.transpose(-1, -2)) * scale  # (b, h, n, s + n)
        keep = torch.cat(_aligned(slot_ok, key_keep), dim=-1)  # (b, 1|h, n, s + n)
        weights = scores.masked_fill(~keep, float("-inf")).softmax(dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    out = torch.matmul(weights.to(v.dtype), torch.cat([slot_v, v], dim=-2))  # (b, h, n, d)
    return out, weights


def _aligned(slot_ok: torch.Tensor, key_keep: torch.Tensor) -> list[torch.Tensor]:
    """The slot mask (b, 1|h, 1|n, s) and the key mask (b, 1, n, n) broadcast to one (b, h', n, ·) shape."""
    lead = torch.broadcast_shapes(slot_ok.shape[:-1], key_keep.shape[:-1])
    return [slot_ok.expand(*lead, slot_ok.shape[-1]), key_keep.expand(*lead, key_keep.shape[-1])]


def _global_rows(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, real: torch.Tensor, scale: float, dropout_p: float
) -> torch.Tensor:
    """Exact attention of the g global queries (b, h, g, d) over every real key -> (b, h, g, d). O(g n)."""
    dtype = torch.promote_types(q.dtype, torch.float32)
    keep = real | ~real.any(-1, keepdim=True)  # (b, n): a row without a real token attends to all
    with torch.autocast(device_type=q.device.type, enabled=False):
        scores = torch.matmul(q.to(dtype), k.to(dtype).transpose(-1, -2)) * scale  # (b, h, g, n)
        weights = scores.masked_fill(~keep[:, None, None, :], float("-inf")).softmax(dim=-1)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return torch.matmul(weights.to(v.dtype), v)


def _band(block: int, w: int, device: torch.device) -> torch.Tensor:
    """(B, B + 2w) bool: which keys of a block's neighbourhood (`_neighbourhood`) query r of the block may read.

    Key c of the neighbourhood is token j = i - r + c - w for query i = cB + r, so |i - j| <= w is
    r <= c <= r + 2w.
    """
    row = torch.arange(block, device=device)[:, None]  # query r of a block ...
    col = torch.arange(block + 2 * w, device=device)[None, :]  # ... and key c of its neighbourhood
    return (col >= row) & (col <= row + 2 * w)


def _neighbourhood(blocks: torch.Tensor, w: int) -> torch.Tensor:
    """(..., nb, B, c) -> (..., nb, B + 2w, c): each block with the last w rows of the block before it
    and the first w rows of the block after it (zeros past either end). Needs w <= B."""
    if w == 0:
        return blocks
    before = F.pad(blocks[..., :-1, -w:, :], (0, 0, 0, 0, 1, 0))  # block c - 1's tail; zeros before block 0
    after = F.pad(blocks[..., 1:, :w, :], (0, 0, 0, 0, 0, 1))  # block c + 1's head; zeros after the last
    return torch.cat([before, blocks, after], dim=-2)


def _real(real: torch.Tensor | None, b: int, n: int, device: torch.device) -> torch.Tensor:
    return torch.ones(b, n, dtype=torch.bool, device=device) if real is None else real


def _zero_pad_rows(t: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """Pad keys / values become zeros by a select: NaN or inf there would survive a zero weight."""
    return t.masked_fill(~real[:, None, :, None], 0.0)
