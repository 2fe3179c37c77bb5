"""The keys a window core reads (`KeySet`), and the pieces every window core shares.

Notation of nn/local.py: w the window, g the global tokens, s the k projected slots, m the padding mask
(True = real token). Query i >= g of a windowed row reads

    [ E K (s slots, those `Slots.keep` keeps) ; K_j, j < g ; K_j, j >= g and |i - j| <= w ]   (real j only)

and query i < g every real key (`global_rows`). Each core renders that one rule in its own form: scores
written out by query blocks (nn/local_blocks.py), two partial softmaxes or the dense reference (nn/local.py),
a FlexAttention block mask (nn/local_flex.py). The pieces here are what they all read, so each core
module imports this one and none imports another core's module for them. Torch-only.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

import torch
from torch import Tensor
from torch.nn import functional as F

from linformer_kit.nn.backends import eager_attention, fill_empty_rows, real_or_all


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


def real_tokens(real: Tensor | None, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """The padding mask (b, n) (all True for None), and K, V with pad rows zero by a select: NaN or inf
    there would survive a zero weight."""
    b, _, n, _ = k.shape
    real = real_or_all(real, b, n, k.device)
    pad = ~real[:, None, :, None]
    return real, k.masked_fill(pad, 0.0), v.masked_fill(pad, 0.0)


def backward_reaches(*tensors: Tensor) -> bool:
    """Whether autograd will run a backward through any of `tensors`: grad mode on and one requires grad."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


def window_sizes(keyset: KeySet, n: int) -> tuple[int, int]:
    """(w, g) at most n (w = 0 without a window); a symbolic n keeps them as given."""
    w = 0 if keyset.window is None else keyset.window
    return (min(w, n), min(keyset.global_tokens, n)) if isinstance(n, int) else (w, keyset.global_tokens)


def window_key_mask(real: Tensor, windowed: Tensor | None) -> Tensor:
    """(b, n) bool: which tokens a window or the global keys may hold: real, in a row that takes the window."""
    return real if windowed is None else real & windowed[:, None]


def global_rows(
    q: Tensor, k: Tensor, v: Tensor, real: Tensor, g: int, scale: float, dropout_p: float
) -> Tensor:
    """Exact attention of the g global queries over every real key -> (b, h, g, d). O(g n)."""
    return eager_attention(
        q[:, :, :g], k, v, fill_empty_rows(real)[:, None, None, :], scale=scale, dropout_p=dropout_p
    )[0]


def shared_key_mask(slots: Slots, key_ok: Tensor, b: int, g: int, padded: bool) -> Tensor | None:
    """The split and native cores' shared-key mask (b, 1|h, 1, s + g): the slots' `keep` beside the global
    keys' key_ok; None: every key."""
    keep = slots.keep
    if not g or (keep is None and not padded and slots.windowed is None):
        return keep
    s = slots.keys.shape[-2]
    slot_ok = torch.ones(b, 1, 1, s, dtype=torch.bool, device=key_ok.device)
    slot_ok = slot_ok if keep is None else keep.expand(b, -1, -1, -1)  # (a slot mask may broadcast)
    global_ok = key_ok[:, None, None, :g].expand(b, slot_ok.shape[1], 1, g)
    return torch.cat([slot_ok, global_ok], dim=-1)


class WindowInputs(NamedTuple):
    """What the split and native cores read of a call: K and V with pad rows zero, the padding mask, w and g
    (at most n), the shared keys' mask (`shared_key_mask`) and the band's key_ok (None: every key)."""

    k: Tensor
    v: Tensor
    real: Tensor
    w: int
    g: int
    shared_ok: Tensor | None
    key_ok: Tensor | None


def window_inputs(q: Tensor, k: Tensor, v: Tensor, keyset: KeySet) -> WindowInputs:
    """The masks the split and native cores read (nn/local_split.py) for q, k, v (b, h, n, d) and `keyset`."""
    b, n = q.shape[0], q.shape[2]
    slots = keyset.slots
    if keyset.real is None:  # nothing to zero: skip `real_tokens`' copies of K and V
        real = real_or_all(None, b, n, q.device)
    else:
        real, k, v = real_tokens(keyset.real, k, v)
    w, g = window_sizes(keyset, n)
    key_ok = window_key_mask(real, slots.windowed)  # which keys a window or global may hold
    shared_ok = shared_key_mask(slots, key_ok, b, g, keyset.real is not None)
    every_key = keyset.real is None and slots.windowed is None  # no key_ok to AND into the band's mask
    return WindowInputs(k, v, real, w, g, shared_ok, None if every_key else key_ok)


def shared_keys(slot_k: Tensor, slot_v: Tensor, k: Tensor, v: Tensor, g: int) -> tuple[Tensor, Tensor]:
    """The shared keys and values (b, h, s + g, d): [slots ; the g global tokens' K, V]."""
    if not g:
        return slot_k, slot_v
    return torch.cat([slot_k, k[:, :, :g]], dim=-2), torch.cat([slot_v, v[:, :, :g]], dim=-2)


def near(i: Tensor, j: Tensor, w: int | None) -> Tensor:
    """The window's predicate, the one place it is written: key position j is within w of query position i
    (bool, broadcast; none without a window). Each core renders it in its own form: `window_or_global` for
    the reference's (n x n) mask and the flex core's block mask, `band_mask` for the block cores."""
    return (i - j).abs() <= w if w is not None else torch.zeros_like(i - j, dtype=torch.bool)


def past_globals(j: Tensor, g: int) -> Tensor:
    """Whether key position j may be a window (band) key: past the g global tokens. The one place the rule is
    written: a global key j < g is read as a shared key, never also as a window key, so no key counts twice
    (the native kernel's C++ renders it as its band's first key j0, csrc/local_window.cpp)."""
    return j >= g


def window_or_global(i: Tensor, j: Tensor, w: int | None, g: int) -> Tensor:
    """Whether token key j is among what query i >= g reads besides the slots: within the window, or one of the
    first g tokens (a global key, never also a window key: `past_globals`). Real keys only: the caller's."""
    return near(i, j, w) | (j < g)


def band_mask(block: int, w: int, device: torch.device) -> Tensor:
    """(B, B + 2w) bool: which keys of a block's neighbourhood (`neighbourhoods`) query r of the block may read:
    `near`, with key c of the neighbourhood token j = i - r + c - w for query i = cB + r (so i - j = r + w - c).
    The block cores take the global keys j < g apart, and drop them from the band (`past_globals`)."""
    row = torch.arange(block, device=device)[:, None]  # query r of a block ...
    col = torch.arange(block + 2 * w, device=device)[None, :]  # ... and key c of its neighbourhood
    return near(row + w, col, w)


def neighbourhoods(blocks: Tensor, w: int) -> Tensor:
    """(..., nb, B, c) -> (..., nb, B + 2w, c): each block with the last w rows of the block before it
    and the first w rows of the block after it (zeros past either end). Needs w <= B."""
    if w == 0:
        return blocks
    before = F.pad(blocks[..., :-1, -w:, :], (0, 0, 0, 0, 1, 0))  # block c - 1's tail; zeros before block 0
    after = F.pad(blocks[..., 1:, :w, :], (0, 0, 0, 0, 0, 1))  # block c + 1's head; zeros after the last
    return torch.cat([before, blocks, after], dim=-2)
