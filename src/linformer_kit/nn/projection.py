"""Sequence-axis projections: the E and F of Linformer, (b, *, n, c) -> (b, *, k, c).

Notation: b batch, n sequence length (<= max_seq_len), k projected length, h heads, c channels
(D = h*d for a projection shared by all heads, d for a per-head one).

Every kind except `max` is a linear map along the sequence axis, i.e. a (k x n) matrix E:
    linear  learned dense E, init N(0, 1/max_seq_len)
    random  fixed Gaussian E (Johnson-Lindenstrauss), a buffer: saved, moved by .to(), never trained
    mean    average over the real tokens of each window of w = max_seq_len / k positions
    conv    learned kernel of w weights with stride w (kernel = stride = n/k), shared by all channels
and `max` takes the maximum over the real tokens of each window (not linear, so it cannot run
before the key/value linears; the attention layer then uses the paper's order).

Start (`init`, the learned kinds):
    window  (default) E[j, t] = 1/|W_j| on the j-th of k consecutive windows of max_seq_len
            positions (identity when k = max_seq_len); conv: the kernel 1/w, i.e. mean pooling.
            Each slot starts as the mean of its window's keys / values, so a query can find its
            neighbours from the first step: the start that lets masked-LM pretraining learn local
            context (docs/reproduction/cpu/README.md, "The window start carries what was learned into
            the projection").
    random  linear: E ~ N(0, 1/max_seq_len), zero mean (the paper, fairseq and every public
            Linformer start dense and random); conv: kernel ~ N(0, 1/w).
The `random` kind is a fixed Gaussian by definition and `mean` / `max` have no weights: `init`
does not change them.

Padding: a mask m (b, n), True = real token, removes padded rows before projecting: E (m * X).
Inputs shorter than max_seq_len use the first n columns of E (windows past the end hold no token).

Length scaling (`scaling="length"`, dense kinds only): a projected row of a dense E sums n_real
terms, so with E ~ N(0, 1/N) (N = max_seq_len) its expected squared norm is (n_real/N)·E|x|²: an
input of 20 real tokens gets keys and values sqrt(20/512) ≈ 0.2 times as long as a full block, its
attention logits shrink by the same factor and its attention goes flat. Multiplying E(m X) (and E m,
the bias weight) by sqrt(N / n_real) restores the norm of a full-length input at every length
(docs/reproduction.md measures what this does to short-input finetuning).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn

from linformer_kit.nn.backends import fill_empty_rows, real_or_all
from linformer_kit.nn.dense_projection import (
    dense_project,
    dense_slot_mask,
    drop_padding,
    length_scaled,
    mask_like,
    window_matrix,
)
from linformer_kit.nn.options import (
    PROJECTION_INITS,
    PROJECTION_KINDS,
    PROJECTION_SCALINGS,
    WINDOW_KINDS,
    LinformerOptions,
    ProjectionInit,
    ProjectionKind,
    ProjectionScaling,
    as_size,
    check_choice,
    check_projected_length,
)


class Projected(NamedTuple):
    """What a projection returns.

    values:      (b, *, k, c) the projected rows, E (m * X).
    row_weight:  (b, *, k, 1) E m, the weight each slot gives to a constant row (1 for a real token).
                 Projecting X W + 1 bᵀ equals values @ W + row_weight * bᵀ: the fast order's bias term.
    slot_mask:   (b, k) bool, or (b, h, k) for per-head E: True = the slot gives weight to at least one
                 real token. Empty slots (a window past the input's end or over padding; a row of an
                 identity or window-initialised E likewise) are masked out of the attention, so they take
                 no probability mass. None when no slot can be empty (full-length, unpadded input to a
                 dense E). Every row keeps at least one slot, so no softmax row is empty.
    """

    values: torch.Tensor
    row_weight: torch.Tensor
    slot_mask: torch.Tensor | None


class SequenceProjection(nn.Module):
    """Projects the sequence axis of its input from n <= max_seq_len down to projected_length.

    One instance can be handed to several attention layers (the paper's layerwise sharing):
    the layers then use the very same tensors, get one gradient, and the instance has one entry
    in the state dict of whichever module registers it.

    Args:
        max_seq_len: the longest input n; E is (k x max_seq_len) and shorter inputs slice it.
        projected_length: k, the number of slots (k <= max_seq_len).
        kind: one of "linear", "mean", "max", "conv", "random".
        scaling: "none", or "length" (dense kinds): multiply E (m X) by sqrt(max_seq_len / n_real).
        num_heads: 1 for a projection shared by all heads (input (b, n, c) or (b, h, n, c));
            h for one E per head (the "none" sharing mode; input (b, h, n, d)).
        init: how learned weights start, "window" (local means) or "random" (zero-mean Gaussian);
            see the module docstring.

    Raises:
        ValueError: on an unknown kind, k outside [1, max_seq_len], or a window kind whose k does
            not divide max_seq_len.
        TypeError: on a size that is not an integer (a float k, say).
    """

    def __init__(
        self,
        max_seq_len: int,
        projected_length: int,
        kind: ProjectionKind = "linear",
        *,
        num_heads: int = 1,
        scaling: ProjectionScaling = "none",
        init: ProjectionInit = "window",
    ) -> None:
        super().__init__()
        # named as this constructor names them; their combinations: the options' check (nn/options.py)
        for name, value, choices in (
            ("kind", kind, PROJECTION_KINDS), ("init", init, PROJECTION_INITS), ("scaling", scaling, PROJECTION_SCALINGS)
        ):  # fmt: skip
            check_choice(name, value, choices)
        LinformerOptions(projection=kind, projection_init=init, projection_scaling=scaling)
        if as_size("max_seq_len", max_seq_len) < 1:
            raise ValueError(f"max_seq_len must be >= 1, got {max_seq_len}")
        check_projected_length(projected_length, max_seq_len, kind)
        if as_size("num_heads", num_heads) < 1:
            raise ValueError(f"num_heads must be >= 1, got {num_heads}")
        self.max_seq_len = max_seq_len
        self.projected_length = projected_length
        self.kind = kind
        self.scaling = scaling
        self.init = init
        self.num_heads = num_heads
        self.window = max_seq_len // projected_length
        head_shape = (num_heads,) if num_heads > 1 else ()

        if kind == "linear":
            self.weight = nn.Parameter(torch.empty(*head_shape, projected_length, max_seq_len))
        elif kind == "random":
            self.register_buffer("weight", torch.empty(*head_shape, projected_length, max_seq_len))
        elif kind == "conv":
            self.weight = nn.Parameter(torch.empty(*head_shape, self.window))
        self.reset_parameters()

    @property
    def is_linear(self) -> bool:
        """True when the projection is a linear map of its input (all kinds but max pooling)."""
        return self.kind != "max"

    def reset_parameters(self) -> None:
        """Start the weights per `self.init` (module docstring); nothing to do for mean / max pooling.

        "random": N(0, 1/n), so a projected row has the expected norm of one input row and attention
        logits keep their full-attention scale whatever n and k are (the paper's JL construction uses
        N(0, 1/k), which only rescales the logits by sqrt(n/k)). The draws go through `nn.init`,
        which transformers guards while it loads weights, and the models call this only for weights
        that were not loaded: a checkpoint's E is never overwritten.
        """
        if self.kind == "random" or (self.kind == "linear" and self.init == "random"):
            nn.init.normal_(self.weight, 0.0, 1.0 / math.sqrt(self.max_seq_len))
        elif self.kind == "linear":
            with torch.no_grad():
                window = window_matrix(self.projected_length, self.max_seq_len, self.weight.dtype)
                self.weight.copy_(window.to(self.weight.device).expand_as(self.weight))  # per-head E too
        elif self.kind == "conv" and self.init == "random":
            nn.init.normal_(self.weight, 0.0, 1.0 / math.sqrt(self.window))
        elif self.kind == "conv":
            nn.init.constant_(self.weight, 1.0 / self.window)  # kernel = stride = n/k: mean pooling

    def extra_repr(self) -> str:
        heads = f", num_heads={self.num_heads}" if self.num_heads > 1 else ""
        scaling = f", scaling={self.scaling!r}" if self.scaling != "none" else ""
        init = f", init={self.init!r}" if self.kind in ("linear", "conv") else ""
        return (
            f"max_seq_len={self.max_seq_len}, projected_length={self.projected_length}, "
            f"kind={self.kind!r}{heads}{scaling}{init}"
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> Projected:
        """Project x (b, *, n, c) with optional mask (b, n) bool (True = real) to (b, *, k, c)."""
        self._check_length(x)
        if self.kind in WINDOW_KINDS:
            return self._pool(x, mask)
        return self._dense(x, mask, self.dense_weight(x.shape[-2], x.dtype))

    def dense_weight(self, n: int, dtype: torch.dtype) -> torch.Tensor:
        """E[..., :n] (*h, k, n) in `dtype`: the length contract, a shorter input uses the first n columns.

        With a symbolic n (torch.export with a dynamic length, dynamic torch.compile) the columns are
        gathered, not sliced: a slice is contiguous exactly when n = max_seq_len, and tracing that
        would pin the graph to one side of n = max_seq_len.
        """
        if isinstance(n, int):
            return self.weight[..., :n].to(dtype)
        return self.weight.index_select(-1, torch.arange(n, device=self.weight.device)).to(dtype)

    def _check_length(self, x: torch.Tensor) -> None:
        if x.shape[-2] > self.max_seq_len:
            raise ValueError(
                f"sequence length {x.shape[-2]} exceeds the projection's max_seq_len={self.max_seq_len}"
            )

    def _dense(self, x: torch.Tensor, mask: torch.Tensor | None, weight: torch.Tensor) -> Projected:
        """E (m * X) with this projection's scaling, for `weight` (*h, k', n): E, or E stacked on F.

        The slot mask is that of the first k rows, E's (for E and F stacked, the keys decide which
        slots count).
        """
        values, row_weight = dense_project(weight, x, mask)  # (b, *, k', c), (b, *, k', 1)
        if self.scaling == "length":
            values, row_weight = length_scaled(values, row_weight, mask, x.shape[-2], self.max_seq_len)
        slot_mask = dense_slot_mask(weight[..., : self.projected_length, :], mask, self.max_seq_len)
        return Projected(values, row_weight, slot_mask)

    def _pool(self, x: torch.Tensor, mask: torch.Tensor | None) -> Projected:
        *lead, n, c = x.shape
        k, w = self.projected_length, self.window
        mask = real_or_all(mask, x.shape[0], n, x.device)
        # Pad to max_seq_len so position t always falls in window t // w; the padding is masked.
        # (Unconditionally: a branch on pad == 0 would pin an exported graph to one side of n = max.)
        pad = self.max_seq_len - n
        m = mask_like(x, mask)  # (b, *, n, 1) bool
        x = nn.functional.pad(drop_padding(x, m), (0, 0, 0, pad))  # (b, *, max_seq_len, c), pad rows 0
        m = nn.functional.pad(m, (0, 0, 0, pad))  # (b, *, max_seq_len, 1), False past the end
        xw = x.reshape(*lead, k, w, c)  # (b, *, k, w, c)
        mw = m.reshape(*m.shape[:-2], k, w, 1).to(x.dtype)  # (b, *, k, w, 1)
        count = mw.sum(-2)  # (b, *, k, 1) real tokens per window
        slot_mask = nn.functional.pad(mask, (0, pad)).view(mask.shape[0], k, w).any(-1)  # (b, k)
        # A row with no real token at all keeps every slot: its (zero) keys then give finite output, not NaN.
        slot_mask = fill_empty_rows(slot_mask)

        if self.kind == "mean":
            values = xw.sum(-2) / count.clamp(min=1)
            row_weight = (count > 0).to(x.dtype)
        elif self.kind == "conv":
            kernel = self.weight.to(x.dtype)
            kernel = kernel.view(*kernel.shape[:-1], 1, w, 1)  # (*h, 1, w, 1)
            values = (xw * kernel).sum(-2)
            row_weight = (mw * kernel).sum(-2)
        else:  # max: empty windows give 0, not -inf
            filled = xw.masked_fill(mw == 0, float("-inf")).amax(-2)
            values = torch.where(count > 0, filled, torch.zeros_like(filled))
            row_weight = (count > 0).to(x.dtype)
        return Projected(values, row_weight.expand(*values.shape[:-1], 1), slot_mask)


def project_pair(
    e: SequenceProjection, f: SequenceProjection, x: torch.Tensor, mask: torch.Tensor | None
) -> tuple[Projected, Projected]:
    """E(m*X) and F(m*X) in one pass over X: once if E is F, one stacked matmul if both are dense."""
    if e is f:
        projected = e(x, mask)
        return projected, projected
    dense = (
        e.kind in ("linear", "random")
        and (f.kind, f.scaling) == (e.kind, e.scaling)
        and e.weight.shape == f.weight.shape
    )
    if not dense:
        return e(x, mask), f(x, mask)
    e._check_length(x)
    n, k = x.shape[-2], e.projected_length
    both = e._dense(x, mask, torch.cat([e.dense_weight(n, x.dtype), f.dense_weight(n, x.dtype)]))  # (2k, n)
    values, row_weight, key_slots = both  # (b, 2k, D), (b, 2k, 1), (b, k)
    return (
        Projected(values[:, :k], row_weight[:, :k], key_slots),
        Projected(values[:, k:], row_weight[:, k:], key_slots),
    )
