"""Torch-only Linformer building blocks: drop `LinformerSelfAttention` into any model.

This subpackage imports torch and nothing else.
"""

from linformer_kit.nn.attention import LinformerSelfAttention
from linformer_kit.nn.backends import (
    ATTENTION_BACKENDS,
    BACKENDS,
    AttentionBackend,
    eager_attention,
    sdpa_attention,
)
from linformer_kit.nn.options import (
    DEFAULT_OPTIONS,
    PROJECTION_INITS,
    PROJECTION_KINDS,
    PROJECTION_ORDERS,
    PROJECTION_SCALINGS,
    SHARING_MODES,
    SHORT_INPUTS,
    LinformerOptions,
    ProjectionInit,
    ProjectionKind,
    ProjectionOrder,
    ProjectionScaling,
    Sharing,
    ShortInputs,
    format_projected_length,
    parse_projected_length,
)
from linformer_kit.nn.projection import Projected, SequenceProjection

__all__ = [
    "ATTENTION_BACKENDS",
    "BACKENDS",
    "DEFAULT_OPTIONS",
    "PROJECTION_INITS",
    "PROJECTION_KINDS",
    "PROJECTION_ORDERS",
    "PROJECTION_SCALINGS",
    "SHARING_MODES",
    "SHORT_INPUTS",
    "AttentionBackend",
    "LinformerOptions",
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
    "format_projected_length",
    "parse_projected_length",
    "sdpa_attention",
]
