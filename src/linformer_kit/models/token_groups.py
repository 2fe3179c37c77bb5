"""A CPU inference batch read in groups of at most GROUP_TOKENS tokens, each group as narrow as its rows.

Why: on a CPU a batch of many long rows costs more per token than the same rows in small batches: 32 rows of
2 048 tokens took 14.44 s in one batch, 11.69 s in batches of 4 and 11.32 s one at a time (the student, 2-core
AMD EPYC, fp32: docs/benchmarks/encode/batch-split.json). The cause is not profiled (likely: a batch's activations,
(b·n, 1 536) floats a feed-forward layer, 400 MB at 32 × 2 048, leave the caches one row's 12.6 MB fits). And
sentence-transformers pads each batch of 32 to its longest text, so the shorter long rows of a batch read their
padding in every layer. Here the encoder runs once on each group:

    rows     sorted by real length (longest first), each group as many as fit GROUP_TOKENS at the width of its
             longest (one row at least)
    width    a group of the exact path (rows of at most exact_length = T real tokens): its longest row's
             count of real tokens, each row's real tokens gathered first, in order (models/row_groups.py's
             gather: the exact path is per token, so left padding narrows too); a group of the projected path
             (rows over T, or a model without T): up to its rows' last real position, the trailing pads cut and
             every token kept at its position (E and F project by position: pads are exact only where they
             stand, so a left-padded long row keeps its width)

Each real token gets what it gets in the whole batch, to float summation order (every layer is per row and exact
under padding); the outputs are written back by row and position, pads past a group's width 0 (as in
row_groups.py). One host read of each row's count and last real position (the mask on the CPU: free).

Taken only where it can help and nothing else changes: a CPU, gradients off (sentence-transformers' `encode`,
`no_grad`, inference mode), eager mode (no trace keeps a branch on a value), no attention weights (their shapes
differ by path), more than one row and more than GROUP_TOKENS padded tokens. Elsewhere the model runs as before:
the GPU reads big batches best, and training keeps its batch.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput

from linformer_kit.nn.exact_rows import Route, real_first, tracing
from linformer_kit.nn.plan import Plan

# tokens a group holds at most, the quickest budget of the probe (token-groups.json, 2-core AMD EPYC, fp32):
# 32 rows of 2 048 in 11.45 s (one batch 14.79 s), 16 of 4 096 in 10.72 s (one batch 13.91 s, budget 8 192
# 11.86 s); a row of more tokens is a group of its own
GROUP_TOKENS = 4096


class Group(NamedTuple):
    """Rows read together: their indices (g,), the positions each reads (g, W) into the batch's n, its plan."""

    rows: torch.Tensor
    positions: torch.Tensor
    plan: Plan


def read_grouped(plan: Plan, x: torch.Tensor, output_attentions: bool) -> bool:
    """Whether a forward over x (b, n, D) runs in token groups (module docstring)."""
    b, n = x.shape[:2]
    one_path_or_read = plan.route is None or plan.route.apart or isinstance(plan.route.longer, bool)
    return (
        x.device.type == "cpu" and not torch.is_grad_enabled() and not output_attentions and not tracing()
        and b > 1 and b * n > GROUP_TOKENS and one_path_or_read
    )  # fmt: skip


def token_groups(plan: Plan, b: int, n: int) -> list[Group]:
    """The groups of a (b, n) batch under `plan` (module docstring), short (exact) rows' first."""
    mask = plan.mask
    if mask is None:
        counts, ends = [n] * b, [n] * b
    else:  # the one host read: each row's real tokens and its last real position + 1
        at = torch.arange(1, n + 1, device=mask.device)
        counts, ends = torch.stack([mask.sum(-1), (mask * at).amax(-1)]).tolist()
    route = plan.route
    if route is None:  # no exact_length: every row projected
        paths = [(False, torch.arange(b))]
    elif route.rows is not None:  # a mix read on the host
        paths = [(True, route.rows[0]), (False, route.rows[1])]
    else:
        paths = [(not route.longer, torch.arange(b))]
    groups = []
    for exact, rows in paths:
        sizes = counts if exact else ends
        order = sorted(rows.tolist(), key=lambda i: -sizes[i])
        while order:
            width = max(sizes[order[0]], 1)
            count = max(1, GROUP_TOKENS // width)  # rows at this width, one at least
            chosen, order = order[:count], order[count:]
            groups.append(
                _group(plan, torch.tensor(chosen), width, exact, all(counts[i] == width for i in chosen))
            )
    return groups


def _group(plan: Plan, rows: torch.Tensor, width: int, exact: bool, unpadded: bool) -> Group:
    """One group: its rows' positions (exact: real tokens first, stably; projected: 0 .. width-1) and plan."""
    mask = plan.mask
    if exact and mask is not None:
        positions = real_first(mask[rows], width)  # (g, W)
    else:
        positions = torch.arange(width).expand(len(rows), width)
    part_mask = None if unpadded or mask is None else mask[rows].gather(1, positions)
    route = None if plan.route is None else Route(not exact, False, plan.route.limit)
    return Group(rows, positions, Plan(part_mask, route))


def encode_grouped(
    encoder: nn.Module, x: torch.Tensor, plan: Plan, output_hidden_states: bool
) -> BaseModelOutput:
    """`encoder` (LinformerEncoder) on each group of x (b, n, D), written back into (b, n, D) outputs."""
    b, n, d = x.shape
    last = x.new_zeros(b, n, d)
    hidden: list[torch.Tensor] | None = None
    for group in token_groups(plan, b, n):
        index = group.positions[..., None].expand(-1, -1, d)  # (g, W, D)
        out = encoder(x[group.rows].gather(1, index), group.plan, False, output_hidden_states)
        states = [out.last_hidden_state, *(out.hidden_states or ())]
        if hidden is None:
            hidden = [x.new_zeros(b, n, d) for _ in states[1:]]
        for target, s in zip([last, *hidden], states, strict=True):
            target[group.rows] = target[group.rows].scatter(1, index, s.to(x.dtype))
    return BaseModelOutput(
        last_hidden_state=last,
        hidden_states=tuple(hidden) if output_hidden_states and hidden is not None else None,
        attentions=None,
    )


__all__ = ["GROUP_TOKENS", "encode_grouped", "read_grouped", "token_groups"]
