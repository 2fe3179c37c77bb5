"""A dense E (k x n) on tensors: E (m * X) and E m, the slots that reach a real token, length scaling.

The arithmetic of the dense kinds ("linear", "random") as plain functions of a weight and an input,
apart from `SequenceProjection` (nn/projection.py), which owns the weights, checks the options and
picks the kind. Nothing here holds state, so each function is the formula its docstring writes;
`window_matrix` is the window start of a learned E (module docstring of nn/projection.py), and the
two mask helpers serve the pooling kinds too.
"""

from __future__ import annotations

import torch

from linformer_kit.nn.backends import fill_empty_rows


def window_matrix(k: int, n: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(k, n): row j averages the j-th of k consecutive windows of n positions (E 1 = 1).

    Windows are as equal as k and n allow (n/k positions each when k divides n); k = n is the identity.
    """
    window_of = torch.arange(n) * k // n  # (n,) the slot of each position
    e = (window_of[None, :] == torch.arange(k)[:, None]).to(dtype)  # (k, n)
    return e / e.sum(-1, keepdim=True)


def dense_slot_mask(weight: torch.Tensor, mask: torch.Tensor | None, max_seq_len: int) -> torch.Tensor | None:
    """(b, *h, k) bool: which slots of E (*h, k, n) give weight to at least one real token.

    A learned or Gaussian E reaches every position, but an identity or window-initialised one (a
    converted model) has rows that see only padding or positions past a short input's end. Those
    slots would be zero keys that still take probability mass; masking them makes such an E behave
    exactly like the pooling it starts as. Full-length unpadded input needs no mask (None).
    """
    n = weight.shape[-1]
    # A symbolic n (torch.export with a dynamic length, or dynamic torch.compile) takes the general
    # path: one graph must serve every n up to max_seq_len, and the reach test is exact at n = max too.
    if mask is None and isinstance(n, int) and n == max_seq_len:
        return None
    real = (
        torch.ones(1, n, dtype=weight.dtype, device=weight.device) if mask is None else mask.to(weight.dtype)
    )
    reach = torch.einsum("...kn,bn->b...k", weight.detach().abs(), real)  # (b, *h, k)
    slot_mask = reach > 0
    return fill_empty_rows(slot_mask)  # a row with no real token keeps every slot


def length_scaled(
    values: torch.Tensor, row_weight: torch.Tensor, mask: torch.Tensor | None, n: int, max_seq_len: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """E (m X) and E m (b, *, k, c / 1) times sqrt(max_seq_len / n_real).

    n_real is the number of real tokens of each row: mask.sum(-1), or the input length n unpadded.
    It depends on the real tokens only, so a padded row is scaled exactly as the same row alone.
    """
    b = values.shape[0]
    if mask is None:
        real = torch.full((b,), float(n), device=values.device)
    else:
        real = mask.sum(-1).clamp(min=1).to(torch.float32)  # (b,); an all-pad row is finite, not inf
    factor = (max_seq_len / real).sqrt().to(values.dtype).view(b, *([1] * (values.dim() - 1)))
    return values * factor, row_weight * factor


def mask_like(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(b, n) bool -> (b, 1, ..., 1, n, 1) bool, broadcastable against x (b, *, n, c)."""
    return mask.view(mask.shape[0], *([1] * (x.dim() - 3)), mask.shape[1], 1)


def drop_padding(x: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """m * x as a select: a pad row becomes 0 even when it holds NaN or inf (0 * NaN is NaN)."""
    return x.masked_fill(~m, 0.0)


def dense_project(
    weight: torch.Tensor, x: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """E (m * X) (b, *, k, c) and E m (b, *, k, 1) for a dense E (*h, k, n) already sliced to n."""
    if mask is None:
        values = torch.matmul(weight, x)  # (b, *, k, c)
        return values, weight.sum(-1, keepdim=True).expand(*values.shape[:-1], 1)
    m = mask_like(x, mask)  # (b, *, n, 1)
    return torch.matmul(weight, drop_padding(x, m)), torch.matmul(weight, m.to(x.dtype))
