"""exact_length = T: a sequence of at most T real tokens takes exact softmax attention, a longer one is projected.

Why: up to some length the projection and the window cost more than the attention they replace. At n = 256
the k = 128 slots plus a ±64 window read 258 keys a query, full attention 256, and the projection of K and V
costs 2 n k D on top; at n = 512 the two are level (docs/benchmarks/student-cpu/). A student distilled from a
512-token original and extended past it (`linformer distill --long-length`) then runs every input the
original could read as the original does, at its speed, and projects only the longer ones. The same weights
serve both: with exact attention the distilled MiniLM student's weights keep 0.976 of the original's
embeddings at 512, as much as its projection does (docs/reproduction/long-minilm/).

The choice is per sequence, by its real length L, so padding never changes an output (the kit's padding
guarantee): a 300-token sentence padded into a batch with a 4 000-token one gets what it gets alone.

    n <= T                   the whole batch: exact attention (the layer's `attends_exactly`)
    n > T, no row L <= T     every row projected (a batch of long documents pays nothing for T)
    n > T, some rows L <= T  those rows exact, the others projected: run apart, written back by row

In eager mode the forward's plan reads the mask's values once (nn/plan.py: a host branch, each path runs on
its rows only; a bare layer reads on a CPU only). While tracing (torch.compile), and in a bare layer off the
CPU, nothing is read on the host, so a compiled model has no graph break and a layer no sync
(`_select_exact_rows`): every row takes the projected path, and
every row's first T real tokens (gathered, in order) take exact attention; a row of at most T real tokens
gets the exact result at its tokens by a select. That costs, a row, the K and V linears on its T gathered tokens
and exact attention over them on top of the projected path: 2 T D² + 2 T² D multiply-adds a layer (at
n = 4 096, T = 512, MiniLM's shape: about 4 % of a layer's). torch.export, which gives no value a branch, is
refused with a ValueError naming the way out (export the model with exact_length=None: rows past k are then
projected, as the paper's layer does). A torch.cond form was tried:
PyTorch 2.13's cond could not merge the symbolic strides of the window cores' outputs (a KeyError in
torch/_higher_order_ops/cond.py) nor trace the projection's slice of E without a guard on n.

Exact rows return no attention weights in a mixed batch (their (n x n) weights do not fit the projected
rows' (n x k) ones): `forward_with_weights` there raises, naming the case. Equality of every path to the
exact and the projected layer, by row, in float64, and the refused export: tests/nn/test_exact_rows.py.

The row rule has three readers: this layer's two paths, the long adapters (nn/long_adapters.py: the
projected rows' update of the output linear) and the long layers (nn/long_layers.py: which stack a row
reads). One router serves them: the plan (nn/plan.py) decides which rows have more than T real tokens, once a
forward (a `Route`), and `by_rows` sends each row through its path

    one path   no mask, n <= T, or a host read that found no mix: one path, every row
    apart      a mix read on the host: each path on its own rows, written back by row
    select     a mix not read there: both paths on every row (or the caller's cheaper form of the two, as
               `_select_exact_rows` above), a select by row
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

import torch
from torch import Tensor

# (query (b, h, n, d), x (b, n, D), mask (b, n) | None, need_weights) -> (out (b, h, n, d), weights | None)
Path = Callable[[Tensor, Tensor, Tensor | None, bool], tuple[Tensor, Tensor | None]]
Out = TypeVar("Out", Tensor, Tensor | None)
# rows (r,) int64 of the batch, or None for every row -> a path's outputs on those rows, each (r, ...)
Run = Callable[[Tensor | None], tuple[Out, ...]]


def tracing() -> bool:
    """Whether the layer is being traced (torch.compile, torch.export, torch.jit.trace): no branch on a
    tensor's value there (a trace would keep the branch of its example input)."""
    return torch.compiler.is_compiling() or torch.compiler.is_exporting() or torch.jit.is_tracing()


