"""LinformerConfig: RoBERTa's configuration plus the Linformer knobs (k, sharing, projection kind).

The field names are RoBERTa's, so a RoBERTa (or BERT) config converts field by field and every
tool that reads `hidden_size`, `num_hidden_layers`, ... keeps working. Linformer adds:

    projected_length  k: one int for every layer, a list with one int per layer (the paper gives
                      higher layers a smaller k), or None for full quadratic attention (the baseline)
    sharing           "none" | "headwise" | "kv" | "layerwise" (paper §4)
    projection        "linear" | "mean" | "max" | "conv" | "random" (paper §4-5)
    short_inputs      "project" (the paper: always k slots) | "exact" (inputs of n <= k tokens take
                      exact softmax attention; `linformer finetune` sets it, see nn/attention.py)
    projection_init   how a new model's learned E, F start: "window" (each slot the mean of n/k
                      neighbouring positions; the default, the start that learns local context) |
                      "random" (zero-mean N(0, 1/n), the paper's). Loaded weights are never re-started.
    layer_norm        "post" (RoBERTa, BERT and the authors' fairseq Linformer: x = LN(x + f(x))) |
                      "pre" (x = x + f(LN(x)), one more LN after the last layer: RoBERTa-PreLayerNorm's
                      layout and parameter names; trains at higher learning rates and leaves the
                      masked-LM plateau sooner at small sizes, docs/reproduction.md)
    position_style    "roberta": position ids start at pad_token_id + 1 and pad tokens keep
                      position pad_token_id (fairseq), so the longest input is
                      max_position_embeddings - pad_token_id - 1 (514 -> 512);
                      "bert": position ids are 0..n-1 whatever the padding, longest input is
                      max_position_embeddings. Set by `from_bert`.

Validated once, when the config is built or loaded: a bad value raises `ValueError` naming the
value and its limit. (Not `@strict`: huggingface_hub's strict dataclasses wrap every error in their
own exception type, and callers here rely on `ValueError`.)
"""

from __future__ import annotations

import os
from typing import Literal, get_args

from transformers import PreTrainedConfig
from transformers.activations import ACT2FN

from linformer_kit.models.remote_code import write_remote_code
from linformer_kit.nn import (
    PROJECTION_INITS,
    PROJECTION_KINDS,
    PROJECTION_SCALINGS,
    SHARING_MODES,
    SHORT_INPUTS,
    ProjectionInit,
    ProjectionKind,
    ProjectionScaling,
    Sharing,
    ShortInputs,
)
from linformer_kit.nn.projection import WINDOW_KINDS

POSITIVE_INTS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "max_position_embeddings", "type_vocab_size",
)  # fmt: skip
PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")

PositionStyle = Literal["roberta", "bert"]
POSITION_STYLES: tuple[str, ...] = get_args(PositionStyle)
LayerNormPosition = Literal["post", "pre"]
LAYER_NORMS: tuple[str, ...] = get_args(LayerNormPosition)


def parse_projected_length(text: str) -> int | list[int] | None:
    """The text form of `projected_length` (command lines, config files): one grammar for k.

    '128' -> 128 (every layer), '256,256,128' -> [256, 256, 128] (one per layer), 'none' -> None
    (full attention). Anything else raises ValueError naming the text.
    """
    if text.strip().lower() == "none":
        return None
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(
            f"projected_length: expected an int, a comma-separated list of ints or 'none', got {text!r}"
        ) from None
    return values[0] if len(values) == 1 else values


