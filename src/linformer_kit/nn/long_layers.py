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
among them, beside 30 M), and no compute beyond the one stack each row takes on a CPU in eager mode (a batch
mixing both runs them apart, written back by row, by the router of the layer's own two paths: nn/exact_rows.py,
`route_rows` and `by_rows`). While tracing (torch.compile) and on any other device nothing is read on the
host, and that is paid in FLOPs: a padded batch longer than T runs
both stacks on every row and selects, 2 L layers a row instead of L, twice the encoder's products (the
embeddings and any head are small beside them), for every such batch whatever its mix, a batch of short rows
padded past T included. What a host read would save: one read of the b row flags a forward (a sync on a GPU,
beside the model's own one, `without_full_mask`) would run each row through one stack, half the work. That
trade is left to a plan made once a forward, which can fold both reads into one. An unpadded batch (no
mask), or one of at most T tokens, takes one stack by its length n and pays nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from linformer_kit.nn.exact_rows import by_rows, route_rows

# (x (b, n, D), mask (b, n) | None) -> a stack's outputs, each (b, ...): the last hidden state first
Stack = Callable[[torch.Tensor, torch.Tensor | None], tuple[torch.Tensor, ...]]


def by_length(
    short: Stack, long: Stack, x: torch.Tensor, mask: torch.Tensor | None, limit: int
) -> tuple[torch.Tensor, ...]:
    """Rows of at most `limit` real tokens through `short`, the others through `long` (module docstring).

    x (b, n, D) the embeddings, mask (b, n) True = real token or None (every token real). Returns the chosen
    stack's outputs, row by row; ValueError for outputs whose shapes differ by stack in a mixed batch
    (attention weights: (n x n) where rows are read exactly, (n x k) where projected). Off a CPU or while
    tracing, a padded batch with n > limit costs both stacks on every row: twice the layers' FLOPs.
    """
    refusal = (
        f"long layers have no exported form (which stack a row reads depends on its length, up to "
        f"exact_length={limit}): export the model read to at most {limit} tokens (models/extend.py "
        "`shortened`), which drops them"
    )
    route = route_rows(mask, x.shape[1], limit, refusal)

    def on_rows(stack: Stack) -> Callable[[torch.Tensor | None], tuple[torch.Tensor, ...]]:
        def run(rows: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
            if rows is None:
                return stack(x, mask)
            assert mask is not None  # (rows are chosen by a mask)
            return stack(x[rows], mask[rows])

        return run

    return by_rows(route, on_rows(short), on_rows(long))
