"""LinformerConfig: RoBERTa's configuration plus the Linformer knobs (k, sharing, projection kind).

The field names are RoBERTa's, so a RoBERTa (or BERT) config converts field by field and every
tool that reads `hidden_size`, `num_hidden_layers`, ... keeps working. Linformer adds:

    projected_length  k: one int for every layer, a list with one int per layer (the paper gives
                      higher layers a smaller k), or None for full quadratic attention (the baseline)
    sharing           "none" | "headwise" | "kv" | "layerwise" (paper §4)
    projection        "linear" | "mean" | "max" | "conv" | "random" (paper §4-5)
    short_inputs      "project" (the paper: always k slots) | "exact" (inputs of n <= k tokens take
                      exact softmax attention; `linformer finetune` sets it, see nn/attention.py)
    local_window      w: each query also attends exactly to the real keys within w positions, in one
                      softmax with the k slots (nn/local.py); one int, one per layer (None: no window
                      there), or None (the paper's layer)
    global_tokens     g: the first g tokens are exact keys of every query and attend to every token
    exact_length      T: a sequence of at most T real tokens takes exact softmax attention with the same
                      weights, whatever its padding (nn/exact_rows.py); None: short_inputs decides
    long_adapter_rank r: rank-r updates of each layer's attention linears read by rows of more than
                      exact_length real tokens only (nn/long_adapters.py; `distill --long-tune adapters`);
                      None: none
    long_layers       True: a second stack of layers that rows of more than exact_length real tokens read
                      instead of the first (nn/long_layers.py; `distill --long-tune layers`); False: one stack
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
    classifier_pooling
                      what `LinformerForSequenceClassification` classifies: "cls" (the first token,
                      RoBERTa's) | "mean" (the mean of the final hidden states over the real tokens,
                      attention_mask = 1). The name and values are ModernBERT's config's.

Validated once, when the config is built or loaded: a bad value raises `ValueError` naming the
value and its limit. (Not `@strict`: huggingface_hub's strict dataclasses wrap every error in their
own exception type, and callers here rely on `ValueError`.)
"""

from __future__ import annotations

import os
from typing import Any, Literal, get_args

from transformers import PreTrainedConfig
from transformers.activations import ACT2FN

from linformer_kit.models.loading import longest_input
from linformer_kit.models.remote_code import write_remote_code
from linformer_kit.nn.exact_rows import exact_outright
from linformer_kit.nn.options import (
    DEFAULT_LOCAL_WINDOW,
    DEFAULT_OPTIONS,
    DEFAULT_PROJECTED_LENGTH,
    OPTION_NAMES,
    LinformerOptions,
    ProjectionInit,
    ProjectionKind,
    ProjectionScaling,
    Sharing,
    ShortInputs,
    check_choice,
    parse_projected_length,
)

# The Linformer options a config saves: all but projection_order, a choice of the layer alone (models
# run "auto": the fast order where it applies).
SAVED_OPTIONS = tuple(name for name in OPTION_NAMES if name != "projection_order")
POSITIVE_INTS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "max_position_embeddings", "type_vocab_size",
)  # fmt: skip
PROBABILITIES = ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout")