def uncached() -> bool:
    """Whether tensors made now must stay out of a Python cache: while tracing, or under a fake-tensor mode
    (shapes without values: a cache filled there would hand later real calls fake tensors)."""
    return tracing() or torch._guards.detect_fake_mode() is not None


def reads_on_host(mask: Tensor) -> bool:
    """Whether a bare layer may branch on the mask's values: on a CPU in eager mode only. On another device each
    read waits for it (a sync a layer), and a trace would keep its example input's branch. A model reads
    once a forward in eager mode on any device, for every layer (nn/plan.py)."""
    return mask.device.type == "cpu" and not tracing()


def exact_outright(n: int, k: int | None, short_inputs: str, exact_length: int | None) -> bool:
    """Whether an input of n tokens (padded length) takes exact softmax attention, the whole batch with no
    row read, in a layer of k slots: every n where k is None (full attention), n <= k with
    short_inputs="exact", n <= exact_length. The one definition of the layer's and the config's
    `attends_exactly`. A symbolic n (torch.export, dynamic torch.compile) never does outright: it takes the
    one-graph form of nn/short_inputs.py (exact attention row by row) or the router below."""
    if k is None:
        return True
    limit = max(k if short_inputs == "exact" else 0, exact_length or 0)
    return isinstance(n, int) and n <= limit


# --- the router: which rows take the long path, and how each gets there ----------------------------------


class Route(NamedTuple):
    """Which rows of a batch take the long path: those of more than `limit` real tokens (module docstring),
    decided once a forward (nn/plan.py).

    `longer` is a bool where every row takes one path, else (b,) bool: a mix read on the host (`apart`, with
    `rows`: the short rows' and the long rows' indices), or a batch not read there (apart False: whether it
    mixes is not known on the host).
    """

    longer: Tensor | bool
    apart: bool
    limit: int
    rows: tuple[Tensor, Tensor] | None = None


def by_rows(
    route: Route,
    short: Run[Out],
    long: Run[Out],
    select: Callable[[Tensor], tuple[Out, ...]] | None = None,
    apart: bool = True,
) -> tuple[Out, ...]:
    """Each row through its path of `route` (module docstring) -> the paths' outputs, (b, ...) each.

    `select(longer)`, where given, stands for "both paths on every row, then a select by row" in a cheaper
    form (`_select_exact_rows`). `apart=False` selects in a mix read on the host too: for a path cheap enough for
    every row and computed on the whole batch (the long adapters' update), so that no row's bits depend on
    the split. A ValueError for outputs whose shapes differ by path in a mix (attention weights: (n x n)
    where rows are read exactly, (n x k) where projected).
    """
    longer = route.longer
    if isinstance(longer, bool):  # one path
        return (long if longer else short)(None)
    if not (route.apart and apart):  # select: no host read, or none wanted
        if select is not None:
            return select(longer)
        return tuple(_picked(longer, a, b) for a, b in zip(short(None), long(None), strict=True))
    assert route.rows is not None  # (a mix read on the host: nn/plan.py)
    rows, others = route.rows  # apart
    return tuple(
        _written_back(a, b, rows, others, route) for a, b in zip(short(rows), long(others), strict=True)
    )


def _picked(longer: Tensor, a: Out, b: Out) -> Out:
    """b on the rows `longer` (b,) marks, a on the others -> (b, ...)."""
    if a is None or b is None:
        return a
    return torch.where(longer.view(-1, *[1] * (a.dim() - 1)), b, a)


def _written_back(a: Out, b: Out, rows: Tensor, others: Tensor, route: Route) -> Out:
    """a (r, ...) of `rows` and b (b - r, ...) of `others` -> one (b, ...) output in a's dtype."""
    if a is None or b is None:
        return a
    if a.shape[1:] != b.shape[1:]:
        raise ValueError(
            f"outputs of shape {tuple(a.shape[1:])} and {tuple(b.shape[1:])} by row (attention weights of a "
            f"batch mixing rows of at most exact_length={route.limit} real tokens with longer ones): run the "
            "two apart"
        )
    out = a.new_empty((len(rows) + len(others), *a.shape[1:]))
    out[rows], out[others] = a, b.to(a.dtype)
    return out


