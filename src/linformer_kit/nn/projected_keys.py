"""The keys and values a Linformer layer attends to: every token's K, V, and the k slots E K, F V.

Notation of nn/attention.py. Two orders compute the same slots:

    paper order   K = X Wk + 1 bkᵀ (b, n, D) -> split heads -> E_i (m * K_i)          cost n D² + n k D
    fast order    X~ = E (m * X) (b, k, D) -> K~ = X~ Wk + (E m) bkᵀ -> split heads     cost n k D + k D²

The fast order needs one E for all heads and a linear projection; it is the default whenever it
applies ("auto"), and the paper order is kept as the reference ("paper"). Under kv / layerwise
sharing one E X serves keys and values; under headwise sharing E X and F X come from one matmul.

`ProjectedKeys` holds them as a base of `LinformerSelfAttention`: the layer's linears, E and F, its sharing
and order are its; how it attends to them (exact, projected, the window) is nn/attention.py's. With
short_inputs="exact" a row of at most k real tokens gets its own K, V in its slots (nn/short_inputs.py).
"""

from __future__ import annotations

import torch
from torch import nn

from linformer_kit.nn.backends import fill_empty_rows
from linformer_kit.nn.keys import Slots
from linformer_kit.nn.long_adapters import LongAdapters
from linformer_kit.nn.options import (
    ProjectionInit,
    ProjectionKind,
    ProjectionOrder,
    ProjectionScaling,
    Sharing,
)
from linformer_kit.nn.projection import Projected, SequenceProjection, project_pair
from linformer_kit.nn.short_inputs import has_short_rows, own_tokens_in_short_rows


