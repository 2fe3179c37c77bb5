"""Torch-only Linformer building blocks: drop `LinformerSelfAttention` into any model.

This subpackage imports torch and nothing else.
"""

from linformer_kit.nn import options
from linformer_kit.nn.attention import LinformerSelfAttention
from linformer_kit.nn.backends import ATTENTION_BACKENDS, AttentionBackend, eager_attention, sdpa_attention
from linformer_kit.nn.cores import CORES, choose
from linformer_kit.nn.options import *  # noqa: F403  (the options, their choices and types: options.__all__)
from linformer_kit.nn.projection import Projected, SequenceProjection

__all__ = [
    *options.__all__,
    "ATTENTION_BACKENDS",
    "CORES",
    "AttentionBackend",
    "LinformerSelfAttention",
    "Projected",
    "SequenceProjection",
    "choose",
    "eager_attention",
    "sdpa_attention",
]
