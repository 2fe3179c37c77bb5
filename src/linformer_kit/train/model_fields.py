"""The fields that shape a new model, defined once for `linformer pretrain`, `finetune --preset` and `distill`.

    @dataclass
    class PretrainConfig(NewModelFields, LinformerTrainingArguments): ...   # flags --projected-length, ...

    config.new_model_config("tiny", longest_input=512, vocab_size=261, pad_token_id=1)  # a LinformerConfig

The Linformer options are `nn/options.py`'s (`option_field`: its default, help text and checks), the
encoder shapes `models/presets.py`'s. `ConversionFields` holds the options a conversion sets (distill's
student takes those); `NewModelFields` adds the ones a new model alone takes (projection scaling, dropout,
attention dropout, LayerNorm placement) and builds the `LinformerConfig`, so both training verbs build a
new model the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linformer_kit.models import LinformerConfig
from linformer_kit.models.config_rules import position_rows
from linformer_kit.models.configuration_linformer import LayerNormPosition
from linformer_kit.models.conversion import CONVERSION_OPTIONS
from linformer_kit.models.presets import PRESETS, EncoderShape, Preset
from linformer_kit.nn.options import (
    ProjectionInit,
    ProjectionKind,
    ProjectionScaling,
    Sharing,
    check_projected_length,
    option_field,
    parse_per_layer,
)
from linformer_kit.train.training_arguments import check_number

# The attention's local part beside the projection (nn/local.py) and the exact rows (nn/exact_rows.py) add no
# weights, so they also apply to a trained Linformer (finetune --model), whose other options its weights fix.
LOCAL_OPTIONS = ("local_window", "global_tokens", "exact_length")
PER_LAYER_OPTIONS = ("projected_length", "local_window")  # one value, or one per layer: k's grammar


@dataclass
class ConversionFields:
    """The Linformer options of a model made from another (a conversion's: models/conversion.py, `Conversion`),
    a mixin of the configs that take them: a new model's (`NewModelFields`), distill's student.

    `projected_length` and `local_window` are `int | list[int | None] | None` after `_parse_option_text` (a
    str is the command-line form "128", "256,128", "none").
    """

    # k = 128: a quarter of a 512-token input (pretrain's seq_len, finetune's new-model max_length), the
    # paper's n/k at n = 512
    projected_length: int | str | list[int] | None = option_field("projected_length", default=128)
    sharing: Sharing = option_field("sharing")
    projection: ProjectionKind = option_field("projection")
    projection_init: ProjectionInit = option_field("projection_init", note="new models only")
    local_window: int | str | list[int | None] | None = option_field("local_window")
    global_tokens: int = option_field("global_tokens")
    exact_length: int | None = option_field("exact_length")

    def _parse_option_text(self) -> None:
        """The command-line (and config file) text of k and w, one grammar: '128', '256,128', 'none'."""
        for name in PER_LAYER_OPTIONS:
            if isinstance(getattr(self, name), str):
                setattr(self, name, parse_per_layer(name, getattr(self, name)))

    def conversion_options(self) -> dict[str, Any]:
        """The Linformer options that shape a new or converted model (init_from takes these, not the rest)."""
        return {name: getattr(self, name) for name in CONVERSION_OPTIONS}


@dataclass
class NewModelFields(ConversionFields):
    """Linformer options and encoder fields of a new model (a mixin of the training configs)."""

    projection_scaling: ProjectionScaling = option_field("projection_scaling", note="new models only")
    dropout: float = field(
        default=LinformerConfig.hidden_dropout_prob,
        metadata={
            "help": "dropout of hidden states, and of attention weights unless --attention-dropout is given "
            "(new models only; 0 for short runs)"
        },
    )
    # 0 lets PyTorch's fused attention kernel run (no n x k weights kept for the backward): a training step
    # of the lra preset at n = 2 000, k = 256 took 1.19 s instead of 2.70 s on 2 CPU cores (docs/lra.md)
    attention_dropout: float | None = field(
        default=None,
        metadata={
            "help": "dropout of attention weights (new models only; default: --dropout); 0 runs the fused "
            "attention kernel, ~2x faster on a CPU"
        },
    )
    layer_norm: LayerNormPosition = field(
        default=LinformerConfig.layer_norm,
        metadata={
            "help": "'post' (RoBERTa) or 'pre' (x + f(LN(x)): trains at higher learning rates; new models "
            "only)"
        },
    )

    def _check_model_fields(self) -> None:
        """The command-line form of k parsed, dropouts in [0, 1); the rest is `LinformerConfig`'s to check."""
        self._parse_option_text()
        check_number("dropout", self.dropout, 0, below=1)
        if self.attention_dropout is not None:
            check_number("attention_dropout", self.attention_dropout, 0, below=1)

    def _check_k_within(self, length: int, name: str) -> None:
        """Every int k within `length` tokens (the field `name`), named in the message as that field."""
        k = self.projected_length
        for layer_k in k if isinstance(k, list) else [k]:
            if isinstance(layer_k, int) and not isinstance(layer_k, bool):
                check_projected_length(layer_k, length, self.projection, where=name)

    def new_model_config(
        self, preset: Preset, longest_input: int, *, vocab_size: int, pad_token_id: int, **fields: Any
    ) -> LinformerConfig:
        """A new model: `preset`'s shape (not its vocab_size), these options, inputs up to `longest_input` long.

        RoBERTa's position numbering (from pad_token_id + 1, a Linformer's default), so the learned
        position table has longest_input + pad_token_id + 1 rows. `fields` are further `LinformerConfig`
        fields (short_inputs, num_labels, classifier_pooling, ...). ValueError names a bad value.
        """
        shape: EncoderShape = {**PRESETS[preset], "vocab_size": vocab_size}
        rows = position_rows({"model_type": "linformer", "pad_token_id": pad_token_id}, longest_input)
        return LinformerConfig(
            max_position_embeddings=rows,
            pad_token_id=pad_token_id, projection_scaling=self.projection_scaling, layer_norm=self.layer_norm,
            hidden_dropout_prob=self.dropout, attention_probs_dropout_prob=self.attention_dropout_prob,
            **shape, **self.conversion_options(), **fields,
        )  # fmt: skip

    @property
    def attention_dropout_prob(self) -> float:
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    def changed_model_fields(self) -> list[str]:
        """The fields of this mixin set to other than their defaults (they apply to new models only)."""
        defaults = NewModelFields()
        return [name for name in NEW_MODEL_FIELDS if getattr(self, name) != getattr(defaults, name)]


NEW_MODEL_FIELDS = tuple(NewModelFields.__dataclass_fields__)
