"""Short inputs (short_inputs="exact"): a sequence of at most k real tokens takes exact softmax attention.

It uses the layer's own query/key/value/output weights instead of k projected slots: there the projection
saves nothing (scores cost n·k >= n² multiply-adds) and only loses the attention Linformer approximates
(k slots that each mix all n tokens through a fixed E cannot single out one token). Sequences longer
than k are projected as always. The choice is made per sequence, by its real length L, so a sentence
gets the same output whether it is run alone or padded into a batch with long ones. Default "project"
(the paper, fairseq and the other peers); `linformer pretrain` and `linformer finetune` default to
"exact" (docs/reproduction.md, CPU tier).

The form: the k slots of a short row hold its own tokens. Per head (notation of nn/attention.py), for
a row of L <= k real tokens,

    slot keys   S K,   slot values   S V,   S (k x n) the selection S[j, t] = [t is the j-th real token]
    slot mask   j < L                       (the other k - L slots are zero and masked out)
    out_i       softmax( q_i (S K)ᵀ / sqrt(d) ) (S V)  =  softmax( q_i K_realᵀ / sqrt(d) ) V_real

the same softmax over the same keys as exact attention, summed in another order: the two agree to
round-off (float64, 1e-12: tests/nn/test_short_inputs.py, `test_one_graph_form_equals_the_exact_path`;
exported and ONNX graphs: tests/nn/test_export.py). S X is a gather (`real_token_positions`: counted,
not sorted, since ONNX has no stable sort), and short rows are chosen by `torch.where`, not a branch,
so one graph serves every batch and every n, below k too. A row without a real token attends to k
zero slots, as the exact path to n zero keys. With a local window (nn/local.py) a short row takes no
window and no global key: its slots are exact attention already.

Where it runs (`LinformerSelfAttention._attend`):
    a concrete n <= k       not at all: the whole batch takes the exact path, softmax(Q Kᵀ / sqrt(d)) V,
                            which is cheaper and returns (b, h, n, n) attention weights
    a concrete n > k        the short rows of a padded batch (`has_short_rows`: without a mask, none)
    a symbolic n            every row of at most k real tokens, at every n: torch.export, ONNX and
                            dynamic torch.compile, where a symbolic n cannot choose between the two
                            paths without pinning the graph to one side of n = k (the one-graph form).
                            Its cost: at n <= k it also computes the projection it discards, and keys
                            and values run on k slots, not n.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from linformer_kit.nn.backends import fill_empty_rows, real_or_all

KeysValues = Callable[
    [torch.Tensor], tuple[torch.Tensor, torch.Tensor]
]  # rows (b, m, D) -> K, V (b, h, m, d)


def has_short_rows(short_inputs: str, mask: torch.Tensor | None, one_graph: bool) -> bool:
    """Whether a projected batch may hold rows of at most k real tokens that take their own tokens."""
    return short_inputs == "exact" and (mask is not None or one_graph)


def own_tokens_in_short_rows(
    x: torch.Tensor,
    mask: torch.Tensor | None,
    slots: tuple[torch.Tensor, torch.Tensor, torch.Tensor | None],
    k: int,
    keys_values: KeysValues,
) -> tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]:
    """Rows of at most k real tokens get their own keys and values in the k slots (module docstring).

    x (b, n, D), mask (b, n) True = real token or None (every token real); slots (E K, F V, slot mask):
    (b, h, k, d), (b, h, k, d) and (b, k), per-head (b, h, k) or None. Returns the slots with the short
    rows replaced, and which rows are short (b,). Longer rows keep their projected slots.
    `keys_values` is the layer's key and value linears with heads split.
    """
    real = real_or_all(mask, x.shape[0], x.shape[1], x.device)
    slot_keys, slot_values, slot_mask = slots
    length = real.sum(-1)  # (b,) real tokens per row: L
    short = length <= k  # (b,)
    filled = torch.arange(k, device=x.device)[None, :] < length[:, None]  # (b, k): j < L
    order = real_token_positions(real, k)  # (b, k)
    rows = torch.gather(x, 1, order[..., None].expand(-1, -1, x.shape[-1]))  # (b, k, D): S X
    empty = ~filled[:, None, :, None]  # (b, 1, k, 1)
    rows = rows.masked_fill(empty[:, 0], 0.0)  # pad content (NaN, inf) never reaches a matmul
    own_keys, own_values = keys_values(rows)  # (b, h, k, d) each
    own_keys, own_values = own_keys.masked_fill(empty, 0.0), own_values.masked_fill(empty, 0.0)
    pick = short[:, None, None, None]  # (b, 1, 1, 1)
    slot_keys, slot_values = (
        torch.where(pick, own_keys, slot_keys),
        torch.where(pick, own_values, slot_values),
    )
    if slot_mask is None:
        slot_mask = torch.ones_like(filled)
    filled = fill_empty_rows(filled)  # a row without a real token keeps every slot
    picked = short
    if slot_mask.dim() == 3:  # per-head slots (b, h, k)
        filled, picked = filled[:, None, :], picked[:, None]
    # a select of bools written as logic: ONNX Runtime has no Where for bool tensors
    picked = picked[..., None]  # (b, 1) or (b, 1, 1)
    return (slot_keys, slot_values, (picked & filled) | (~picked & slot_mask)), short


def real_token_positions(mask: torch.Tensor, slots: int) -> torch.Tensor:
    """(b, slots) int64: entry j is the position of the j-th real token of each row (j counted from 0).

    Counted, not sorted (ONNX has no stable sort), for any n, below `slots` too:
        order[j] = #{t : c_t <= j},  c_t = m_0 + ... + m_t  (real tokens up to and including t),
    since exactly the positions before the j-th real token have at most j real tokens up to them.
    Slots past a row's last real token hold n - 1 (a valid index, for the caller to mask). Equals
    `argsort(~mask, stable=True)[:, :slots]` on the real tokens (tests/nn/test_short_inputs.py).
    Cost: b·slots·n integer compares.
    """
    count = mask.to(torch.int32).cumsum(-1)  # (b, n): c_t
    j = torch.arange(slots, dtype=count.dtype, device=mask.device)[None, :, None]  # (1, slots, 1)
    return (count[:, None, :] <= j).sum(-1).clamp(max=mask.shape[1] - 1)  # (b, slots)
