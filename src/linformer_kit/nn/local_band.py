"""The split core's band (nn/local.py, `split_local_attention`, part 2): every query against the keys within w
of it, read from K and V where they lie, no key copied.

Notation of nn/local.py. The batch is read flat: token f = r n + p (row r, position p), and q, k, v as
(b n, h, d), views of the linears' (b, n, h, d) output. Queries go in blocks of B; block c reads the B + 2w keys
[cB - w, cB + B + w) (its neighbourhood), of which query f may read key f' when

    row(f) = row(f')  and  |p - p'| <= w  and  p' >= g  and  key_ok(f')                         (`band_keep`)

(`near`; the global keys j < g are part 1's; key_ok: real, in a row that takes the window, `window_key_mask`).
The blocks whose neighbourhood lies inside [0, b n) start B keys apart, so one `unfold` view of the flat K
holds all of theirs (the lattice, one kernel call); the queries before them (the head) and after them (the
tail) read one slice of K each: at most three calls (`segments`). A neighbourhood that reaches into the next
row holds keys the mask drops, so no row is padded and nothing is copied (until 2026-11-29 the split core
copied K and V into a zero-padded buffer each layer, and its band's output back into the token order: the A/B
of docs/benchmarks/split-band/README.md, "The split core's band read in place").

Per block the work is B (B + 2w) scores, as before; the head and the tail are at most w + B queries each.
The positions' part of the mask depends on (b, n, B, w, g) only, and is built once and kept (`_positions`);
a call with padding or rows without a window ANDs its keys' `key_ok` in. Torch-only.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import torch
from torch import Tensor

from linformer_kit.nn.exact_rows import uncached
from linformer_kit.nn.keys import near, past_globals


class Segment(NamedTuple):
    """Queries [start, stop) of the flat batch in `blocks` blocks of `size`, block i reading the `keys` keys from
    flat row first_key + i size: one kernel call."""

    start: int
    stop: int
    blocks: int
    size: int
    first_key: int
    keys: int


def segments(total: int, block: int, w: int) -> list[Segment]:
    """The head, the lattice and the tail of `total` flat queries (module docstring); one segment, every query
    against every key, where no block's neighbourhood fits inside [0, total); none for an empty batch."""
    if total == 0:
        return []
    first = -(-w // block)  # c0: the first block whose neighbourhood starts at or after key 0
    last = (total - w) // block - 1  # c1: the last whose neighbourhood ends at or before key total
    if last < first:
        return [Segment(0, total, 1, total, 0, total)]
    start, stop = first * block, (last + 1) * block
    head = [Segment(0, start, 1, start, 0, min(total, start + w))] if start > 0 else []  # (none at w = 0)
    tail = [Segment(stop, total, 1, total - stop, stop - w, total - stop + w)] if stop < total else []
    return [*head, Segment(start, stop, last - first + 1, block, start - w, block + 2 * w), *tail]


def flat_neighbourhoods(t: Tensor, segment: Segment) -> Tensor:
    """Flat keys t (b n, h, d) -> (blocks, h, keys, d): each block's keys, a strided view of t."""
    return _windows(t, segment).permute(0, 1, 3, 2)


def neighbourhood_keys(segment: Segment, device: torch.device | str) -> Tensor:
    """(blocks, keys): the flat position of each block's keys, what `flat_neighbourhoods` reads."""
    s = segment
    first = s.first_key + torch.arange(s.blocks, device=device)[:, None] * s.size
    return first + torch.arange(s.keys, device=device)


def _windows(t: Tensor, segment: Segment) -> Tensor:
    """Flat t (b n, ...) -> (blocks, ..., keys): each block's keys along a last axis, a strided view of t."""
    s = segment
    return t[s.first_key : s.first_key + (s.blocks - 1) * s.size + s.keys].unfold(0, s.keys, s.size)


def flat_blocks(t: Tensor, segment: Segment) -> Tensor:
    """Flat queries t (b n, h, d) -> (blocks, h, size, d), a view."""
    return t[segment.start : segment.stop].view(segment.blocks, segment.size, *t.shape[1:]).transpose(1, 2)


def band_keep(
    segment: Segment, n: int, w: int, g: int, key_ok: Tensor | None, device: torch.device
) -> Tensor:
    """(blocks, 1, size, keys) bool, the module docstring's `keep` of the segment's queries and keys; key_ok
    (b n,) flat or None (every key may be read)."""
    keep = (
        _build_positions(segment, n, w, g, device)
        if uncached()
        else _positions(segment, n, w, g, str(device))
    )
    if key_ok is None:
        return keep
    return keep & _windows(key_ok, segment)[:, None, None, :]


@functools.lru_cache(maxsize=8)  # (a shape holds at most three segments; an entry is b n (B + 2w) bools)
def _positions(segment: Segment, n: int, w: int, g: int, device: str) -> Tensor:
    """`_build_positions`, kept. Built outside inference mode, as nn/local_flex.py's block masks are: a mask
    first built under `torch.inference_mode()` would hold an inference tensor that a later forward with
    gradients cannot save (the explicit part's masked_fill). Never filled while tracing (`uncached`)."""
    with torch.inference_mode(False), torch.no_grad():
        return _build_positions(segment, n, w, g, torch.device(device))


def _build_positions(segment: Segment, n: int, w: int, g: int, device: torch.device) -> Tensor:
    """The positions' part of `band_keep`: same row, `near`, not a global key -> (blocks, 1, size, keys)."""
    s = segment
    query = torch.arange(s.start, s.stop, device=device).view(s.blocks, s.size, 1)
    key = neighbourhood_keys(s, device)[:, None, :]  # (blocks, 1, keys)
    same_row = torch.div(query, n, rounding_mode="floor") == torch.div(key, n, rounding_mode="floor")
    i, j = query % n, key % n
    return (same_row & near(i, j, w) & past_globals(j, g))[:, None]


__all__ = ["Segment", "band_keep", "flat_blocks", "flat_neighbourhoods", "neighbourhood_keys", "segments"]
