"""Sequence classification finetuning (single sentences or pairs) of a pretrained model directory.

    CSV / TSV / JSONL files, a Hub dataset or a GLUE task ──▶ Dataset[text(, pair), label]
        ──model's tokenizer (truncate to max_length)──▶ DataCollatorWithPadding ──▶ Trainer
        ──▶ output_dir/{model.safetensors, config.json, tokenizer, metrics.json, README.md}

The classification head is new (`AutoModelForSequenceClassification.from_pretrained` on an MLM
directory drops the LM head and initialises the classifier); batches are padded to their longest
member, which Linformer handles exactly (pads are masked before the E/F projection).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import datasets
import numpy as np
import torch
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    EvalPrediction,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)

from linformer_kit.train.data import TABLE_SUFFIXES, _has_suffix
from linformer_kit.train.publish import limit_tokenizer, publish
from linformer_kit.train.throughput import ThroughputCallback

GlueTask = Literal["sst2", "cola", "mrpc", "qnli", "qqp", "rte", "mnli", "wnli"]
# task -> (text column, pair column, dev split) in the Hub's "nyu-mll/glue"
GLUE_TASKS: dict[str, tuple[str, str | None, str]] = {
    "sst2": ("sentence", None, "validation"),
    "cola": ("sentence", None, "validation"),
    "mrpc": ("sentence1", "sentence2", "validation"),
    "qnli": ("question", "sentence", "validation"),
    "qqp": ("question1", "question2", "validation"),
    "rte": ("sentence1", "sentence2", "validation"),
    "mnli": ("premise", "hypothesis", "validation_matched"),
    "wnli": ("sentence1", "sentence2", "validation"),
}
LOCAL_SUFFIXES = (*TABLE_SUFFIXES, ".jsonl", ".jsonl.gz", ".json")


@dataclass
class FinetuneConfig:
    """Everything `finetune` needs; checked once, on construction (ValueError names the bad value).

    Data comes from exactly one of: local `train` + `validation` files (CSV, TSV, JSON lines), a Hub
    `dataset` "NAME[:CONFIG]" (splits "train" / "validation"), or a `glue_task` (columns preset).
    """

    model: str  # a model directory (from `linformer pretrain`, `linformer convert`, or any encoder)
    output_dir: str
    train: str | None = None
    validation: str | None = None
    dataset: str | None = None
    glue_task: GlueTask | None = None
    text_column: str = "sentence"
    text_pair_column: str | None = None  # second sentence for pair tasks (QNLI, QQP, MNLI, ...)
    label_column: str = "label"
    max_length: int | None = None  # tokens per example; None: min(128, the model's longest input)
    max_steps: int | None = None  # None: train for `epochs`
    epochs: float = 3.0
    max_train_samples: int | None = None  # a seeded random subset of the training split
    batch_size: int = 32
    learning_rate: float = 5e-5
    weight_decay: float = 0.01
    warmup: float = 0.06
    seed: int = 42
    progress: bool = True
    extra_training_args: dict = field(default_factory=dict)  # any other TrainingArguments field
    callbacks: list[TrainerCallback] = field(default_factory=list)  # extra Trainer callbacks

    def __post_init__(self) -> None:
        sources = [
            self.train is not None or self.validation is not None,
            self.dataset is not None,
            self.glue_task is not None,
        ]
        if sum(sources) != 1:
            raise ValueError(
                "give the data one way: --train and --validation files, --dataset, or --glue-task"
            )
        if sources[0]:
            for what, path in (("train", self.train), ("validation", self.validation)):
                if path is None:
                    raise ValueError(f"{what}: missing; local data needs both --train and --validation")
                if not Path(path).is_file():
                    raise ValueError(f"{what}: no such file: {path!r}")
                if not _has_suffix(path, LOCAL_SUFFIXES):
                    raise ValueError(f"{what}: {path!r} is not a .csv / .tsv / .jsonl / .json file")
        if self.glue_task is not None:
            if self.glue_task not in GLUE_TASKS:
                raise ValueError(f"glue_task must be one of {tuple(GLUE_TASKS)}, got {self.glue_task!r}")
            self.text_column, self.text_pair_column, _ = GLUE_TASKS[self.glue_task]
        if not (Path(self.model) / "config.json").is_file():
            raise ValueError(f"model: {self.model!r} is not a model directory (no config.json)")
        if self.max_length is not None:
            model_config = AutoConfig.from_pretrained(self.model)
            limit = model_config.max_position_embeddings - (model_config.pad_token_id or 0) - 1
            if not 2 <= self.max_length <= limit:
                raise ValueError(
                    f"max_length={self.max_length} must be between 2 and the model's longest input {limit}"
                )
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps={self.max_steps} must be >= 1")
        if self.epochs <= 0 or self.batch_size < 1:
            raise ValueError(f"epochs={self.epochs} and batch_size={self.batch_size} must be > 0")
        if self.max_train_samples is not None and self.max_train_samples < 1:
            raise ValueError(f"max_train_samples={self.max_train_samples} must be >= 1")


@dataclass
class FinetuneResult:
    output_dir: str
    steps: int
    train_loss: float
    eval_loss: float
    accuracy: float  # on the validation (dev) split
    f1: float | None  # binary tasks: F1 of label id 1
    tokens_per_second: float | None  # real (non-pad) training tokens per wall-clock second
    num_labels: int
    train_examples: int
    eval_examples: int


def load_splits(config: FinetuneConfig) -> tuple[datasets.Dataset, datasets.Dataset]:
    if config.glue_task is not None:
        dev_split = GLUE_TASKS[config.glue_task][2]
        data = datasets.load_dataset("nyu-mll/glue", config.glue_task)
        return data["train"], data[dev_split]
    if config.dataset is not None:
        name, _, subset = config.dataset.partition(":")
        data = datasets.load_dataset(name, subset or None)
        return data["train"], data["validation"]
    return _load_table(config.train, "train"), _load_table(config.validation, "validation")


def _load_table(path: str, what: str) -> datasets.Dataset:
    if _has_suffix(path, (".tsv", ".tsv.gz")):  # GLUE TSVs quote nothing: a " is just a character
        return datasets.load_dataset("csv", data_files=path, delimiter="\t", quoting=3, split="train")
    if _has_suffix(path, (".csv", ".csv.gz")):
        return datasets.load_dataset("csv", data_files=path, split="train")
    return datasets.load_dataset("json", data_files=path, split="train")


def check_columns(config: FinetuneConfig, train: datasets.Dataset, dev: datasets.Dataset) -> None:
    wanted = [config.text_column, config.label_column] + (
        [config.text_pair_column] if config.text_pair_column else []
    )
    for what, split in (("train", train), ("validation", dev)):
        missing = [column for column in wanted if column not in split.column_names]
        if missing:
            raise ValueError(
                f"{what}: no column {missing} (columns: {split.column_names}); "
                f"set --text-column / --text-pair-column / --label-column"
            )
        if len(split) == 0:
            raise ValueError(f"{what}: no examples")


def label_mapping(config: FinetuneConfig, train: datasets.Dataset, dev: datasets.Dataset) -> dict:
    """label value -> class id: sorted distinct training labels (0..C-1 integers map to themselves)."""
    values = sorted(set(train[config.label_column]))
    label2id = {value: index for index, value in enumerate(values)}
    unseen = sorted(set(dev[config.label_column]) - set(values), key=str)
    if unseen:
        raise ValueError(
            f"validation: labels {unseen[:5]} never occur in train (train labels: {values[:10]})"
        )
    if len(values) < 2:
        raise ValueError(f"train: only one label value {values}; classification needs at least two")
    return label2id


def compute_metrics(prediction: EvalPrediction) -> dict[str, float]:
    predicted = np.argmax(prediction.predictions, axis=-1)
    labels = prediction.label_ids
    metrics = {"accuracy": float((predicted == labels).mean())}
    if prediction.predictions.shape[-1] == 2:
        true_positive = float(((predicted == 1) & (labels == 1)).sum())
        precision_denominator, recall_denominator = float((predicted == 1).sum()), float((labels == 1).sum())
        metrics["f1"] = 2 * true_positive / max(precision_denominator + recall_denominator, 1.0)
    return metrics


def finetune(config: FinetuneConfig) -> FinetuneResult:
    """Finetune `config.model` for sequence classification; save it with metrics.json; return dev metrics."""
    train, dev = load_splits(config)
    check_columns(config, train, dev)
    label2id = label_mapping(config, train, dev)
    if config.max_train_samples is not None and len(train) > config.max_train_samples:
        train = train.shuffle(seed=config.seed).select(range(config.max_train_samples))

    tokenizer = AutoTokenizer.from_pretrained(config.model)
    model_config = AutoConfig.from_pretrained(config.model)
    longest = model_config.max_position_embeddings - (model_config.pad_token_id or 0) - 1
    max_length = config.max_length or min(128, longest)

    def encode(batch: dict[str, list]) -> dict[str, list]:
        pair = batch[config.text_pair_column] if config.text_pair_column else None
        encoded = tokenizer(batch[config.text_column], pair, truncation=True, max_length=max_length)
        encoded["labels"] = [label2id[value] for value in batch[config.label_column]]
        return encoded

    train = train.map(encode, batched=True, remove_columns=train.column_names, desc="tokenize train")
    dev = dev.map(encode, batched=True, remove_columns=dev.column_names, desc="tokenize validation")

    id2label = {index: str(value) for value, index in label2id.items()}
    set_seed(config.seed)  # the new classifier's initial weights
    model = AutoModelForSequenceClassification.from_pretrained(
        config.model,
        num_labels=len(label2id),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    limit_tokenizer(tokenizer, model.config)  # saved with the model: pipelines truncate to what runs
    args = TrainingArguments(
        output_dir=config.output_dir,
        max_steps=config.max_steps or -1,
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup,
        eval_strategy="no",
        save_strategy="no",  # the final model only; `linformer pretrain` is the long, resumable job
        logging_steps=50,
        seed=config.seed,
        data_seed=config.seed,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning is CUDA-only; silences a CPU warning
        report_to=[],
        include_num_input_tokens_seen="non_padding",
        disable_tqdm=not config.progress,
        **config.extra_training_args,
    )
    throughput = ThroughputCallback()
    trainer = Trainer(
        model=model,
        args=args,
        data_collator=DataCollatorWithPadding(tokenizer),
        train_dataset=train,
        eval_dataset=dev,
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
        callbacks=[throughput, *config.callbacks],
    )
    train_loss = trainer.train().training_loss
    metrics = trainer.evaluate()
    trainer.save_model()

    result = FinetuneResult(
        output_dir=config.output_dir,
        steps=trainer.state.global_step,
        train_loss=train_loss,
        eval_loss=metrics["eval_loss"],
        accuracy=metrics["eval_accuracy"],
        f1=metrics.get("eval_f1"),
        tokens_per_second=throughput.tokens_per_second(),
        num_labels=len(label2id),
        train_examples=len(train),
        eval_examples=len(dev),
    )
    publish(trainer, "text-classification", asdict(result), asdict(config))  # metrics.json, README.md
    return result
