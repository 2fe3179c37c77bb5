"""Torch-only Linformer building blocks: drop `LinformerSelfAttention` into any model.

This subpackage imports torch and nothing else.
"""

from linformer_kit.nn.attention import (
    PROJECTION_ORDERS,
    SHARING_MODES,
    SHORT_INPUTS,
    LinformerSelfAttention,
    ProjectionOrder,
    Sharing,
    ShortInputs,
)
from linformer_kit.nn.backends import (
    ATTENTION_BACKENDS,
    BACKENDS,
    AttentionBackend,
    eager_attention,
    sdpa_attention,
)
from linformer_kit.nn.projection import (
    PROJECTION_INITS,
    PROJECTION_KINDS,
    PROJECTION_SCALINGS,
    Projected,
    ProjectionInit,
    ProjectionKind,
    ProjectionScaling,
    SequenceProjection,
)

__all__ = [
    "ATTENTION_BACKENDS",
    "BACKENDS",
    "PROJECTION_INITS",
    "PROJECTION_KINDS",
    "PROJECTION_ORDERS",
    "PROJECTION_SCALINGS",
    "SHARING_MODES",
    "SHORT_INPUTS",
    "AttentionBackend",
    "LinformerSelfAttention",
    "Projected",
    "ProjectionInit",
    "ProjectionKind",
    "ProjectionOrder",
    "ProjectionScaling",
    "SequenceProjection",
    "Sharing",
    "ShortInputs",
    "eager_attention",
    "sdpa_attention",
]
