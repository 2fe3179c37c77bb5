"""Linformer self-attention (Wang et al. 2020, eq. 7), with full attention as the k=None special case.

Per head i:  head_i = softmax( (X Wq_i) (E_i X Wk_i)ᵀ / sqrt(d) ) (F_i X Wv_i),  E_i, F_i in R^{k x n}.

Notation: b batch, n sequence length (<= max_seq_len), k projected length, h heads, d head dim,
D = h*d model dim.

The keys and values (nn/projected_keys.py): every token's K, V, and the slots E K, F V in the paper's order
or a fast one (E X first), the default where it applies ("auto"; "paper" keeps the reference).

Short inputs (nn/short_inputs.py). With short_inputs="exact", a sequence of at most k real tokens
takes exact softmax attention with the same weights: at n <= k outright, and in a longer (or, with a
symbolic n, any) batch through its k slots, which then hold its own tokens. Default "project" (the paper).

Local window and global tokens (`local_window=w`, `global_tokens=g`, nn/local.py): beside the k slots, each
query attends in the same softmax to the real keys within w positions and to the first g tokens, whose
queries attend to every real key. The window needs every token's K and V, so the slots are projected from
them in the paper order (n·k·D, where the fast order's E X then the key linear costs n·k·D + k·D²). Exact
inputs (k = None, or n <= k with short_inputs="exact") are unchanged: they attend to those keys already.
"""

from __future__ import annotations

import functools
import math
from typing import TypedDict

import torch
from torch import nn

from linformer_kit.nn.autotune import measured_core, window_bucket
from linformer_kit.nn.backends import AttentionBackend
from linformer_kit.nn.cores import CORES
from linformer_kit.nn.exact_rows import exact_outright, exact_up_to_length, export_refusal
from linformer_kit.nn.keys import KeySet, Slots
from linformer_kit.nn.layer_checks import check_input, check_layer_arguments, check_mask
from linformer_kit.nn.long_adapters import LongAdapters
from linformer_kit.nn.options import (
    DEFAULT_LOCAL_WINDOW,
    DEFAULT_OPTIONS,
    DEFAULT_PROJECTED_LENGTH,
    LinformerOptions,
    ProjectionInit,
    ProjectionKind,
    ProjectionOrder,
    ProjectionScaling,
    Sharing,
    ShortInputs,
    as_size,
)
from linformer_kit.nn.plan import Plan, layer_plan
from linformer_kit.nn.projected_keys import ProjectedKeys
from linformer_kit.nn.projection import SequenceProjection


