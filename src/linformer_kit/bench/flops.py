"""Analytic FLOP counts: the denominators of achieved FLOP/s and the FLOP-count limit of a speed-up.

A multiply-add is 2 FLOPs; only matrix products are counted (softmax, bias adds, layer norms,
activations and masking are lower order: O(b n D) or O(b h n k)). Notation as in DESIGN.md:
b batch, n length, k projected length, D model dim, I FFN width, L layers.

    Q and output linears                      4 b n D^2        (every method)
    full attention     K, V linears           4 b n D^2
                       Q K^T and P V          4 b n^2 D
    Linformer, fast order (headwise, kv, layerwise: E shared by all heads, projected before W_k, W_v)
                       E X (and F X)          2 p b k n D      p = 2 (headwise: E and F), 1 (kv, layerwise)
                       K, V linears on k rows 4 b k D^2
                       K, V biases f(0)       4 D^2            one zero row through each module: the bias term
                       Q K~^T and P V~        4 b n k D
    Linformer, paper order (none, and both PyPI peers: project the keys/values after W_k, W_v)
                       K, V linears           4 b n D^2
                       E_i K_i, F_i V_i       4 b k n D
                       Q K~^T and P V~        4 b n k D
    Linformer with a local window w (nn/local.py, every sharing: the paper order, then `banded_attention`;
    queries in blocks of B = max(32, w), n padded up to n' = a multiple of B, w capped at n; the SDPA core
    that "auto" picks with a backward or at head dim <= 32 does the same slot products and a wider band,
    B = max(128, w), inside one kernel: these counts are the banded core's)
                       K, V linears           4 b n D^2
                       E K, F V               4 b k n D
                       Q K~^T and P V~        4 b n' k D
                       the band               4 b n' (B + 2w) D   each query block against B + 2w keys
    encoder block      attention + FFN        + 4 b n D I,     times L blocks
    forward+backward   3 x forward            (the backward pass costs two products per forward product)
    train_step         3 x forward            the AdamW step is elementwise, about 15 FLOPs per parameter:
                                              under 1% of 6 b n FLOPs per weight of forward+backward
                                              once b n >= 256, so it is not counted

A saved encoder's least count (`least_encoder_flops`: scope "student", the FLOP limit of a student against
its original): the products its attention cannot do without, whatever the core, per block

    Q, K, V, output linears                   8 b n D^2        (a window needs K and V of every token)
    full attention (BERT; a Linformer layer with k None, or at n <= exact_length, or n <= k with
    short_inputs "exact": LinformerConfig.attends_exactly)
                       Q K^T and P V          4 b n^2 D
    Linformer, the layer's k slots and window w, g global tokens (k, w per layer: LinformerConfig's
    projected_lengths, local_windows; a layer without a window counts no window term)
                       E K and F V            4 b k n D
                       slots                  4 b n k D
                       window                 4 b n (2w + 1) D   each query against the 2w + 1 keys around it,
                                                                 w capped at n
                       global keys and rows   8 b n g D          every query against g keys; g rows against n
    FFN                                       4 b n D I
A core that pads, or reads a block's whole band (B + 2w keys), does more: the limit is an upper bound.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from linformer_kit.bench.config import PassType, Scope

FAST_ORDER_PROJECTIONS = {"linformer-headwise": 2, "linformer-kv": 1, "linformer-layerwise": 1}
PAPER_ORDER_METHODS = ("linformer-none", "peer-linformer", "peer-linformer-pytorch")


def attention_flops(
    method: str, *, batch: int, n: int, k: int | None, hidden: int, local_window: int | None = None
) -> int:
    """Forward FLOPs of one attention layer (q, k, v, output linears included)."""
    b, D = batch, hidden
    qo = 4 * b * n * D * D
    if method in ("full-sdpa", "full-eager"):
        return qo + 4 * b * n * D * D + 4 * b * n * n * D
    if k is None:
        raise ValueError(f"method {method!r} needs a projected length k")
    if local_window is not None:
        if method not in FAST_ORDER_PROJECTIONS and method != "linformer-none":
            raise ValueError(f"no FLOP formula for method {method!r} with a local window")
        from linformer_kit.nn.local import MIN_BLOCK  # here: this module stays free of torch

        w = min(local_window, n)
        block = max(MIN_BLOCK, w)
        padded = -(-n // block) * block  # n' = n rounded up to whole query blocks
        return (
            qo
            + 4 * b * n * D * D
            + 4 * b * k * n * D
            + 4 * b * padded * k * D
            + 4 * b * padded * (block + 2 * w) * D
        )
    mix = 4 * b * n * k * D  # Q K~^T and P V~
    if method in FAST_ORDER_PROJECTIONS:
        p = FAST_ORDER_PROJECTIONS[method]
        return qo + 2 * p * b * k * n * D + 4 * b * k * D * D + 4 * D * D + mix
    if method in PAPER_ORDER_METHODS:
        return qo + 4 * b * n * D * D + 4 * b * k * n * D + mix
    raise ValueError(f"no FLOP formula for method {method!r}")


def case_flops(
    method: str,
    scope: Scope,
    pass_type: PassType,
    *,
    batch: int,
    n: int,
    k: int | None,
    hidden: int,
    layers: int,
    intermediate: int,
    local_window: int | None = None,
) -> int:
    """FLOPs of one timed call: a layer or an L-block encoder; forward, forward+backward or a train step."""
    flops = attention_flops(method, batch=batch, n=n, k=k, hidden=hidden, local_window=local_window)
    if scope == "encoder":
        flops = layers * (flops + 4 * batch * n * hidden * intermediate)
    return flops if pass_type == "forward" else 3 * flops


def least_encoder_flops(config: Mapping[str, Any], rows: int, length: int) -> int:
    """Forward FLOPs of a saved encoder (its config.json: a BERT / RoBERTa, or a Linformer) reading `rows`
    sequences of `length` tokens: the least count of the module docstring.

    A Linformer's k, w and exact attention, layer by layer, are its `LinformerConfig`'s (built from `config`: a
    ValueError for an invalid one); a BERT / RoBERTa attends fully in every layer."""
    b, n, D, ffn = rows, length, int(config["hidden_size"]), int(config["intermediate_size"])
    layers = int(config["num_hidden_layers"])
    if config.get("model_type") == "linformer":
        # here: this module stays free of torch at import
        from linformer_kit.models.configuration_linformer import LinformerConfig

        linformer = LinformerConfig.from_dict(dict(config))
        ks, windows = linformer.projected_lengths(), linformer.local_windows()
        exact, g = linformer.attends_exactly(n), linformer.global_tokens
    else:
        ks, windows, exact, g = [None] * layers, [None] * layers, [True] * layers, 0
    total = 0
    for k, w, full in zip(ks, windows, exact, strict=True):
        total += 8 * b * n * D * D + 4 * b * n * D * ffn
        if full or k is None:  # (a layer of k None attends exactly: `full`; the test narrows k)
            total += 4 * b * n * n * D
            continue
        window = 2 * min(w, n) + 1 if w is not None else 0
        total += 4 * b * k * n * D + 4 * b * n * (k + window) * D + 8 * b * n * g * D
    return total