class ProjectedKeys(nn.Module):
    """K, V of every token and the slots E K, F V, for the attention layer built on it (module docstring)."""

    # set by the layer's __init__ (nn/attention.py)
    num_heads: int
    head_dim: int
    projected_length: int | None
    sharing: Sharing
    projection_order: ProjectionOrder
    short_inputs: str
    causal: bool
    key: nn.Module  # (a wrapper of the linear, too: LoRA, quantization, hooks)
    value: nn.Module
    long_adapters: LongAdapters | None
    # E, F: per sharing mode (`_build_projections`); a caller's layerwise one is held outside the module tree
    key_projection: SequenceProjection
    value_projection: SequenceProjection
    kv_projection: SequenceProjection
    _external_projection: tuple[SequenceProjection, ...]

    def _build_projections(
        self,
        max_seq_len: int,
        projection: ProjectionKind,
        projection_scaling: ProjectionScaling,
        projection_init: ProjectionInit,
        shared_projection: SequenceProjection | None,
    ) -> None:
        """E and F of a projected layer, by sharing: per head or per layer, one for both (kv, layerwise), or
        the caller's (layerwise with `shared_projection`: not registered here, one entry in its owner's
        state dict and one gradient)."""
        k = self.projected_length
        assert k is not None  # a projected layer's

        def projection_module(heads: int = 1) -> SequenceProjection:
            return SequenceProjection(
                max_seq_len, k, projection, num_heads=heads, scaling=projection_scaling, init=projection_init
            )

        if self.sharing in ("none", "headwise"):
            heads = self.num_heads if self.sharing == "none" else 1
            self.key_projection = projection_module(heads)
            self.value_projection = projection_module(heads)
        elif shared_projection is not None:  # layerwise, owned by the caller
            self._external_projection = (shared_projection,)
        else:  # kv, or layerwise owned by this layer
            self.kv_projection = projection_module()

    # --- which projections this layer uses -------------------------------------------------------

    def projections(self) -> tuple[SequenceProjection, SequenceProjection] | None:
        """(E, F) used for keys and values; the same object twice under kv/layerwise; None if full."""
        if self.projected_length is None:
            return None
        if self._external_projection:
            shared = self._external_projection[0]
            return shared, shared
        if self.sharing in ("kv", "layerwise"):
            return self.kv_projection, self.kv_projection
        return self.key_projection, self.value_projection

    def _projection_pair(self) -> tuple[SequenceProjection, SequenceProjection]:
        """(E, F) of a projected layer: `projections()`, which is None for a full-attention layer only."""
        projections = self.projections()
        assert projections is not None, "a full-attention layer has no projections"
        return projections

    @property
    def uses_fast_order(self) -> bool:
        """Whether keys/values are projected before the key/value linears (see module docstring)."""
        projections = self.projections()
        return (
            projections is not None
            and self.projection_order == "auto"
            and self.sharing != "none"
            and projections[0].is_linear
        )

    def _split_heads(self, t: torch.Tensor) -> torch.Tensor:
        b, m, _ = t.shape
        return t.view(b, m, self.num_heads, self.head_dim).transpose(1, 2)  # (b, h, m, d)

    def _keys_values(self, x: torch.Tensor, long: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """K = X Wk + 1 bkᵀ and V = X Wv + 1 bvᵀ of rows x (b, m, D), heads split: (b, h, m, d) each; with
        `long`, the long adapters' updates added (rows of the projected path, nn/long_adapters.py)."""
        keys, values = self.key(x), self.value(x)
        if long and self.long_adapters is not None:
            keys, values = keys + self.long_adapters.key(x), values + self.long_adapters.value(x)
        return self._split_heads(keys), self._split_heads(values)

    def _full_keys_values(
        self, x: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None, bool]:
        """K, V (b, h, n, d), the attention mask, and whether the core is to apply the causal mask."""
        keys, values = self._keys_values(x)
        if mask is None:
            return keys, values, None, self.causal
        # Pad keys and values become zeros by a select: a masked key still enters the matmuls, and
        # NaN or inf there (garbage, fp16 overflow) would survive a zero attention weight.
        pad = ~mask[:, None, :, None]  # (b, 1, n, 1)
        keys, values = keys.masked_fill(pad, 0.0), values.masked_fill(pad, 0.0)
        n = x.shape[1]
        attn_mask = mask[:, None, None, :]  # (b, 1, 1, n)
        past = torch.ones(n, n, dtype=torch.bool, device=x.device).tril() if self.causal else None
        if past is not None:
            attn_mask = attn_mask & past  # (b, 1, n, n)
        # A query that may see no real key (all-pad row, left padding under causal) attends to
        # everything it is allowed positionally instead of to nothing, which would be NaN.
        attn_mask = fill_empty_rows(attn_mask)
        if past is not None:
            attn_mask = attn_mask & past
        return keys, values, attn_mask, False

    def _slots(
        self,
        x: torch.Tensor,
        tokens: tuple[torch.Tensor, torch.Tensor] | None,
        mask: torch.Tensor | None,
        one_graph: bool,
    ) -> Slots:
        """E K, F V: the paper order from `tokens` (every token's K, V), else the fast order.

        With short_inputs="exact", a row of at most k real tokens gets its own K, V in its slots
        (nn/short_inputs.py) and takes no window: its slots are exact attention already.
        """
        if tokens is None:
            slots = self._fast_keys_values(x, mask)
        else:
            slots = self._projected_tokens(tokens, mask)
        windowed = None
        if has_short_rows(self.short_inputs, mask, one_graph):
            k = self.projected_length
            assert k is not None  # a projected layer's
            slots, short = own_tokens_in_short_rows(x, mask, slots, k, self._keys_values)
            windowed = ~short
        keys, values, slot_mask = slots
        return Slots(keys, values, _slot_attention_mask(slot_mask), windowed)

    def _projected_tokens(
        self, tokens: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The paper order: E_i (m * K_i), F_i (m * V_i) (b, h, k, d) from K, V (b, h, n, d); the slot mask.

        An E shared by the heads (one (k x n) matrix) projects K with its heads joined, (b, n, D): one
        matmul with D columns per row instead of h with d each (the same sums, a better-shaped product).
        """
        e, f = self._projection_pair()
        if e.num_heads == 1 and f.num_heads == 1:
            b, h, n, d = tokens[0].shape
            joined = [
                t.transpose(1, 2).reshape(b, n, h * d) for t in tokens
            ]  # (b, n, D), views of the linears
            keys, values = e(joined[0], mask), f(joined[1], mask)  # (b, k, D)
            return self._split_heads(keys.values), self._split_heads(values.values), keys.slot_mask
        keys, values = e(tokens[0], mask), f(tokens[1], mask)  # E_i (m * K_i), F_i (m * V_i)
        return keys.values, values.values, keys.slot_mask

    def _fast_keys_values(
        self, x: torch.Tensor, mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The fast order: (E (m * X)) Wk + (E m) bkᵀ, likewise with F for values: (b, h, k, d); the slot mask."""
        e, f = self._projection_pair()
        pe, pf = project_pair(e, f, x, mask)  # values (b, k, D), row_weight (b, k, 1)
        keys, values = _linear_rows(pe, self.key), _linear_rows(pf, self.value)  # (b, k, D)
        if self.long_adapters is not None:
            # the update is linear without a bias: applied to E (m X) it equals E (m (X's update))
            keys = keys + self.long_adapters.key(pe.values)
            values = values + self.long_adapters.value(pf.values)
        return self._split_heads(keys), self._split_heads(values), pe.slot_mask


def _slot_attention_mask(slot_mask: torch.Tensor | None) -> torch.Tensor | None:
    """(b, k) or per-head (b, h, k) slot mask -> an attention mask broadcastable to (b, h, n, k)."""
    if slot_mask is None:
        return None
    if slot_mask.dim() == 2:
        return slot_mask[:, None, None, :]  # (b, 1, 1, k)
    return slot_mask[:, :, None, :]  # (b, h, 1, k)


def _linear_rows(projected: Projected, linear: nn.Module) -> torch.Tensor:
    """The key/value linear f(x) = xWᵀ + b applied after the projection: E(m * f(X)) = f(E(m X)) + (E m − 1) f(0).

    E m is `row_weight` (E 1 without padding), and f(0) = b. Going through the module itself, not
    its weight, is what lets anything that wraps or hooks it work in the fast order as in the paper's:
    a LoRA adapter (f(x) = xWᵀ + b + s·xAᵀBᵀ is still affine), dynamic quantization, forward hooks.
    Cost: one (1, 1, D) row more than the k rows. Hooks see that row as a call of its own, first.
    """
    values = projected.values  # (b, k, D)
    bias = linear(values.new_zeros(1, 1, values.shape[-1]))  # f(0) = b (zero without a bias): (1, 1, D)
    return linear(values) + (projected.row_weight - 1) * bias  # (b, k, D)