# --- the layer's two paths, by row -----------------------------------------------------------------------


def real_first(mask: Tensor, width: int) -> Tensor:
    """(b, width) positions: each row's real tokens (mask True) first, in order, pads sorted to the back stably; a
    row of at most `width` real tokens has all of them there (models/row_groups.py, models/token_groups.py too)."""
    return torch.argsort((~mask).to(torch.uint8), dim=1, stable=True)[:, :width]


def export_refusal(limit: int) -> str:
    """What torch.export of a layer with exact_length = `limit` is told: the choice of path reads values."""
    return (
        f"exact_length={limit} has no exported form (the choice of path reads the mask's values): export the "
        "model with exact_length=None (config.exact_length = None), whose rows past k are projected"
    )


def exact_up_to_length(
    exact: Path,
    projected: Path,
    route: Route,
    query: Tensor,
    x: Tensor,
    mask: Tensor | None,
    need_weights: bool,
) -> tuple[Tensor, Tensor | None]:
    """Rows of at most `route.limit` real tokens through `exact`, the others through `projected` (module
    docstring).

    `exact` and `projected` are the layer's two paths; query (b, h, n, d) Q, x (b, n, D) the layer input,
    mask (b, n) True = real token or None. Returns out (b, h, n, d) and the weights of an unmixed batch.
    """
    limit = route.limit
    if need_weights and not isinstance(route.longer, bool):
        if not route.apart:
            raise ValueError(
                f"attention weights with exact_length={limit} and a padding mask are read on a CPU in eager "
                "mode only (elsewhere the exact path is not chosen by row): run it there, or without the mask"
            )
        raise ValueError(
            f"attention weights of a batch mixing rows of at most exact_length={limit} real tokens (exact, "
            "(n x n) weights) with longer ones (projected): run the two apart"
        )

    def on_rows(path: Path) -> Run[Tensor | None]:
        def run(rows: Tensor | None) -> tuple[Tensor | None, ...]:
            if rows is None:
                return path(query, x, mask, need_weights)
            assert mask is not None  # (rows are chosen by a mask)
            return path(query[rows], x[rows], mask[rows], False)[0].to(query.dtype), None

        return run

    def select(longer: Tensor) -> tuple[Tensor | None, ...]:
        assert mask is not None  # (rows are chosen by a mask)
        return _select_exact_rows(exact, projected, query, x, mask, longer, limit), None

    out, weights = by_rows(route, on_rows(exact), on_rows(projected), select)
    assert out is not None
    return out, weights


def _select_exact_rows(
    exact: Path, projected: Path, query: Tensor, x: Tensor, mask: Tensor, longer: Tensor, limit: int
) -> Tensor:
    """`exact_up_to_length` without a host branch (module docstring) -> out (b, h, n, d)."""
    b, h, n, d = query.shape
    width = min(limit, n)
    # a row of at most `limit` real tokens has all of them among its first `width` columns
    order = real_first(mask, width)  # (b, width)
    heads = order[:, None, :, None].expand(b, h, width, d)
    first = exact(
        query.gather(2, heads),
        x.gather(1, order[..., None].expand(b, width, x.shape[-1])),
        mask.gather(1, order),
        False,
    )[0]  # (b, h, width, d): each row's first `width` real tokens, exact attention among them
    every_row = projected(query, x, mask, False)[0]  # (b, h, n, d): every row projected
    placed = every_row.scatter(2, heads, first.to(every_row.dtype))  # the first tokens' exact outputs
    return torch.where(longer[:, None, None, None], every_row, placed)
