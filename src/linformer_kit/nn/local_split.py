"""The split core ("split", nn/cores.py): the window's one softmax (nn/local.py) as two partial softmaxes merged by
their log-sum-exp, split-KV decoding's merge.

Notation of nn/local.py. Part 1, the keys every query shares: all n queries against [ E K (s) ; K_j, j < g ], one
dense call, no per-query mask (the slot mask (b, 1|h, 1, s) broadcasts). Part 2, the band: query blocks of B =
`SPLIT_BLOCK` rows against the B + 2w keys around them, read where K and V lie (nn/local_band.py). Each part
gives its normalised output o_p and log-sum-exp l_p per query (-inf where it holds no key the query may read);
with m = max(l_1, l_2) and e_p = exp(l_p - m),

    out = (o_1 e_1 + o_2 e_2) / (e_1 + e_2),   lse = m + log(e_1 + e_2),

the one softmax over both key sets. The slots are read once for all queries (the SDPA core copies them into
every block). Three ways to run the parts:

    forward, CPU, no dropout       PyTorch's fused CPU flash kernel (`_fused_part`: out and lse, scores never
                                   written out), merged into part 1's output in place
    with gradients, CPU, no        the same forward, and a backward of the same kernel per part against the
    dropout (`FusedWindow`)        merged out and lse (split-KV's backward): each part's probabilities
                                   exp(s - lse) are its share of the one softmax, and D = rowsum(dO * out) is
                                   the merged output's, so each part's dq, dk, dv are exact; dq sums the parts'
                                   and the band's dk, dv sum the overlapping neighbourhoods (`index_add_`).
                                   Saved for backward: q, K, V, the slots, out and lse, no scores
    otherwise (dropout, off the    explicit scores (`_explicit_part`, fp32 or wider, exact gradients; dropout
    CPU)                           on each part's weights is dropout on the merged ones: it scales elementwise)

The global rows (i < g) are `global_rows`, overwriting what the parts gave them. A query with no key in either
part (a pad query of a row that keeps no slot) gets 0, finite, gradients too. Needs a concrete n (the block count
is a Python int). Tests: tests/nn/test_local.py (both paths against the reference), tests/nn/test_local_band.py.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional as F

from linformer_kit.nn.keys import KeySet, backward_reaches, global_rows, shared_keys, window_inputs
from linformer_kit.nn.local_band import (
    band_keep,
    flat_blocks,
    flat_neighbourhoods,
    neighbourhood_keys,
    segments,
)

SPLIT_BLOCK = 32  # the band's query block: B + 2w keys for B queries, the slots not copied

# a part: (q, k, v, keep, scale, dropout_p) -> (out (..., L, d), lse (..., L))
Part = Callable[[Tensor, Tensor, Tensor, "Tensor | None", float, float], tuple[Tensor, Tensor]]
_FLASH = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
_FLASH_BACKWARD = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward


def split_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """The module docstring's attention -> (out (b, h, n, d), None)."""
    if isinstance(q.shape[2], int) and q.shape[2] == 0:  # PyTorch's CPU flash kernel divides by n (SIGFPE)
        return q.clone(), None  # (b, h, 0, d), in the graph where q is
    slots = keyset.slots
    # PyTorch's CPU flash kernel, called here directly, reads d as unit-stride whatever the strides say (a q
    # strided in d gave NaN): such a view is copied once (the linears' views never are)
    q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
    if any(t.stride(-1) != 1 for t in slots[:2]):  # the slots reach the kernel as they are where g = 0
        slots = slots._replace(keys=slots.keys.contiguous(), values=slots.values.contiguous())
        keyset = keyset._replace(slots=slots)
    k, v, real, w, g, shared_ok, key_ok = window_inputs(q, k, v, keyset)
    band_w = None if keyset.window is None else w  # None: no band
    grad = backward_reaches(q, k, v, slots.keys, slots.values)
    path = _path(q, dropout_p, grad)
    if path == "fused+backward":
        out = FusedWindow.apply(q, k, v, slots.keys, slots.values, shared_ok, key_ok, band_w, g, scale)[0]
    else:
        part = _fused_part if path == "fused" else _explicit_part
        out, _ = _parts(
            q, k, v, slots.keys, slots.values, shared_ok, key_ok, band_w, g, scale, dropout_p, part
        )
    out = out.to(v.dtype)  # (a tensor that no backward reads: the global rows may overwrite it)
    if g:
        out[:, :, :g] = global_rows(q, k, v, real, g, scale, dropout_p)
    # (b, h, n, d): a view of (b, n, h, d) where the kernel gave that, so merging the heads is free
    return out, None


def _path(q: Tensor, dropout_p: float, grad: bool) -> str:
    """Which way the parts run (module docstring): "fused" (a CPU forward), "fused+backward" (a CPU call with
    gradients) or "explicit" (dropout, or off the CPU)."""
    if q.device.type != "cpu" or dropout_p > 0.0:
        return "explicit"
    return "fused+backward" if grad else "fused"


