"""The window core as one FlexAttention kernel: nn/local.py's attention in one `flex_attention` call.

Notation of nn/local.py (w window, g global tokens, s slots, m the padding mask); Bq x Bk the block mask's
query and key blocks (`FLEX_BLOCK`). Keys and values are laid out as

    keys = [ E K (s slots) ; 0 (s' - s) ; K (n) ]      s' = s rounded up to whole key blocks

so token j is key column c = s' + j and the band |i - j| <= w stays aligned to the key blocks. What query
i may read is split in two, so that one block mask serves every layer with the same (n, s, w, g):

    structure (the `BlockMask`'s mask_mod)   c < s  or  ( c >= s'  and  ( |i - (c - s')| <= w  or  c - s' < g ) )
    values    (the score_mod, -inf where not) slot c kept (the slot mask, per row and head); token c - s'
                                              real and in a row that takes the window (`windowed`)

The structure depends on ints only: it is built once per (n, s, w, g, device) and reused by every layer
and every call (`window_block_mask`, a small cache; while tracing it is built inside the graph). The
values are applied to every score the kernel computes (a full block skips the mask_mod, never the
score_mod), so a padded batch reads no pad key; without padding, slot mask or `windowed` there is no
score_mod at all. The g global query rows (i < g) attend to every real key: one `eager_attention` call
over g rows, as in the other cores.

Keys a query block reads, against the 2w + 1 + g + s it needs: ceil(s / Bk) slot blocks, the key block
of the global tokens (when outside the band), and the ceil((Bq + 2w) / Bk) (+ 1 unaligned) blocks of the
band. At Bq = 128, Bk = 64, s = 128, w = 64, g = 1: 2 + 1 + 4 = 7 blocks = 448 keys for 258 (a 512-token
chunk reads 512); Bk = 128: 1 + 1 + 3 = 5 blocks = 640. Blocks off the band are never computed.

`flex_attention` is fused only when compiled: outside a compiled region the core calls a module-level
`torch.compile(flex_attention)` (Triton on CUDA, an inductor C++ kernel on a CPU); `compiled=False`
runs PyTorch's unfused reference (every score written out, as `dense_local_attention`), the path the
tests check on a machine without a compiler. Limits, each refused by name: no attention dropout; no
backward on a CPU (PyTorch's flex has none there); not inside a model compiled whole on a CPU (PyTorch
2.13's CPU flex kernel takes no block mask built in the graph: the core compiles its own kernel there);
torch >= 2.5 (`flex_available`). Equality to
`dense_local_attention`, values (CPU, eager and compiled) and gradients (CUDA): tests/nn/test_local_flex.py.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor

from linformer_kit.nn.backends import real_or_all
from linformer_kit.nn.exact_rows import tracing, uncached
from linformer_kit.nn.keys import (
    KeySet,
    backward_reaches,
    global_rows,
    real_tokens,
    window_key_mask,
    window_or_global,
    window_sizes,
)

FLEX_BLOCK = (128, 64)  # (Bq, Bk): query rows and keys per block of the block mask (module docstring)


def flex_available() -> bool:
    """Whether this torch has FlexAttention (torch >= 2.5)."""
    try:
        from torch.nn.attention import flex_attention  # noqa: F401
    except ImportError:
        return False
    return True


def flex_window_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    keyset: KeySet,
    *,
    scale: float,
    dropout_p: float = 0.0,
    compiled: bool = True,
) -> tuple[Tensor, None]:
    """nn/local.py's attention in one `flex_attention` call (module docstring) -> (out (b, h, n, d), None).

    q, k, v (b, h, n, d); `keyset` the slots, padding mask, w and g. Needs a concrete n.
    """
    _check_flex(dropout_p, q, k, v, keyset.slots.keys, keyset.slots.values)
    from torch.nn.attention.flex_attention import flex_attention

    b, h, n, d = q.shape
    slots = keyset.slots
    real = keyset.real
    if real is not None:
        real, k, v = real_tokens(real, k, v)  # pad keys zeroed: NaN there would survive a zero weight
    w, g = window_sizes(keyset, n)
    s = slots.keys.shape[-2]
    offset = slot_columns(s, FLEX_BLOCK)  # s'
    gap = q.new_zeros(b, h, offset - s, d)
    keys = torch.cat([slots.keys.to(q.dtype), gap, k], dim=-2)  # (b, h, s' + n, d)
    values = torch.cat([slots.values.to(q.dtype), gap, v], dim=-2)
    window = None if keyset.window is None else w
    block_mask = window_block_mask(n, s, window, g, q.device)
    token_ok = (
        None
        if real is None and slots.windowed is None
        else window_key_mask(real_or_all(real, q.shape[0], q.shape[2], q.device), slots.windowed)
    )
    score_mod = _value_mask(slots.keep, token_ok, s, offset, n)
    attend: Callable[..., Tensor] = (
        flex_attention if tracing() or not compiled else _compiled_flex(q.device.type)  # type: ignore[assignment]
    )
    # Triton's default forward tile for some head dims reads 128 keys at once, more than a key block: capped
    # (a block mask's key block must hold whole tiles)
    options = {"fwd_BLOCK_N": FLEX_BLOCK[1]} if q.device.type == "cuda" else None
    out = attend(
        q.contiguous(),
        keys,
        values,
        score_mod=score_mod,
        block_mask=block_mask,
        scale=scale,
        kernel_options=options,
    )
    assert isinstance(out, Tensor)  # (no lse asked for)
    if g:
        top = global_rows(
            q, k, v, real_or_all(real, q.shape[0], q.shape[2], q.device), g, scale, 0.0
        )  # (b, h, g, d)
        out = torch.cat([top.to(out.dtype), out[:, :, g:]], dim=2)
    return out, None


def slot_columns(s: int, block: tuple[int, int]) -> int:
    """s' = s rounded up to whole key blocks: the key column of token 0 (module docstring). The block mask and
    the score_mod both place the tokens there, so both take it from here."""
    return -(-s // block[1]) * block[1]


def window_block_mask(n: int, s: int, w: int | None, g: int, device: torch.device):  # -> BlockMask
    """The structure of the module docstring as a `BlockMask` over n queries and s' + n keys, cached by every
    value that shapes it, (n, s, w, g, FLEX_BLOCK, device), in eager mode; while tracing, built in the graph
    (no Python cache there)."""
    if uncached():
        return _structure_mask(n, s, w, g, device)
    return _cached_block_mask(n, s, w, g, FLEX_BLOCK, str(device))


@functools.lru_cache(maxsize=32)
def _cached_block_mask(
    n: int, s: int, w: int | None, g: int, block: tuple[int, int], device: str
):  # -> BlockMask
    """Built outside inference mode whatever the caller's mode: FlexAttention saves the block mask for
    backward, and a mask first built under `torch.inference_mode()` (sentence-transformers' `encode`,
    `longdocs`) would hold inference tensors, which a later training forward at the same n cannot save."""
    with torch.inference_mode(False), torch.no_grad():
        return _structure_mask(n, s, w, g, torch.device(device), block)


def _structure_mask(
    n: int, s: int, w: int | None, g: int, device: torch.device, block: tuple[int, int] | None = None
):  # -> BlockMask
    from torch.nn.attention.flex_attention import create_block_mask

    block = block or FLEX_BLOCK
    offset = slot_columns(s, block)  # s'

    def structure(b: Tensor, h: Tensor, i: Tensor, c: Tensor) -> Tensor:
        j = c - offset  # the token of key column c (negative in the slot region)
        token = (j >= 0) & window_or_global(i, j, w, g)
        return (c < s) | token

    # compiled where it runs on a GPU (no (n x (s' + n)) bool mask written out); on a CPU the eager
    # build is a few ms and needs no compiler
    compile_build = device.type == "cuda" and not tracing()
    return create_block_mask(
        structure, None, None, n, offset + n, device=device, BLOCK_SIZE=block, _compile=compile_build
    )


def _value_mask(
    keep: Tensor | None, token_ok: Tensor | None, s: int, offset: int, n: int
) -> Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor] | None:
    """The score_mod of the module docstring: -inf on a dropped slot and on a token the row may not read;
    None when nothing is dropped. keep (b, 1|h, 1, s), token_ok (b, n)."""
    if keep is None and token_ok is None:
        return None
    slot_ok = None if keep is None else keep[:, :, 0, :]  # (b, 1|h, s)
    per_head = slot_ok is not None and slot_ok.shape[1] > 1

    def value_mask(score: Tensor, b: Tensor, h: Tensor, i: Tensor, c: Tensor) -> Tensor:
        slot = c < offset  # (the gap between s and s' is the block mask's to drop)
        ok_slot = slot if slot_ok is None else slot_ok[b, h if per_head else 0, c.clamp(max=s - 1)]
        ok_token = ~slot if token_ok is None else token_ok[b, (c - offset).clamp(0, n - 1)]
        return torch.where(torch.where(slot, ok_slot, ok_token), score, float("-inf"))

    return value_mask


@functools.cache
def _compiled_flex(device_type: str) -> Callable[..., Tensor]:
    """`flex_attention` compiled once for the process and device type (its kernels are generated per shape and
    mask). A length seen second makes CUDA's kernel dynamic in n (one kernel for every length); on a CPU each
    length gets its own kernel: PyTorch 2.13's CPU flex template fails to compile with a dynamic length."""
    from torch.nn.attention.flex_attention import flex_attention

    return torch.compile(flex_attention, dynamic=False if device_type == "cpu" else None)


def _check_flex(dropout_p: float, q: Tensor, *others: Tensor) -> None:
    """The limits of the module docstring, named before any work: q the queries, `others` every other input
    a backward would reach."""
    if not flex_available():
        raise ValueError(
            f"backend 'flex' needs torch >= 2.5 (FlexAttention), this is torch {torch.__version__}"
        )
    if dropout_p > 0.0:
        raise ValueError(
            f"backend 'flex' has no attention dropout, got dropout_p={dropout_p}: use backend 'auto' in training"
        )
    if q.device.type == "cpu" and backward_reaches(q, *others):
        raise ValueError(
            "backend 'flex' has no backward on a CPU (PyTorch's FlexAttention): use backend 'auto' to train there"
        )
    if q.device.type == "cpu" and tracing():
        raise ValueError(
            "backend 'flex' inside a compiled model on a CPU: PyTorch's CPU flex kernel takes no block mask built "
            "in the graph; run the model uncompiled (the core compiles its own kernel) or with backend 'auto'"
        )
    if not isinstance(q.shape[-2], int):
        raise ValueError("backend 'flex' needs a concrete sequence length (not torch.export's symbolic one)")
