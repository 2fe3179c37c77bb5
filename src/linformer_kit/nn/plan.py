"""One plan a forward: the mask state and which rows take which path, decided once, before any layer runs.

A forward of a model with exact_length = T (nn/exact_rows.py) asks two questions of its padding mask, (b, n)
True = real token: is every token real (then no layer needs the mask: `without_full_mask`), and which rows hold
more than T real tokens (those take the projected path in each layer, the long adapters' update, and the long
stack: nn/long_layers.py). Asked by each reader, that was a host read a layer on a CPU and, on a GPU, both
stacks on every row. Asked once, as Hugging Face's models build their masks once a forward
(`causal_mask_mapping`) and torchtitan its block mask once a batch, the layers take the answer:

    Plan(mask, route)   mask (b, n) or None (every token real); route: nn/exact_rows.py `Route` for T, or None
                        (no T, or torch.export, where each reader refuses with its own message)

`plan(mask, n, limit, read)` makes one. With `read` (the model in eager mode, on any device) it reads the mask
on the host once: one (2 b,) bool transfer, each row's "every token real" and "more than T real tokens" (on a
GPU the one sync Hugging Face's BERT also pays, for `mask.all()` before SDPA). The rows of a mix are then known
on the host, and each path runs on its own rows (`apart`): the long stack on the long rows only, the exact
path on the short rows only, half the work of running both and selecting. The row indices are an argsort of
the flags on the device, cut at the count read on the host: no second read. Without `read` (while tracing:
torch.compile keeps no branch on a value; a bare layer off the CPU; torch.export, refused where T splits) nothing is read and a mix is selected by
row (`by_rows`'s select). A bare layer plans for itself with `read` on a CPU in eager mode only
(`reads_on_host`): a layer alone reads no value off the CPU.

A part of a mix read on the host is a batch of its own (`Plan.part`): its rows, its mask (None where each of
its rows is unpadded), a route of one path.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

from linformer_kit.nn.exact_rows import Route, reads_on_host, tracing


class Plan(NamedTuple):
    """What a forward decided once (module docstring). `unpadded`, for a mix read on the host: whether each
    path's rows (short, then long: `route.rows`) are all unpadded, so a part needs no mask."""

    mask: Tensor | None
    route: Route | None
    unpadded: tuple[bool, bool] | None = None

    def part(self, long: bool) -> Plan:
        """The plan of the rows a mix read on the host sends one way, as a batch of their own."""
        assert self.unpadded is not None  # (a mix read on the host)
        assert self.route is not None
        assert self.route.rows is not None
        mask = None if self.unpadded[long] or self.mask is None else self.mask[self.route.rows[long]]
        return Plan(mask, Route(long, False, self.route.limit))


def plan(mask: Tensor | None, n: int, limit: int | None, read: bool) -> Plan:
    """The plan of a forward over a (b, n) batch with padding `mask` (True = real token, or None) and
    exact_length `limit` (None: none); `read`: whether the mask may be read on the host, once (module
    docstring)."""
    if torch.compiler.is_exporting() and limit is not None:
        return Plan(mask, None)  # no value may choose a path: each reader refuses, naming its own way out
    if mask is None:
        return Plan(None, None if limit is None else Route(bool(n > limit), False, limit))
    # (b,) which rows are longer than limit, where rows are to be told apart by length (n > limit)
    longer = mask.sum(-1) > limit if limit is not None and n > limit else None
    if not read:
        return Plan(mask, None if limit is None else Route(False if longer is None else longer, False, limit))
    # the one host read: each row's "every token real", and with a split its "longer than limit": (b or 2b,)
    flags = read_on_host(mask.all(-1) if longer is None else torch.cat([mask.all(-1), longer]))
    b = mask.shape[0]
    full, long = flags[:b], flags[b:]
    kept = None if all(full) else mask
    if limit is None or longer is None or all(long) or not any(long):
        return Plan(kept, None if limit is None else Route(any(long), False, limit))  # one path, every row
    order = torch.argsort(longer.to(torch.uint8), stable=True)  # (b,) the short rows first, in order
    count = long.count(False)
    rows = (order[:count], order[count:])  # short, long: no second read (`nonzero` would be one)
    unpadded = tuple(
        all(f for f, is_long in zip(full, long, strict=True) if is_long == side) for side in (False, True)
    )
    return Plan(kept, Route(longer, True, limit, rows), unpadded)  # type: ignore[arg-type]


def read_on_host(flags: Tensor) -> list[bool]:
    """A bool tensor's values on the host: the plan's one read (on a GPU a device-to-host copy, one sync)."""
    return [bool(f) for f in flags.cpu().tolist()]


def layer_plan(mask: Tensor | None, n: int, limit: int | None) -> Plan:
    """A bare layer's own plan: it reads the mask on a CPU in eager mode only (`reads_on_host`)."""
    return plan(mask, n, limit, read=mask is not None and reads_on_host(mask))


def model_plan(mask: Tensor | None, n: int, limit: int | None) -> Plan:
    """A model's plan, once a forward: it reads the mask once in eager mode on any device, never while
    tracing."""
    return plan(mask, n, limit, read=not tracing())