def _parts(
    q: Tensor, k: Tensor, v: Tensor, slot_k: Tensor, slot_v: Tensor, shared_ok: Tensor | None,
    key_ok: Tensor | None, w: int | None, g: int, scale: float, dropout_p: float, part: Part,
) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Part 1, then the band merged into it -> (out (b, h, n, d), lse (b, h, n)). With the fused part the merge
    is in place (no gradient runs through it); else the merged segments are joined."""
    keys, values = shared_keys(slot_k, slot_v, k, v, g)
    out, lse = part(q, keys, values, shared_ok, scale, dropout_p)  # (b, h, n, d), (b, h, n)
    if w is None:  # no band
        return out, lse
    b, h, n, d = q.shape
    flat_q, flat_k, flat_v, flat_out = (t.transpose(1, 2).reshape(b * n, h, d) for t in (q, k, v, out))
    flat_lse = lse.transpose(1, 2).reshape(b * n, h)
    flat_ok = None if key_ok is None else key_ok.reshape(b * n)
    in_place = part is _fused_part
    merged: list[tuple[Tensor, Tensor]] = []
    for segment in segments(b * n, SPLIT_BLOCK, w):
        keep = band_keep(segment, n, w, g, flat_ok, q.device)
        keys, values = flat_neighbourhoods(flat_k, segment), flat_neighbourhoods(flat_v, segment)
        near_out, near_lse = part(flat_blocks(flat_q, segment), keys, values, keep, scale, dropout_p)
        near_out = near_out.transpose(1, 2).reshape(-1, h, d)  # (blocks size, h, d)
        near_lse = near_lse.transpose(1, 2).reshape(-1, h)
        rows = slice(segment.start, segment.stop)
        merged.append(_merge(flat_out[rows], flat_lse[rows], near_out, near_lse, in_place=in_place))
    if not in_place and merged:  # (none: an empty batch)
        flat_out, flat_lse = torch.cat([o for o, _ in merged]), torch.cat([s for _, s in merged])
    return flat_out.view(b, n, h, d).transpose(1, 2), flat_lse.view(b, n, h).transpose(1, 2)


def _merge(
    out_1: Tensor, lse_1: Tensor, out_2: Tensor, lse_2: Tensor, *, in_place: bool = False
) -> tuple[Tensor, Tensor]:
    """Two partial softmax outputs (..., L, d) over disjoint key sets, with their log-sum-exps (..., L), -> the
    softmax over both and its lse: out_1 + t (out_2 - out_1) with t = e_2 / (e_1 + e_2), in the wider dtype of
    out_1 and the lse (`in_place`: written into out_1 and lse_1). A row with no key in either part -> 0
    (each part's out is 0 there), lse -inf."""
    top = torch.maximum(lse_1, lse_2).detach()  # a shift, as in `_explicit_part`
    top = torch.where(top.isfinite(), top, 0.0)
    share_1, share_2 = (lse_1 - top).exp(), (lse_2 - top).exp()  # exp(-inf) = 0 for an empty part
    total = share_1 + share_2
    some = total > 0
    t = (share_2 / torch.where(some, total, 1.0))[..., None]
    lse = torch.where(some, top + torch.where(some, total, 1.0).log(), float("-inf"))
    if in_place and out_1.dtype == t.dtype:
        return out_1.lerp_(out_2, t), lse_1.copy_(lse)
    if in_place:  # half precision: merged in the lse's dtype, then written back (one rounding, as before)
        return out_1.copy_(torch.lerp(out_1.to(t.dtype), out_2.to(t.dtype), t)), lse_1.copy_(lse)
    dtype = torch.promote_types(out_1.dtype, t.dtype)
    return torch.lerp(out_1.to(dtype), out_2.to(dtype), t.to(dtype)), lse


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


def _additive(keep: Tensor | None, dtype: torch.dtype) -> Tensor | None:
    """The kernel's mask: 0 where `keep`, -inf elsewhere, in q's dtype (one pass over keep)."""
    return (
        None
        if keep is None
        else torch.where(keep, torch.zeros((), dtype=dtype, device=keep.device), float("-inf"))
    )


def _fused_part(
    q: Tensor, k: Tensor, v: Tensor, keep: Tensor | None, scale: float, dropout_p: float
) -> tuple[Tensor, Tensor]:
    """`_explicit_part` through PyTorch's fused CPU flash kernel (4-d q, k, v; any strides, last one 1):
    out in q's dtype, lse in fp32 or wider. No gradient (`FusedWindow` gives one), no dropout (callers check)."""
    out, lse = _FLASH(q, k, v, 0.0, False, attn_mask=_additive(keep, q.dtype), scale=scale)
    if keep is not None:  # the kernel gives a row with no key lse 0 (and out 0): make it -inf
        lse = lse.masked_fill(~keep.any(dim=-1), float("-inf"))
    return out, lse


class FusedWindow(torch.autograd.Function):
    """The fused parts with gradients (module docstring): q, k, v (b, h, n, d), the slots (b, h, s, d), part 1's
    mask, the band's key_ok (b, n) (None: every key) and w (None: no band) -> (out, and for the backward alone
    the merged out and lse). `out` is a tensor of its own: the caller may overwrite its global rows. The masks
    are saved as tensors, so a caller that changes one in place before the backward gets an error, not other
    gradients. First derivatives only (`once_differentiable`: the reference, backend "eager", has more)."""

    @staticmethod
    def forward(q, k, v, slot_k, slot_v, shared_ok, key_ok, w, g, scale):
        out, lse = _parts(q, k, v, slot_k, slot_v, shared_ok, key_ok, w, g, scale, 0.0, _fused_part)
        return out.clone(), out, lse

    @staticmethod
    def setup_context(ctx, inputs, output):  # (this form is what torch.func's transforms take)
        q, k, v, slot_k, slot_v, shared_ok, key_ok, w, g, scale = inputs
        _, out, lse = output
        ctx.save_for_backward(q, k, v, slot_k, slot_v, out, lse, shared_ok, key_ok)
        ctx.w, ctx.g, ctx.scale = w, g, scale
        ctx.mark_non_differentiable(out, lse)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad, _out, _lse):
        q, k, v, slot_k, slot_v, out, lse, shared_ok, key_ok = ctx.saved_tensors
        w, g, scale, (b, h, n, d) = ctx.w, ctx.g, ctx.scale, q.shape
        grad = grad.to(q.dtype)
        lse = lse.masked_fill(lse == float("-inf"), float("inf"))  # a row with no key: no weight anywhere
        keys, values = shared_keys(slot_k, slot_v, k, v, g)
        mask = _additive(shared_ok, q.dtype)
        dq, dkeys, dvalues = _FLASH_BACKWARD(
            grad, q, keys, values, out, lse, 0.0, False, attn_mask=mask, scale=scale
        )
        dk, dv = torch.zeros_like(k), torch.zeros_like(v)
        if w is not None:
            flat = [t.transpose(1, 2).reshape(b * n, h, d) for t in (grad, q, k, v, out)]
            flat_dq, flat_dk, flat_dv = (t.transpose(1, 2).reshape(b * n, h, d) for t in (dq, dk, dv))
            flat_lse = lse.transpose(1, 2).reshape(b * n, h)
            _band_backward(flat, flat_lse, flat_dq, flat_dk, flat_dv, key_ok, w, n, g, scale)
            dq, dk, dv = (t.view(b, n, h, d).transpose(1, 2) for t in (flat_dq, flat_dk, flat_dv))
        s = slot_k.shape[-2]
        dk[:, :, :g] += dkeys[:, :, s:]
        dv[:, :, :g] += dvalues[:, :, s:]
        return dq, dk, dv, dkeys[:, :, :s], dvalues[:, :, :s], None, None, None, None, None


