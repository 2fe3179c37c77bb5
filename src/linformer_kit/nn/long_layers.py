"""Long layers: a second stack of encoder layers that only inputs longer than exact_length read.

A student of a 512-token original, extended past it with exact_length = T (nn/exact_rows.py), reads every
input of at most T real tokens exactly. Where does its long reading live? In the shared weights it moves what
short inputs read (on 512-token book passages the recommended long student drifted from the original to
0.887-0.943); in E and F alone, or with rank-16 long adapters on the attention linears (nn/long_adapters.py),
it lacks the capacity (passkey at 4 096 tokens: 10 and 24 of 50 documents, against 62 when every weight
trains; docs/reproduction/long-minilm/). Long layers give the long reading every weight of every layer and
the short reading none of them: beside its layers f_1 … f_L a model holds a copy g_1 … g_L (the long stage
starts it as f), and by each row's real length L_r

    L_r <= T:   h = f_L ∘ … ∘ f_1 (x)        untouched by any long training (the original's layers or the
                                             512 student's: `linformer distill --short-layers`)
    L_r >  T:   h = g_L ∘ … ∘ g_1 (x)        the long layers

with x the embeddings (shared: a row's positions below T are read by both). A row of at most T real tokens
gets what the model without long layers gives it, bit for bit (tests/models/test_long_layers.py).

Cost at inference: the copy's weights (MiniLM-L6 read to 4 096 tokens: 17 M parameters more, its own E and F
among them, beside 30 M), and no compute beyond the one stack each row takes. Which rows those are the model's
plan says, once a forward (nn/plan.py): in eager mode, on any device, one host read of the rows' flags (on a
GPU the one sync the model pays anyway, to drop a mask of real tokens only), and a batch mixing both runs each
stack on its own rows, written back by row (the router of the layer's own two paths: nn/exact_rows.py,
`by_rows`). While tracing (torch.compile) nothing is read on the host, and that is paid in FLOPs: a padded
batch longer than T runs both stacks on every row and selects, 2 L layers a row instead of L, twice the
encoder's products (the embeddings and any head are small beside them), whatever its mix. An unpadded batch
(no mask), or one of at most T tokens, takes one stack by its length n and pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from linformer_kit.nn.exact_rows import by_rows
from linformer_kit.nn.plan import Plan

# (x (b, n, D), the plan of its rows) -> a stack's outputs, each (b, ...): the last hidden state first
Stack = Callable[[torch.Tensor, Plan], tuple[torch.Tensor, ...]]


def by_length(short: Stack, long: Stack, x: torch.Tensor, plan: Plan, limit: int) -> tuple[torch.Tensor, ...]:
    """Rows of at most `limit` real tokens through `short`, the others through `long` (module docstring).

    x (b, n, D) the embeddings, `plan` the forward's (nn/plan.py) for exact_length = `limit`. Returns the
    chosen stack's outputs, row by row; ValueError for outputs whose shapes differ by stack in a mixed batch
    (attention weights: (n x n) where rows are read exactly, (n x k) where projected), and under torch.export.
    While tracing, a padded batch with n > limit costs both stacks on every row: twice the layers' FLOPs.
    """
    if plan.route is None:
        raise ValueError(
            f"long layers have no exported form (which stack a row reads depends on its length, up to "
            f"exact_length={limit}): export the model read to at most {limit} tokens (models/extend.py "
            "`shortened`), which drops them"
        )

    def on_rows(stack: Stack, is_long: bool) -> Callable[[torch.Tensor | None], tuple[torch.Tensor, ...]]:
        def run(rows: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
            if rows is None:  # every row, one stack or both then a select
                return stack(x, plan)
            return stack(x[rows], plan.part(is_long))  # a part of a mix read on the host

        return run

    return by_rows(plan.route, on_rows(short, False), on_rows(long, True))
