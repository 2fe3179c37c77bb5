"""The pieces of a finetuning run's Trainer: tokenizer, classifier, what trains, and the dev metrics."""

from __future__ import annotations

import logging
from typing import Any

import datasets
import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    EvalPrediction,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    set_seed,
)

from linformer_kit.models import LinformerForSequenceClassification
from linformer_kit.models.folder_checks import read_config_json
from linformer_kit.models.loading import load_pretrained
from linformer_kit.nn.attention import LinformerSelfAttention
from linformer_kit.train.finetune.config import FinetuneConfig
from linformer_kit.train.finetune.tokenizer_kinds import new_model_tokenizer

logger = logging.getLogger("linformer_kit.train.finetune")  # the run's logger: its lines keep their name


def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
    logits, labels = np.asarray(prediction.predictions), np.asarray(prediction.label_ids)  # (one array each)
    predicted = np.argmax(logits, axis=-1)
    metrics = {"accuracy": float((predicted == labels).mean())}
    if logits.shape[-1] == 2:
        true_positive = float(((predicted == 1) & (labels == 1)).sum())
        precision_denominator, recall_denominator = float((predicted == 1).sum()), float((labels == 1).sum())
        metrics["f1"] = 2 * true_positive / max(precision_denominator + recall_denominator, 1.0)
    return metrics


def regression_metrics(prediction: EvalPrediction) -> dict[str, float]:
    """Pearson and Spearman correlation (GLUE's STS-B metrics) and the mean squared error."""
    predicted = np.asarray(prediction.predictions, dtype=np.float64).reshape(-1)
    target = np.asarray(prediction.label_ids, dtype=np.float64).reshape(-1)
    return {
        "pearson": _correlation(predicted, target),
        "spearman": _correlation(_ranks(predicted), _ranks(target)),
        "mse": float(np.mean((predicted - target) ** 2)),
    }


def _correlation(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    denominator = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / denominator) if denominator > 0 else 0.0


def _ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing their average rank (what Spearman's correlation ranks by)."""
    _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    ends = np.cumsum(counts)
    return (ends - (counts - 1) / 2.0)[inverse]


def linformer_options(config: FinetuneConfig) -> dict[str, Any]:
    """Config overrides for a Linformer model (saved with the classifier, so inference matches)."""
    assert config.model is not None  # (called for a --model only)
    if read_config_json(config.model).get("model_type") != "linformer":
        return {}
    pooling = {} if config.classifier_pooling is None else {"classifier_pooling": config.classifier_pooling}
    # given: they replace the model's own (a window or global tokens add no weights)
    local = {name: getattr(config, name) for name in config.changed_local_options()}
    return {"short_inputs": config.short_inputs, **pooling, **local}


def load_tokenizer(config: FinetuneConfig, train: datasets.Dataset) -> PreTrainedTokenizerBase:
    """The model's tokenizer, or a new model's (`config.tokenizer`; "word" learns the words of `train`)."""
    if config.model is not None:
        try:
            return AutoTokenizer.from_pretrained(config.model)
        except (OSError, ValueError) as error:
            raise ValueError(
                f"model: cannot load the tokenizer in {config.model!r}: {str(error).splitlines()[0]}"
            ) from None
    columns = [config.text_column] + ([config.text_pair_column] if config.text_pair_column else [])
    assert config.tokenizer is not None  # a new model's: __post_init__ requires it
    tokenizer = new_model_tokenizer(config.tokenizer, (text for c in columns for text in train[c]))
    if tokenizer.pad_token_id is None:  # batches are padded to their longest example
        raise ValueError(f"tokenizer: {config.tokenizer!r} has no pad token; a classifier pads its batches")
    return tokenizer


def build_classifier(
    config: FinetuneConfig, tokenizer: PreTrainedTokenizerBase, labels: dict
) -> PreTrainedModel:
    """The model to train: `config.model` with a new head, or a new Linformer (`config.preset`).

    A new model's vocabulary and pad id are the tokenizer's. `labels` are the config fields num_labels,
    id2label, label2id and problem_type.
    """
    set_seed(config.seed)  # the new classifier's (or model's) initial weights
    if config.model is not None:
        # every encoder weight from the checkpoint: a config.json of another model type is an error
        return load_pretrained(
            AutoModelForSequenceClassification, config.model, "model", **labels, **linformer_options(config)
        )
    assert config.preset is not None  # no --model: __post_init__ requires a preset
    model_config = config.new_model_config(
        config.preset, config.new_model_length, vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, **config.new_classifier_options(), **labels,
    )  # fmt: skip
    return LinformerForSequenceClassification(model_config)  # E, F start per model_config.projection_init


def freeze_encoder(model: PreTrainedModel) -> None:
    """`tune="classifier"`: every weight of the encoder (`model.base_model`) stops training; the head trains.

    The encoder's weights are saved unchanged with the head (tests/train/test_finetune.py checks both).
    """
    for parameter in model.base_model.parameters():
        parameter.requires_grad_(False)
    trained = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    logger.info(
        f"tune=classifier: training the task head, {trained:,} of {total:,} parameters (encoder frozen)"
    )


def freeze_projections(model: PreTrainedModel) -> None:
    """`tune="all-but-projections"`: E and F of every layer keep their loaded values; the rest trains.

    Separates what finetuning does through the projections from what it does elsewhere. A model with no
    learned projection (full attention, pooling) is refused: nothing would differ from `tune="all"`.
    """
    attentions = [m for m in model.modules() if isinstance(m, LinformerSelfAttention)]
    frozen = list({id(p): p for m in attentions for p in _projection_weights(m)}.values())  # layerwise: one E
    if not frozen:
        raise ValueError(
            f"tune='all-but-projections' needs learned projections (E, F); this {model.config.model_type} "
            "model has none (full attention, or a pooling projection): use tune='all'"
        )
    for parameter in frozen:
        parameter.requires_grad_(False)
    logger.info(f"tune=all-but-projections: E and F frozen, {sum(p.numel() for p in frozen):,} parameters")


def _projection_weights(attention: LinformerSelfAttention) -> list[torch.nn.Parameter]:
    projections = attention.projections() or ()  # E is F under kv / layerwise sharing: parameters dedupe
    return [p for projection in projections for p in projection.parameters()]