PositionStyle = Literal["roberta", "bert"]
POSITION_STYLES: tuple[str, ...] = get_args(PositionStyle)
LayerNormPosition = Literal["post", "pre"]
LAYER_NORMS: tuple[str, ...] = get_args(LayerNormPosition)
ClassifierPooling = Literal["cls", "mean"]
CLASSIFIER_POOLINGS: tuple[str, ...] = get_args(ClassifierPooling)


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
    # Linformer: defaults and checks are LinformerOptions' (nn/options.py); k is saved as a JSON list
    projected_length: int | list[int | None] | None = DEFAULT_PROJECTED_LENGTH
    sharing: Sharing = DEFAULT_OPTIONS.sharing
    projection: ProjectionKind = DEFAULT_OPTIONS.projection
    projection_scaling: ProjectionScaling = DEFAULT_OPTIONS.projection_scaling
    short_inputs: ShortInputs = DEFAULT_OPTIONS.short_inputs
    position_style: PositionStyle = "roberta"
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init
    layer_norm: LayerNormPosition = "post"
    classifier_pooling: ClassifierPooling = "cls"
    local_window: int | list[int | None] | None = DEFAULT_LOCAL_WINDOW
    global_tokens: int = DEFAULT_OPTIONS.global_tokens
    exact_length: int | None = DEFAULT_OPTIONS.exact_length
    long_adapter_rank: int | None = None
    long_layers: bool = False

    def __post_init__(self, **kwargs) -> None:
        super().__post_init__(**kwargs)
        self._validate_linformer()

    @property
    def max_seq_len(self) -> int:
        """The longest input the position embeddings allow (the n that E and F are sized to)."""
        return longest_input(self)

    def projected_lengths(self) -> list[int | None]:
        """k of every layer (None = full attention in that layer)."""
        if isinstance(self.projected_length, list):
            return list(self.projected_length)
        return [self.projected_length] * self.num_hidden_layers

    def local_windows(self) -> list[int | None]:
        """w of every layer (None = no window in that layer)."""
        return self.linformer_options().local_windows(self.num_hidden_layers)

    def attends_exactly(self, n: int) -> list[bool]:
        """Whether an input of n tokens (padded length) takes exact softmax attention, one bool per layer:
        each layer's `LinformerSelfAttention.attends_exactly(n)`, by the one rule both read
        (nn/exact_rows.py, `exact_outright`), without building the layers."""
        return [exact_outright(n, k, self.short_inputs, self.exact_length) for k in self.projected_lengths()]

    def layer_options(self, layer_idx: int) -> dict[str, Any]:
        """The Linformer options of layer `layer_idx`, as `LinformerSelfAttention` takes them (one k, one w)."""
        return {
            **{name: getattr(self, name) for name in SAVED_OPTIONS},
            "projected_length": self.projected_lengths()[layer_idx],
            "local_window": self.local_windows()[layer_idx],
        }

    def linformer_options(self) -> LinformerOptions:
        """This config's Linformer attention options, validated (ValueError names a bad value)."""
        try:
            return LinformerOptions(**{name: getattr(self, name) for name in SAVED_OPTIONS})
        except TypeError as error:  # a config's contract is ValueError for every bad value
            raise ValueError(
                f"{error} (projected_length, local_window: an int, a list of ints or None; global_tokens: an int)"
            ) from None

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
        check_choice("position_style", self.position_style, POSITION_STYLES)
        check_choice("layer_norm", self.layer_norm, LAYER_NORMS)
        check_choice("classifier_pooling", self.classifier_pooling, CLASSIFIER_POOLINGS)
        if self.position_style == "roberta" and self.pad_token_id is None:
            raise ValueError(
                "position_style='roberta' numbers positions from pad_token_id + 1: pad_token_id=None"
            )
        if self.max_seq_len < 1:
            raise ValueError(
                f"max_position_embeddings={self.max_position_embeddings} leaves no room for a token "
                f"(position_style={self.position_style!r}, pad_token_id={self.pad_token_id})"
            )
        rank = self.long_adapter_rank
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise ValueError(f"long_adapter_rank must be an int >= 1 or None, got {rank!r}")
        if rank is not None and self.exact_length is None:
            raise ValueError(
                f"long_adapter_rank={rank}: long adapters are read by rows of more than exact_length real "
                "tokens; set exact_length"
            )
        if not isinstance(self.long_layers, bool):
            raise ValueError(f"long_layers must be True or False, got {self.long_layers!r}")
        if self.long_layers and self.exact_length is None:
            raise ValueError(
                "long_layers=True: long layers are read by rows of more than exact_length real tokens; set "
                "exact_length"
            )
        options = self.linformer_options()
        k = options.projected_length  # normalised: plain ints, a per-layer tuple becomes the JSON list
        self.projected_length = list(k) if isinstance(k, tuple) else k
        w = options.local_window
        self.local_window = list(w) if isinstance(w, tuple) else w
        options.check_model(
            self.max_seq_len,
            self.num_hidden_layers,
            where=f"the longest input, from max_position_embeddings={self.max_position_embeddings}, "
            f"position_style={self.position_style!r}",
        )

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
        if self.num_labels is None or self.num_labels < 1:
            raise ValueError(f"num_labels must be >= 1, got {self.num_labels}")


__all__ = [
    "CLASSIFIER_POOLINGS", "LAYER_NORMS", "POSITION_STYLES", "ClassifierPooling", "LayerNormPosition",
    "LinformerConfig", "PositionStyle", "parse_projected_length",
]  # fmt: skip
