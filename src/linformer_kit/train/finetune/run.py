"""Sequence classification (single sentences or pairs): finetune a pretrained model, or train a new one.

    CSV / TSV / JSONL files, a Hub dataset or a GLUE task ──▶ Dataset[text(, pair), label]
        ──model's tokenizer, or a new one (truncate to max_length)──▶ DataCollatorWithPadding ──▶ Trainer
        ──▶ output_dir/{model.safetensors, config.json, tokenizer, metrics.json, README.md}

With `model` (a directory) the classification head is new (`AutoModelForSequenceClassification.
from_pretrained` on an MLM directory drops the LM head and initialises the classifier). With `preset`
the whole Linformer is new: a preset's shape with the Linformer options of `NewModelFields`, learned
positions for max_length tokens, and the tokenizer `tokenizer` names (UTF-8 bytes, the words of the
training data, or a saved one: train/finetune/tokenizer_kinds.py), saved with the model. Batches are
padded to their longest member, which Linformer handles exactly (pads are masked before the E/F
projection, and `classifier_pooling="mean"` averages over real tokens only).

This module is the run; the package, `linformer_kit.train.finetune`, re-exports its `__all__` (the
pieces' public names among them). The pieces, beside it in train/finetune/:

    train/finetune/config.py     FinetuneConfig: the options, their values checked on construction
    train/finetune/preflight.py  the files and folders it names, checked at the start of the run
    train/finetune/data.py       the splits, their columns, labels -> classes
    train/finetune/trainer.py    tokenizer, classifier, what trains, the dev metrics
    train/finetune/report.py     FinetuneResult, eval_predictions.jsonl
    train/finetune/tokenizer_kinds.py  a new model's tokenizer: bytes, words, ListOps words, a folder
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

from transformers import DataCollatorWithPadding, TrainerCallback

from linformer_kit.train.curve import CurveCallback
from linformer_kit.train.finetune.config import GLUE_TASKS, FinetuneConfig
from linformer_kit.train.finetune.data import (
    check_columns,
    is_regression,
    label_fields,
    label_mapping,
    load_splits,
    load_table,
    sample_splits,
    tokenized,
)
from linformer_kit.train.finetune.report import FinetuneResult, write_predictions
from linformer_kit.train.finetune.trainer import (
    build_classifier,
    compute_metrics,
    freeze_encoder,
    freeze_projections,
    load_tokenizer,
    regression_metrics,
)
from linformer_kit.train.guards import GuardedTrainer, guarded_run
from linformer_kit.train.publish import limit_tokenizer, publish
from linformer_kit.train.throughput import ThroughputCallback

__all__ = [
    "GLUE_TASKS",
    "FinetuneConfig",
    "FinetuneResult",
    "build_classifier",
    "finetune",
    "load_table",
    "sample_splits",
]


def finetune(config: FinetuneConfig, callbacks: Sequence[TrainerCallback] = ()) -> FinetuneResult:
    """Finetune `config.model` for sequence classification; save it with metrics.json; return dev metrics.

    `callbacks` are extra `TrainerCallback`s, after our own. Lock, preemption, non-finite loss and a full
    disk are handled as in `pretrain` (train/guards.py).
    """
    return guarded_run(config, FinetuneResult, lambda: _finetune(config, callbacks))


def _finetune(config: FinetuneConfig, callbacks: Sequence[TrainerCallback]) -> FinetuneResult:
    train, dev = load_splits(config)
    check_columns(config, train, dev)
    regression = is_regression(config, train)  # float scores: one output, MSE loss, Pearson / Spearman
    label2id = {} if regression else label_mapping(config, train, dev)
    train, dev = sample_splits(train, dev, config.max_train_samples, config.max_eval_samples, config.seed)
    tokenizer = load_tokenizer(config, train)
    train = tokenized(config, tokenizer, train, label2id, "train")
    dev = tokenized(config, tokenizer, dev, label2id, "validation")

    labels = label_fields(label2id)
    model = build_classifier(config, tokenizer, labels)
    if config.tune == "classifier":
        freeze_encoder(model)
    elif config.tune == "all-but-projections":
        freeze_projections(model)
    limit_tokenizer(tokenizer, model.config)  # saved with the model: pipelines truncate to what runs
    throughput = ThroughputCallback()
    trainer = GuardedTrainer(
        model=model,
        args=config,
        data_collator=DataCollatorWithPadding(tokenizer),
        train_dataset=train,
        eval_dataset=dev,
        processing_class=tokenizer,
        compute_metrics=regression_metrics if regression else compute_metrics,
        callbacks=[throughput, CurveCallback(), *callbacks],  # CurveCallback: log_history.jsonl as it grows
    )
    train_loss = trainer.train(resume_from_checkpoint=config.resume_from_checkpoint).training_loss
    prediction = trainer.predict(dev, metric_key_prefix="eval")  # metrics and per-example predictions
    trainer.save_model()

    metrics = prediction.metrics
    assert metrics is not None  # Trainer.predict computes them (typed optional)
    result = FinetuneResult(
        output_dir=config.output_dir,
        steps=trainer.state.global_step,
        train_loss=train_loss,
        eval_loss=metrics["eval_loss"],
        accuracy=metrics.get("eval_accuracy"),
        f1=metrics.get("eval_f1"),
        tokens_per_second=throughput.tokens_per_second(),
        num_labels=labels["num_labels"],
        train_examples=len(train),
        eval_examples=len(dev),
        pearson=metrics.get("eval_pearson"),
        spearman=metrics.get("eval_spearman"),
        resumed_from_step=trainer.resumed_from_step,
    )
    publish(trainer, "text-classification", asdict(result), config.to_dict())  # metrics.json, README.md
    if trainer.is_world_process_zero():
        write_predictions(config.output_dir, dev, prediction, regression)
    return result