def _band_backward(
    flat: list[Tensor], flat_lse: Tensor, dq: Tensor, dk: Tensor, dv: Tensor, key_ok: Tensor | None, w: int,
    n: int, g: int, scale: float,
) -> None:  # fmt: skip
    """The band's share of dq, dk, dv (b n, h, d), added in place: each segment's kernel backward against the
    merged out and lse, its neighbourhoods' key gradients summed where they overlap."""
    grad, q, k, v, out = flat
    h, d = q.shape[1:]
    flat_ok = None if key_ok is None else key_ok.reshape(-1)
    for s in segments(q.shape[0], SPLIT_BLOCK, w):
        mask = _additive(band_keep(s, n, w, g, flat_ok, q.device), q.dtype)
        lse = flat_lse[s.start : s.stop].view(s.blocks, s.size, h).transpose(1, 2)
        dq_s, dk_s, dv_s = _FLASH_BACKWARD(
            flat_blocks(grad, s), flat_blocks(q, s), flat_neighbourhoods(k, s), flat_neighbourhoods(v, s),
            flat_blocks(out, s), lse, 0.0, False, attn_mask=mask, scale=scale,
        )  # fmt: skip
        dq[s.start : s.stop] += dq_s.transpose(1, 2).reshape(-1, h, d)
        key = neighbourhood_keys(s, q.device).reshape(-1)  # each neighbourhood's flat keys
        dk.index_add_(0, key, dk_s.transpose(1, 2).reshape(-1, h, d))
        dv.index_add_(0, key, dv_s.transpose(1, 2).reshape(-1, h, d))


__all__ = ["SPLIT_BLOCK", "FusedWindow", "split_local_attention"]
