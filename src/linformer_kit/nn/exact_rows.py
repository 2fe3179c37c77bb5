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

On a CPU in eager mode the choice reads the mask's values (a host branch: each path runs on its rows
only). While tracing (torch.compile) and on any other device it reads nothing on the host, so a compiled
model has no graph break and a GPU no sync (`_one_graph`): every row takes the projected path, and every
row's first T real tokens (gathered, in order) take exact attention; a row of at most T real tokens gets
the exact result at its tokens by a select. That costs, a row, the K and V linears on its T gathered tokens
and exact attention over them on top of the projected path: 2 T D² + 2 T² D multiply-adds a layer (at
n = 4 096, T = 512, MiniLM's shape: about 4 % of a layer's). torch.export, which gives no value a branch, is
refused with a ValueError naming the way out (export the model with exact_length=None: rows past k are then
projected, as the paper's layer does). A torch.cond form was tried:
PyTorch 2.13's cond could not merge the symbolic strides of the window cores' outputs (a KeyError in
torch/_higher_order_ops/cond.py) nor trace the projection's slice of E without a guard on n.

Exact rows return no attention weights in a mixed batch (their (n x n) weights do not fit the projected
rows' (n x k) ones): `forward_with_weights` there raises, naming the case. Equality of every path to the
exact and the projected layer, by row, in float64, and the refused export: tests/nn/test_exact_rows.py.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

# (query (b, h, n, d), x (b, n, D), mask (b, n) | None, need_weights) -> (out (b, h, n, d), weights | None)
Path = Callable[
    [torch.Tensor, torch.Tensor, torch.Tensor | None, bool], tuple[torch.Tensor, torch.Tensor | None]
]


def tracing() -> bool:
    """Whether the layer is being traced (torch.compile, torch.export, torch.jit.trace): no branch on a
    tensor's value there (a trace would keep the branch of its example input)."""
    return torch.compiler.is_compiling() or torch.compiler.is_exporting() or torch.jit.is_tracing()


def reads_on_host(mask: torch.Tensor) -> bool:
    """Whether a layer may branch on the mask's values: on a CPU in eager mode only. On another device each
    read waits for it (a sync a layer), and a trace would keep its example input's branch. The model reads
    once a forward elsewhere too, to drop a full mask (`without_full_mask`); a layer never does there."""
    return mask.device.type == "cpu" and not tracing()


def without_full_mask(mask: torch.Tensor | None) -> torch.Tensor | None:
    """None for a mask of real tokens only, in eager mode: the same output, and the layers skip the mask, the
    zeroing copies of K and V and the short-row gathers, and SDPA may take its flash kernel (which takes no
    mask). The one place the kit drops such a mask (the model once a forward, `LinformerModel`; a bare layer
    once a call on a CPU, `reads_on_host`). On a GPU `.all()` waits for the device once a forward, as Hugging
    Face's BERT does before SDPA; a layer there keeps the mask it is given. Kept
    while tracing (no branch on a value): a compiled model given no mask for an unpadded batch skips it."""
    if mask is None or tracing() or not bool(mask.all()):
        return mask
    return None


def exact_up_to_length(
    exact: Path,
    projected: Path,
    query: torch.Tensor,
    x: torch.Tensor,
    mask: torch.Tensor | None,
    limit: int,
    need_weights: bool,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Rows of at most `limit` real tokens through `exact`, the others through `projected` (module docstring).

    `exact` and `projected` are the layer's two paths; query (b, h, n, d) Q, x (b, n, D) the layer input,
    mask (b, n) True = real token or None. Returns out (b, h, n, d) and the weights of an unmixed batch.
    """
    if torch.compiler.is_exporting():
        raise ValueError(
            f"exact_length={limit} has no exported form (the choice of path reads the mask's values): export "
            "the model with exact_length=None (config.exact_length = None), whose rows past k are projected"
        )
    if mask is None:  # every row has n real tokens (n <= limit: a symbolic n, which `attends_exactly` leaves)
        return (exact if x.shape[1] <= limit else projected)(query, x, mask, need_weights)
    if not reads_on_host(mask):
        if need_weights:
            raise ValueError(
                f"attention weights with exact_length={limit} and a padding mask are read on a CPU in eager "
                "mode only (elsewhere the exact path is not chosen by row): run it there, or without the mask"
            )
        return _one_graph(exact, projected, query, x, mask, limit), None
    short = mask.sum(-1) <= limit  # (b,) which rows take exact attention
    if not bool(short.any()):
        return projected(query, x, mask, need_weights)
    if bool(short.all()):
        return exact(query, x, mask, need_weights)
    if need_weights:
        raise ValueError(
            f"attention weights of a batch mixing rows of at most exact_length={limit} real tokens (exact, "
            "(n x n) weights) with longer ones (projected): run the two apart"
        )
    rows, others = short.nonzero()[:, 0], (~short).nonzero()[:, 0]
    out = query.new_empty(query.shape)  # (b, h, n, d)
    out[rows] = exact(query[rows], x[rows], mask[rows], False)[0].to(out.dtype)
    out[others] = projected(query[others], x[others], mask[others], False)[0].to(out.dtype)
    return out, None


def _one_graph(
    exact: Path, projected: Path, query: torch.Tensor, x: torch.Tensor, mask: torch.Tensor, limit: int
) -> torch.Tensor:
    """`exact_up_to_length` without a host branch (module docstring) -> out (b, h, n, d)."""
    b, h, n, d = query.shape
    width = min(limit, n)
    # each row's real tokens first, in order (pads sorted to the back, stably): a row of at most `limit` real
    # tokens has all of them among its first `width` columns
    order = torch.argsort((~mask).to(torch.uint8), dim=1, stable=True)[:, :width]  # (b, width)
    heads = order[:, None, :, None].expand(b, h, width, d)
    near = exact(
        query.gather(2, heads),
        x.gather(1, order[..., None].expand(b, width, x.shape[-1])),
        mask.gather(1, order),
        False,
    )[0]  # (b, h, width, d)
    far = projected(query, x, mask, False)[0]  # (b, h, n, d)
    placed = far.scatter(2, heads, near.to(far.dtype))
    short = mask.sum(-1) <= limit  # (b,)
    return torch.where(short[:, None, None, None], placed, far)
