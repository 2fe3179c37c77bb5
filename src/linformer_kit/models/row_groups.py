"""A batch that mixes short and long rows, read as two batches: the short rows at their own width.

Why: a forward's plan (nn/plan.py) reads on the host which rows hold more than exact_length = T real tokens.
Sent apart layer by layer (nn/exact_rows.py `by_rows`, nn/long_layers.py `by_length`), the short rows still ran
at the batch's padded width n: every linear and the exact attention over n positions, quadratic in n. A row
of 300 tokens beside one of 4 096 cost 4.9x the two rows read alone (the student's layer; issue 82). Here the
encoder runs once on each group:

    long rows    x[long]                 (l, n, D)      their part of the plan (`Plan.part`)
    short rows   each row's real tokens  (s, W, D)      W = min(T, n): a short row holds at most T of them

A short row's real tokens are gathered first, in order (so left padding works too), with the embeddings the
model computed for them at width n (positions included); every layer is per row and exact under padding, so
each real token gets what it gets in the whole batch, to float summation order. The groups' hidden states are
written back by row and position; a short row's pads past its gathered tokens are 0 there.

Only a mix read on the host takes this (eager mode: `Plan.route.rows`); one path, a traced forward (which
selects by row), and attention weights (refused in a mix: their shapes differ by path) keep the encoder's
own forward.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutput

from linformer_kit.nn.exact_rows import Route, real_first
from linformer_kit.nn.plan import Plan


def read_apart(plan: Plan, output_attentions: bool) -> bool:
    """Whether a forward runs its row groups as two batches (module docstring)."""
    route = plan.route
    return not output_attentions and route is not None and route.apart and route.rows is not None


def encode_apart(
    encoder: nn.Module, x: torch.Tensor, plan: Plan, output_hidden_states: bool
) -> BaseModelOutput:
    """`encoder` (LinformerEncoder) on the long rows of x (b, n, D) at width n and on the short rows' real
    tokens at width min(T, n), written back into (b, n, D) outputs (module docstring)."""
    assert plan.route is not None  # (`read_apart`)
    assert plan.route.rows is not None
    assert plan.mask is not None
    b, n, width = x.shape[0], x.shape[1], min(plan.route.limit, x.shape[1])
    short, long = plan.route.rows
    mask = plan.mask[short]  # (s, n)
    order = real_first(mask, width)  # (s, W): each short row's real tokens first, all of them within width
    short_plan = Plan(mask.gather(1, order), Route(False, False, plan.route.limit))
    gathered = x[short].gather(1, order[..., None].expand(-1, -1, x.shape[-1]))  # (s, W, D)
    short_out = encoder(gathered, short_plan, False, output_hidden_states)
    long_out = encoder(x[long], plan.part(True), False, output_hidden_states)

    def merged(short_states: torch.Tensor, long_states: torch.Tensor) -> torch.Tensor:
        """(s, W, D) and (l, n, D) -> (b, n, D), each row and token where it came from."""
        d = short_states.shape[-1]
        wide = short_states.new_zeros(len(short), n, d).scatter(
            1, order[..., None].expand(-1, -1, d), short_states
        )
        out = short_states.new_zeros(b, n, d).index_copy(0, short, wide)
        return out.index_copy(0, long, long_states.to(short_states.dtype))

    hidden = None
    if output_hidden_states:
        pairs = zip(short_out.hidden_states, long_out.hidden_states, strict=True)
        hidden = tuple(merged(short_states, long_states) for short_states, long_states in pairs)
    return BaseModelOutput(
        last_hidden_state=merged(short_out.last_hidden_state, long_out.last_hidden_state),
        hidden_states=hidden,
        attentions=None,
    )


__all__ = ["encode_apart", "read_apart"]