class LinformerConfig(PreTrainedConfig):
    """Configuration of a Linformer encoder (RoBERTa architecture, Linformer self-attention).

    Example:
        >>> from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
        >>> config = LinformerConfig(projected_length=128, sharing="kv")   # roberta-base sizes, n <= 512
        >>> model = LinformerForMaskedLM(config)
    """

    model_type = "linformer"

    vocab_size: int = 50265
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 514
    type_vocab_size: int = 1
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-5
    pad_token_id: int | None = 1
    bos_token_id: int | None = 0
    eos_token_id: int | list[int] | None = 2
    classifier_dropout: float | None = None
    tie_word_embeddings: bool = True
    # Linformer
    projected_length: int | list[int] | None = 256
    sharing: Sharing = "headwise"
    projection: ProjectionKind = "linear"
    projection_scaling: ProjectionScaling = "none"  # "length": E(mX) * sqrt(max_seq_len / real tokens)
    short_inputs: ShortInputs = "project"  # "exact": n <= k tokens take exact softmax attention
    position_style: PositionStyle = "roberta"
    projection_init: ProjectionInit = "window"
    layer_norm: LayerNormPosition = "post"

    def __post_init__(self, **kwargs) -> None:
        super().__post_init__(**kwargs)
        self._validate_linformer()

    @property
    def max_seq_len(self) -> int:
        """The longest input the position embeddings allow (the n that E and F are sized to)."""
        if self.position_style == "roberta":
            return self.max_position_embeddings - (self.pad_token_id or 0) - 1
        return self.max_position_embeddings

    def projected_lengths(self) -> list[int | None]:
        """k of every layer (None = full attention in that layer)."""
        if isinstance(self.projected_length, list):
            return list(self.projected_length)
        return [self.projected_length] * self.num_hidden_layers

    def save_pretrained(self, save_directory: str | os.PathLike, push_to_hub: bool = False, **kwargs) -> None:
        """config.json plus the model's code as one file (`modeling_linformer.py`) and an `auto_map`.

        `model.save_pretrained` saves its config through here, so every saved directory (checkpoints
        included) loads with `AutoModel*.from_pretrained(dir, trust_remote_code=True)` where
        linformer-kit is not installed. See `linformer_kit.models.remote_code`.
        """
        self.auto_map = write_remote_code(save_directory)
        super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)

    def _validate_linformer(self) -> None:
        self._validate_encoder()
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size={self.hidden_size} must be divisible by num_attention_heads={self.num_attention_heads}"
            )
        for name, choices in (
            ("position_style", POSITION_STYLES),
            ("sharing", SHARING_MODES),
            ("projection", PROJECTION_KINDS),
            ("projection_init", PROJECTION_INITS),
            ("layer_norm", LAYER_NORMS),
            ("short_inputs", SHORT_INPUTS),
            ("projection_scaling", PROJECTION_SCALINGS),
        ):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {choices}, got {getattr(self, name)!r}")
        if self.position_style == "roberta" and self.pad_token_id is None:
            raise ValueError(
                "position_style='roberta' numbers positions from pad_token_id + 1: pad_token_id=None"
            )
        if self.max_seq_len < 1:
            raise ValueError(
                f"max_position_embeddings={self.max_position_embeddings} leaves no room for a token "
                f"(position_style={self.position_style!r}, pad_token_id={self.pad_token_id})"
            )
        if self.projection_scaling == "length" and self.projection not in ("linear", "random"):
            raise ValueError(
                f"projection_scaling='length' applies to dense projections (linear, random), "
                f"not projection={self.projection!r}"
            )
        if (
            self.projection_scaling == "length"
            and self.projection == "linear"
            and self.projection_init == "window"
        ):
            raise ValueError(
                "projection_scaling='length' restores the key norm of a zero-mean random E on short inputs; "
                "projection_init='window' starts E as window means, which need no scaling: set "
                "projection_init='random' with it"
            )
        self._validate_projected_length()

    def _validate_encoder(self) -> None:
        """RoBERTa's fields: positive sizes, probabilities in [0, 1), a known activation."""
        for name in POSITIVE_INTS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        for name in PROBABILITIES:
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and 0.0 <= value < 1.0):
                raise ValueError(f"{name} must be in [0, 1), got {value!r}")
        if not callable(self.hidden_act) and self.hidden_act not in ACT2FN:
            raise ValueError(
                f"hidden_act={self.hidden_act!r} is not an activation of transformers.activations.ACT2FN "
                "(e.g. 'gelu', 'relu', 'silu')"
            )
        if not (isinstance(self.layer_norm_eps, (int, float)) and self.layer_norm_eps > 0):
            raise ValueError(f"layer_norm_eps must be > 0, got {self.layer_norm_eps!r}")
        if not (isinstance(self.initializer_range, (int, float)) and self.initializer_range >= 0):
            raise ValueError(f"initializer_range must be >= 0, got {self.initializer_range!r}")
        if self.pad_token_id is not None and not 0 <= self.pad_token_id < self.vocab_size:
            raise ValueError(
                f"pad_token_id={self.pad_token_id} must be a token id in [0, vocab_size={self.vocab_size})"
            )
        if self.num_labels < 1:
            raise ValueError(f"num_labels must be >= 1, got {self.num_labels}")

    def _validate_projected_length(self) -> None:
        k = self.projected_length
        if isinstance(k, list):
            if len(k) != self.num_hidden_layers:
                raise ValueError(
                    f"projected_length has {len(k)} entries, expected one per layer "
                    f"(num_hidden_layers={self.num_hidden_layers})"
                )
            if self.sharing == "layerwise" and len(set(k)) > 1:
                raise ValueError(
                    f"sharing='layerwise' uses one projection for every layer, so projected_length must be "
                    f"a single k, got {k}"
                )
        elif k is not None and (isinstance(k, bool) or not isinstance(k, int)):
            raise ValueError(f"projected_length must be an int, a list of ints or None, got {k!r}")
        for layer_k in self.projected_lengths():
            if layer_k is None:
                continue
            if isinstance(layer_k, bool) or not isinstance(layer_k, int):
                raise ValueError(f"projected_length entries must be ints, got {layer_k!r}")
            if not 1 <= layer_k <= self.max_seq_len:
                raise ValueError(
                    f"projected_length (k={layer_k}) must be between 1 and the longest input "
                    f"max_seq_len={self.max_seq_len} (from max_position_embeddings={self.max_position_embeddings}, "
                    f"position_style={self.position_style!r})"
                )
            if self.projection in WINDOW_KINDS and self.max_seq_len % layer_k:
                raise ValueError(
                    f"projection={self.projection!r} pools windows of max_seq_len/k positions: "
                    f"k={layer_k} must divide max_seq_len={self.max_seq_len}"
                )


__all__ = ["LAYER_NORMS", "POSITION_STYLES", "LayerNormPosition", "LinformerConfig", "PositionStyle"]
