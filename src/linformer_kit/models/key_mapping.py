"""Which RoBERTa / BERT weight and config field becomes which Linformer one.

The Linformer keeps RoBERTa's parameter names, so conversion is a key mapping:

    roberta.* / roberta_prelayernorm.* / bert.* -> linformer.*
    *.attention.output.dense.*                  -> *.attention.self.dense.*   (output linear)
    BERT MLM: cls.predictions.transform.dense   -> lm_head.dense
              cls.predictions.transform.LayerNorm -> lm_head.layer_norm
              cls.predictions.decoder / .bias   -> lm_head.decoder / lm_head.bias
    BERT sequence classification: bert.pooler.dense -> classifier.dense, classifier -> classifier.out_proj
              (BERT's pooler + classifier is RoBERTa's head: tanh(dense(first token)) then a linear)

Every source tensor maps onto a Linformer tensor, and every Linformer tensor but the projections E, F
(`is_projection_key`) comes from the source: anything else is a ValueError, never a silent gap.
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel

from linformer_kit.models.configuration_linformer import LayerNormPosition
from linformer_kit.models.linformer_heads import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
)
from linformer_kit.models.modeling_linformer import LinformerModel, LinformerPreTrainedModel

SourceFamily = Literal["roberta", "bert"]

# model_type -> (family, state-dict prefix, LayerNorm layout)
SOURCE_TYPES: dict[str, tuple[SourceFamily, str, LayerNormPosition]] = {
    "roberta": ("roberta", "roberta", "post"),
    "roberta-prelayernorm": ("roberta", "roberta_prelayernorm", "pre"),
    "bert": ("bert", "bert", "post"),
}
# the head of each source class, as the Linformer class that has it (the head decides, not the family)
HEADS: dict[str, type[LinformerPreTrainedModel]] = {
    "Model": LinformerModel,
    "ForMaskedLM": LinformerForMaskedLM,
    "ForSequenceClassification": LinformerForSequenceClassification,
    "ForTokenClassification": LinformerForTokenClassification,
}
# source class name -> Linformer class
TARGETS: dict[str, type[LinformerPreTrainedModel]] = {
    f"{family}{head}": target
    for family in ("Roberta", "RobertaPreLayerNorm", "Bert")
    for head, target in HEADS.items()
}
# RoBERTa config fields that carry over unchanged (BERT uses the same names)
COPIED_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
    "type_vocab_size", "initializer_range", "layer_norm_eps", "pad_token_id", "bos_token_id",
    "eos_token_id", "classifier_dropout", "tie_word_embeddings", "id2label", "label2id", "problem_type",
)  # fmt: skip
# the modules that hold E / F: per layer (`attention.self.*`), or one per encoder under layerwise sharing
PROJECTION_MODULES = ("key_projection", "value_projection", "kv_projection", "encoder.projection")


def is_projection_key(name: str) -> bool:
    """Whether a state-dict key belongs to a projection E / F (what conversion adds; all else is copied)."""
    return any(f"{module}." in name for module in PROJECTION_MODULES)


def copied_fields(source: PreTrainedConfig) -> dict[str, Any]:
    """The fields of a RoBERTa / BERT config that a Linformer config keeps, refusing a source whose
    positions or direction a Linformer does not have (ValueError naming the field)."""
    if getattr(source, "position_embedding_type", "absolute") not in ("absolute", None):
        raise ValueError(
            f"only absolute position embeddings convert, got position_embedding_type={source.position_embedding_type!r}"
        )
    if getattr(source, "is_decoder", False):
        raise ValueError("is_decoder=True (causal) models cannot be converted: Linformer is bidirectional")
    return {name: getattr(source, name) for name in COPIED_FIELDS if hasattr(source, name)}


def mapped_state(source: PreTrainedModel, target: LinformerPreTrainedModel) -> dict[str, torch.Tensor]:
    """The source's state dict under the Linformer's names (module docstring)."""
    model_type = source.config.model_type
    if (
        model_type == "bert"
        and isinstance(target, LinformerForMaskedLM)
        and source.config.hidden_act != "gelu"
    ):
        raise ValueError(
            f"BERT's MLM head uses hidden_act={source.config.hidden_act!r}, the Linformer (RoBERTa) head uses gelu"
        )
    return {_renamed(key, model_type, target): value for key, value in source.state_dict().items()}


def check_mapped(result: Any) -> None:
    """ValueError unless `load_state_dict(mapped, strict=False)` left only E, F to start (module docstring)."""
    unexpected = [
        key for key in result.unexpected_keys if not key.endswith(("position_ids", "token_type_ids"))
    ]
    missing = [key for key in result.missing_keys if not is_projection_key(key)]
    if unexpected or missing:
        raise ValueError(f"weights do not map onto the Linformer: unexpected {unexpected}, missing {missing}")


def _renamed(key: str, model_type: str, target: nn.Module) -> str:
    """Source state-dict key -> Linformer key (see the module docstring)."""
    family, prefix, _ = SOURCE_TYPES[model_type]
    key = key.replace(".attention.output.dense.", ".attention.self.dense.")
    if key.startswith(f"{prefix}."):
        key = "linformer." + key[len(prefix) + 1 :]
    if family == "bert":
        key = key.replace("cls.predictions.transform.dense.", "lm_head.dense.")
        key = key.replace("cls.predictions.transform.LayerNorm.", "lm_head.layer_norm.")
        key = key.replace("cls.predictions.decoder.", "lm_head.decoder.")
        key = key.replace("cls.predictions.bias", "lm_head.bias")
        if isinstance(target, LinformerForSequenceClassification):
            key = key.replace("linformer.pooler.dense.", "classifier.dense.")
            if key.startswith("classifier.") and not key.startswith("classifier.dense."):
                key = "classifier.out_proj." + key[len("classifier.") :]
    return key


__all__ = [
    "SOURCE_TYPES",
    "TARGETS",
    "SourceFamily",
    "check_mapped",
    "copied_fields",
    "is_projection_key",
    "mapped_state",
]