class LinformerSelfAttention(ProjectedKeys):
    """Multi-head Linformer self-attention with padding masks, every sharing mode and projection kind.

    Args:
        hidden_size: D, the model dimension (divisible by num_heads).
        num_heads: h.
        max_seq_len: the longest input; E and F are (k x max_seq_len) and shorter inputs slice them.
        projected_length: k, or None for full (quadratic) softmax attention through the same code.
        sharing: "none" (E_i, F_i per head), "headwise" (E, F per layer), "kv" (E = F per layer),
            "layerwise" (one E for keys and values of every layer: pass `shared_projection`).
        projection: "linear", "mean", "max", "conv" or "random" (see `SequenceProjection`).
        dropout: dropout on the attention weights (training only).
        bias: whether query/key/value/output linears have a bias.
        backend: the attention core, a name of nn/cores.py's table: "auto" (per call: measured once a shape,
            nn/autotune.py, else nn/cores.py's rule), "sdpa", "blocked", "split" / "native" / "flex" (window
            cores) or "eager" (explicit softmax in fp32, the reference). A model takes it from its config.
        projection_order: "auto" (fast order when it applies) or "paper" (the reference order).
        causal: only supported with projected_length=None: E mixes every position, so masking after
            the projection would leak the future (see docs/design.md, "Causality").
        shared_projection: with sharing="layerwise", a `SequenceProjection` owned by the caller (the encoder)
            and used by every layer, not registered here (one state-dict entry, one gradient); without
            it the layer registers its own, `layer.kv_projection`.
        projection_scaling: "none", or "length": scale E (m X) by sqrt(max_seq_len / real tokens)
            so short inputs keep the key/value norms of full-length ones (see `SequenceProjection`).
        short_inputs: "project" (always k slots, the paper) or "exact" (n <= k: exact softmax attention,
            nn/short_inputs.py; attention weights are then (b, h, n, n)).
        projection_init: how learned E, F start: "window" (local means, the default) or "random"
            (zero-mean Gaussian, the paper's); see `SequenceProjection`.
        local_window: w, or None (the paper's layer): each query also attends to the real keys within w
            positions, in one softmax with the k slots; global_tokens: g >= 0, the first g tokens are
            keys of every query, and their queries attend to every real key (nn/local.py).
        exact_length: T >= k, or None: a sequence of at most T real tokens takes exact softmax attention
            with the same weights, whatever it is padded to (nn/exact_rows.py); None: short_inputs decides.
        long_adapter_rank: r, or None: rank-r updates of the four linears that only rows of more than
            exact_length real tokens read (nn/long_adapters.py); needs exact_length.

    Raises:
        ValueError: on any inconsistent argument, naming the value and its limit.
        TypeError: on an argument of the wrong type (a float k, a string for shared_projection).
    """

    def __init__(
        self,
        hidden_size: int,
        num_heads: int,
        max_seq_len: int,
        projected_length: int | None = DEFAULT_PROJECTED_LENGTH,
        *,
        sharing: Sharing = DEFAULT_OPTIONS.sharing,
        projection: ProjectionKind = DEFAULT_OPTIONS.projection,
        dropout: float = 0.0,
        bias: bool = True,
        backend: AttentionBackend = "auto",
        projection_order: ProjectionOrder = DEFAULT_OPTIONS.projection_order,
        causal: bool = False,
        shared_projection: SequenceProjection | None = None,
        projection_scaling: ProjectionScaling = DEFAULT_OPTIONS.projection_scaling,
        short_inputs: ShortInputs = DEFAULT_OPTIONS.short_inputs,
        projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
        local_window: int | None = DEFAULT_LOCAL_WINDOW,
        global_tokens: int = DEFAULT_OPTIONS.global_tokens,
        exact_length: int | None = DEFAULT_OPTIONS.exact_length,
        long_adapter_rank: int | None = None,
    ) -> None:
        super().__init__()
        # one layer takes one w (a model takes one per layer)
        window = None if local_window is None else as_size("local_window", local_window)
        options = LinformerOptions(  # the choices and their combinations (nn/options.py)
            sharing=sharing, projection=projection, projection_init=projection_init,
            projection_scaling=projection_scaling, short_inputs=short_inputs, projection_order=projection_order,
            local_window=window, global_tokens=global_tokens, exact_length=exact_length,
        )  # fmt: skip
        check_layer_arguments(
            hidden_size, num_heads, max_seq_len, projected_length, options, dropout, bias, backend, causal,
            shared_projection, long_adapter_rank,
        )  # fmt: skip
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.max_seq_len = max_seq_len
        self.projected_length = projected_length
        self.dropout = dropout
        self.backend = backend
        self.causal = causal
        self.sharing = options.sharing  # the Linformer options, as checked
        self.projection = options.projection
        self.projection_order = options.projection_order
        self.short_inputs = options.short_inputs
        self.local_window = window
        self.global_tokens = options.global_tokens
        self.exact_length = options.exact_length

        self.query = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.key = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.value = nn.Linear(hidden_size, hidden_size, bias=bias)
        self.dense = nn.Linear(hidden_size, hidden_size, bias=bias)  # output projection
        self.long_adapters = (
            None if long_adapter_rank is None else LongAdapters(hidden_size, long_adapter_rank)
        )
        self._external_projection = ()
        if projected_length is not None:  # E, F (nn/projected_keys.py)
            self._build_projections(
                max_seq_len, projection, projection_scaling, projection_init, shared_projection
            )

    def extra_repr(self) -> str:
        k = "None (full attention)" if self.projected_length is None else self.projected_length
        return (
            f"hidden_size={self.hidden_size}, num_heads={self.num_heads}, max_seq_len={self.max_seq_len}, "
            f"projected_length={k}, sharing={self.sharing!r}, projection={self.projection!r}, "
            f"backend={self.backend!r}, short_inputs={self.short_inputs!r}"
            + (f", local_window={self.local_window}" if self.local_window is not None else "")
            + (f", global_tokens={self.global_tokens}" if self.global_tokens else "")
        )

    @property
    def is_local(self) -> bool:
        """Whether projected inputs also take a local window or global tokens (nn/local.py)."""
        return self.projected_length is not None and (self.local_window is not None or self.global_tokens > 0)

    def attends_exactly(self, n: int) -> bool:
        """Whether an input of n tokens (padded length) takes exact softmax attention in this layer, the whole
        batch: n <= k with short_inputs="exact", n <= exact_length (nn/exact_rows.py), and every n in a full
        layer; never a symbolic n (nn/exact_rows.py, `exact_outright`: the one definition)."""
        return exact_outright(n, self.projected_length, self.short_inputs, self.exact_length)

    # --- forward ---------------------------------------------------------------------------------

    def forward(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, plan: Plan | None = None,
        backend: str | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """x (b, n, D), key_padding_mask (b, n) bool with True = real token -> (b, n, D). `plan`: the model's
        plan of this forward (nn/plan.py), whose mask is `key_padding_mask` or None; a bare layer makes its own.
        `backend`: the core of this call (nn/cores.py), the model's `attn_implementation`; None: the layer's."""
        return self._attend(x, key_padding_mask, plan, need_weights=False, backend=backend)[0]

    def forward_with_weights(
        self, x: torch.Tensor, key_padding_mask: torch.Tensor | None = None, plan: Plan | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Like forward, also returning the attention weights (b, h, n, k) ((b, h, n, n) if full).

        Uses the eager backend, which is the only one that materialises the weights. With a local
        window or global tokens they are (b, h, n, k + n): [:, :, i, :k] the slots, [:, :, i, k + j]
        the weight on token j (nn/local.py, `dense_local_attention`).
        """
        # the reference core, whatever the layer's or the model's: the only one that returns the weights
        out, weights = self._attend(x, key_padding_mask, plan, need_weights=True)
        assert weights is not None
        return out, weights

    def _attend(
        self, x: torch.Tensor, mask: torch.Tensor | None, plan: Plan | None = None, *, need_weights: bool,
        one_graph: bool | None = None, backend: str | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """The forward -> (out (b, n, D), weights | None). Per head, then the output linear:

            exact       softmax(Q Kᵀ / sqrt(d)) V             k = None, or n <= k (`attends_exactly`)
            projected   softmax(Q (E K)ᵀ / sqrt(d)) (F V)     and with `is_local`, beside the slots in the
                                                             same softmax, the window and the global keys
                                                             (nn/local.py)

        With short_inputs="exact" a row of at most k real tokens holds its own K, V in its slots (nn/short_inputs.py;
        `one_graph`, default: whether n is symbolic, projects at every n). With exact_length = T, a row of at
        most T real tokens takes the exact path whatever its padding, a longer one the projected path and the
        long adapters; which rows those are the plan says (nn/plan.py: the model's, once a forward, or the layer's).
        """
        b, n, _ = check_input(x, self.hidden_size, self.max_seq_len)
        plan = layer_plan(check_mask(mask, b, n), n, self.exact_length) if plan is None else plan
        mask = plan.mask  # None where every token is real
        one_graph = not isinstance(n, int) if one_graph is None else one_graph
        query = self._split_heads(self.query(x))  # Q (b, h, n, d)

        # the core (nn/cores.py): the reference where the weights are returned, else the call's or the layer's
        core = "eager" if need_weights else (self.backend if backend is None else backend)
        exact = functools.partial(self._exact, core=core)  # the two paths (`Path`s of nn/exact_rows.py)
        projected = functools.partial(self._projected, one_graph=one_graph, core=core)
        route = None  # which rows are longer than exact_length (nn/exact_rows.py), where the layer asks
        if self.projected_length is None or (self.attends_exactly(n) and not one_graph):
            out, weights = exact(query, x, mask, need_weights)
        elif self.exact_length is not None:  # rows of at most T real tokens exact
            route = plan.route
            if route is None:
                raise ValueError(export_refusal(self.exact_length))
            out, weights = exact_up_to_length(exact, projected, route, query, x, mask, need_weights)
        else:
            out, weights = projected(query, x, mask, need_weights)
        out = out.transpose(1, 2).reshape(b, n, self.hidden_size)  # heads joined: (b, n, D)
        if self.long_adapters is not None and route is not None:  # the update on the long rows only
            return self.long_adapters.output(self.dense, out, route), weights
        return self.dense(out), weights

    def _exact(
        self, query: torch.Tensor, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool, *, core: str,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """softmax(Q Kᵀ / sqrt(d)) V over the real keys -> (out (b, h, n, d), weights (b, h, n, n) | None)."""
        keys, values, attn_mask, causal = self._full_keys_values(x, mask)  # K, V (b, h, n, d)
        return self._softmax(query, keys, values, attn_mask, causal, core)

    def _projected(
        self, query: torch.Tensor, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool, *,
        one_graph: bool, core: str,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """The k slots (and the window and global keys with `is_local`) -> (out (b, h, n, d), weights | None)."""
        # every token's K, V (b, h, n, d), where the slots are projected from them or the window reads them
        tokens = self._keys_values(x, long=True) if self.is_local or not self.uses_fast_order else None
        if self.long_adapters is not None:  # a projected row is a long one: its adapters' update of Q
            query = query + self._split_heads(self.long_adapters.query(x))
        slots = self._slots(x, tokens, mask, one_graph)  # E K, F V (b, h, k, d)
        if self.is_local and tokens is not None:  # (is_local: tokens are computed)
            return self._local_softmax(query, tokens, slots, mask, core)
        return self._softmax(query, slots.keys, slots.values, slots.keep, False, core)

    def _softmax(
        self, query: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, attn_mask: torch.Tensor | None,
        causal: bool, core: str,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """softmax(Q keysᵀ / sqrt(d)) values in `core` (a name of nn/cores.py's table, or "auto")."""
        options = self._softmax_options()
        run = lambda c: CORES[c].plain(query, keys, values, attn_mask, causal=causal, **options)  # noqa: E731
        shape = (keys.shape[-2], attn_mask is not None, causal)  # what else decides the cores' cost
        dropout = options["dropout_p"]
        name = measured_core(core, query, keys, values, run, shape, window=False, dropout_p=dropout)
        return run(name)

    def _local_softmax(
        self, query: torch.Tensor, tokens: tuple[torch.Tensor, torch.Tensor], slots: Slots,
        mask: torch.Tensor | None, core: str,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:  # fmt: skip
        """Slots, window and global keys in one softmax (nn/local.py) -> (out (b, h, n, d), weights | None)."""
        options = self._softmax_options()
        keyset = KeySet(slots, mask, self.local_window, self.global_tokens, longest=self.max_seq_len)
        run = lambda c: CORES[c].window(query, *tokens, keyset, **options)  # noqa: E731
        shape = window_bucket(keyset)  # what besides q decides the cores' cost
        name = measured_core(core, query, *tokens, run, shape, window=True, dropout_p=options["dropout_p"])
        return run(name)

    def _softmax_options(self) -> SoftmaxOptions:
        return {"scale": 1.0 / math.sqrt(self.head_dim), "dropout_p": self.dropout if self.training else 0.0}


class SoftmaxOptions(TypedDict):
    scale: float
    dropout_p: float
