"""Sequence classification (single sentences or pairs): finetune a pretrained model, or train a new one.

    CSV / TSV / JSONL files, a Hub dataset or a GLUE task ──▶ Dataset[text(, pair), label]
        ──model's tokenizer, or a new one (truncate to max_length)──▶ DataCollatorWithPadding ──▶ Trainer
        ──▶ output_dir/{model.safetensors, config.json, tokenizer, metrics.json, README.md}

With `model` (a directory) the classification head is new (`AutoModelForSequenceClassification.
from_pretrained` on an MLM directory drops the LM head and initialises the classifier). With `preset`
the whole Linformer is new: a preset's shape with the Linformer options of `NewModelFields`, learned
positions for max_length tokens, and the tokenizer `tokenizer` names (UTF-8 bytes, the words of the
training data, or a saved one: train/tokenizer_kinds.py), saved with the model. Batches are padded to
their longest member, which Linformer handles exactly (pads are masked before the E/F projection, and
`classifier_pooling="mean"` averages over real tokens only).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, get_args

import datasets
import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    EvalPrediction,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    TrainerCallback,
    set_seed,
)

from linformer_kit.data_files import (
    check_data_file,
    explain_failure,
    has_examples,
    has_suffix,
    line_of_row,
    peek_columns,
)
from linformer_kit.models import CLASSIFIER_POOLINGS, ClassifierPooling, LinformerForSequenceClassification
from linformer_kit.models.loading import check_model_dir, load_pretrained, longest_input, read_config_json
from linformer_kit.models.presets import PRESETS
from linformer_kit.nn import SHORT_INPUTS, ShortInputs
from linformer_kit.nn.attention import LinformerSelfAttention
from linformer_kit.nn.options import check_choice, option_field
from linformer_kit.output_dir import is_same_or_inside
from linformer_kit.train.curve import CurveCallback
from linformer_kit.train.data import TABLE_SUFFIXES, load_hub_dataset
from linformer_kit.train.guards import GuardedTrainer, guarded_run
from linformer_kit.train.model_fields import NewModelFields, Preset
from linformer_kit.train.publish import limit_tokenizer, publish
from linformer_kit.train.throughput import ThroughputCallback
from linformer_kit.train.tokenizer_kinds import TOKENIZER_KINDS, check_tokenizer_source, new_model_tokenizer
from linformer_kit.train.training_arguments import LinformerTrainingArguments, check_number, trainer_default

GlueTask = Literal["sst2", "cola", "mrpc", "qnli", "qqp", "rte", "mnli", "wnli"]
# what finetuning trains: every weight; the task head alone on the frozen encoder (a probe of what the
# pretrained representation holds, separated from what finetuning the encoder adds); or every weight but E, F
Tune = Literal["all", "classifier", "all-but-projections"]
TUNES: tuple[str, ...] = get_args(Tune)
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
logger = logging.getLogger(__name__)
NEW_MODEL_LENGTH = 512  # a new model's longest input when max_length is absent: pretrain's seq_len, k = n/4


@dataclass
class FinetuneConfig(NewModelFields, LinformerTrainingArguments):
    """Everything `finetune` needs: the Trainer's arguments plus ours; checked once, on construction.

    A `TrainingArguments` subclass (see `train/training_arguments.py`): every Trainer field is set under its
    own name, and `linformer finetune`'s flags are generated from this class. The model is exactly one
    of: a `model` directory, or a new model of a `preset` shape with a `tokenizer` and the fields of
    `NewModelFields` (k, sharing, projection, dropout, layer_norm: pretrain's, train/model_fields.py).
    Data comes from exactly one of: local `train` + `validation` files (CSV, TSV, JSON lines), a Hub
    `dataset` "NAME[:CONFIG]" (splits "train" / "validation"), or a `glue_task` (columns preset).
    ValueError names the bad value.
    """

    # Trainer fields with finetuning defaults (learning rate and epochs: the Trainer's 5e-5 and 3)
    per_device_train_batch_size: int = trainer_default("per_device_train_batch_size", 32)
    # ours
    model: str | None = field(
        default=None,
        metadata={"help": "a model directory (from linformer pretrain / convert, or any encoder)"},
    )
    preset: Preset | None = field(
        default=None,
        metadata={
            "help": "instead of --model: train a new Linformer of this shape from scratch, tiny (64 wide, "
            "2 layers), mini (128 wide, 2 layers), small (256 wide, 4 layers) or base (RoBERTa-base), "
            "with --tokenizer and the new-model options (--projected-length, --sharing, --dropout, ...)"
        },
    )
    tokenizer: str | None = field(
        default=None,
        metadata={
            "help": "the tokenizer of a new model (--preset): 'bytes' (UTF-8 bytes, one id each), 'word' "
            "(the whitespace-separated words of the training data) or a saved tokenizer folder (e.g. a "
            "pretrain run's output)"
        },
    )
    classifier_pooling: ClassifierPooling | None = field(
        default=None,
        metadata={
            "help": "what the classifier reads: 'cls' (the first token, RoBERTa's) or 'mean' (the final "
            "hidden states averaged over real tokens); if absent, the model's own ('cls' for a new one); "
            "Linformer models only"
        },
    )
    tune: Tune = field(
        default="all",
        metadata={
            "help": "what trains: 'all' (every weight), 'classifier' (the task head alone; the encoder "
            "stays frozen: a probe of what its representation holds) or 'all-but-projections' (every "
            "weight but the Linformer's E and F, which keep their loaded values)"
        },
    )
    train: str | None = field(default=None, metadata={"help": "CSV / TSV / JSONL training file"})
    validation: str | None = field(
        default=None, metadata={"help": "CSV / TSV / JSONL dev file (accuracy is reported on it)"}
    )
    dataset: str | None = field(
        default=None, metadata={"help": "a Hub dataset NAME[:CONFIG] with train / validation splits"}
    )
    glue_task: GlueTask | None = field(
        default=None, metadata={"help": "a GLUE task from the Hub (columns preset)"}
    )
    text_column: str = field(default="sentence", metadata={"help": "column holding the (first) text"})
    text_pair_column: str | None = field(
        default=None, metadata={"help": "second sentence of pair tasks (QNLI, QQP, MNLI, ...)"}
    )
    label_column: str = field(default="label", metadata={"help": "column holding the label"})
    max_length: int | None = field(
        default=None,
        metadata={
            "help": "tokens per example; if absent, min(128, the model's longest input); with --preset also "
            f"the new model's longest input (its position table), if absent {NEW_MODEL_LENGTH}"
        },
    )
    # Finetuning's own default: "exact" (why: docs/reproduction.md); other encoders ignore the option
    short_inputs: ShortInputs = option_field(
        "short_inputs", default="exact", note="saved with the classifier; only Linformer models use it"
    )
    max_train_samples: int | None = field(
        default=None, metadata={"help": "train on a seeded random subset of this many examples"}
    )
    max_eval_samples: int | None = field(
        default=None,
        metadata={
            "help": "evaluate on a fixed random subset of this many dev examples (the same for every run)"
        },
    )

    @property
    def new_model_length(self) -> int:
        """The longest input of a new model (`preset`): max_length, or NEW_MODEL_LENGTH when absent."""
        return self.max_length or NEW_MODEL_LENGTH

    def _check_fields(self) -> None:
        """Ours, after output_dir and the Trainer numbers (`LinformerTrainingArguments.__post_init__`)."""
        if self.model is None and self.preset is None:
            raise ValueError(
                "model: missing; give the model directory to finetune (--model) or the shape of a new "
                "model to train from scratch (--preset)"
            )
        if self.model is not None and self.preset is not None:
            raise ValueError(
                f"model={self.model!r} and preset={self.preset!r}: give one, the model directory to "
                "finetune (--model) or the shape of a new model (--preset)"
            )
        self._check_model_fields()  # k's command-line form parsed, dropout
        sources = [
            self.train is not None or self.validation is not None,
            self.dataset is not None,
            self.glue_task is not None,
        ]
        if sum(sources) != 1:
            raise ValueError(
                "give the data one way: --train and --validation files, --dataset, or --glue-task"
            )
        if self.glue_task is not None:
            if self.glue_task not in GLUE_TASKS:
                raise ValueError(f"glue_task must be one of {tuple(GLUE_TASKS)}, got {self.glue_task!r}")
            self.text_column, self.text_pair_column, _ = GLUE_TASKS[self.glue_task]
        self._check_numbers()
        check_choice("short_inputs", self.short_inputs, SHORT_INPUTS)
        check_choice("tune", self.tune, TUNES)
        if self.classifier_pooling is not None:
            check_choice("classifier_pooling", self.classifier_pooling, CLASSIFIER_POOLINGS)
        if self.label_column in (self.text_column, self.text_pair_column):
            raise ValueError(
                f"text_column={self.text_column!r}, text_pair_column={self.text_pair_column!r} and "
                f"label_column={self.label_column!r} must be different columns"
            )
        if sources[0]:
            self._check_files()
        if self.model is not None:
            self._check_pretrained()
        else:
            self._check_new_model()

    def _check_pretrained(self) -> None:
        """`model` is a model directory with a tokenizer; the new-model fields are left alone."""
        check_model_dir(self.model, "model", tokenizer=True)  # a model without tokenizer sees only [UNK]
        local = ("local_window", "global_tokens")  # no new weights: they apply to a Linformer --model too
        new_only = ["tokenizer"] * (self.tokenizer is not None) + [
            name for name in self.changed_model_fields() if name not in local
        ]
        if new_only:
            raise ValueError(
                f"{', '.join(new_only)}: apply to a new model (--preset) only; --model {self.model!r} keeps "
                "its own shape and tokenizer"
            )
        saved = read_config_json(self.model)
        changed_local = [name for name in self.changed_model_fields() if name in local]
        if changed_local and saved.get("model_type") != "linformer":
            raise ValueError(
                f"{', '.join(changed_local)}: options of Linformer models; {self.model!r} is a "
                f"{saved.get('model_type')!r} model (convert it first: linformer convert --local-window ...)"
            )
        if self.classifier_pooling is not None and saved.get("model_type") != "linformer":
            raise ValueError(
                f"classifier_pooling={self.classifier_pooling!r} is an option of Linformer models; "
                f"{self.model!r} is a {saved.get('model_type')!r} model"
            )
        if self.max_length is not None:
            limit = longest_input(saved)
            if not 2 <= self.max_length <= limit:
                raise ValueError(
                    f"max_length={self.max_length} must be between 2 and the model's longest input {limit}"
                )

    def _check_new_model(self) -> None:
        """A known preset, a tokenizer kind or folder, and options that build a model of max_length tokens."""
        check_choice("preset", self.preset, tuple(PRESETS))
        if self.tokenizer is None:
            raise ValueError(
                f"tokenizer: missing; a new model (--preset {self.preset}) needs one of {TOKENIZER_KINDS} "
                "or a saved tokenizer folder (--tokenizer)"
            )
        check_tokenizer_source(self.tokenizer)
        check_number("max_length", self.max_length, 2, integer=True, optional=True,
                     why="room for <s> and </s>")  # fmt: skip
        self._check_k_within(self.new_model_length, "max_length")
        # LinformerConfig's checks of the options together (the vocabulary is the tokenizer's, known later)
        vocab_size = PRESETS[self.preset]["vocab_size"]
        self.new_model_config(self.preset, self.new_model_length, vocab_size=vocab_size, pad_token_id=1,
                              **self.new_classifier_options())  # fmt: skip

    def new_classifier_options(self) -> dict[str, str]:
        """`LinformerConfig` fields of a new classifier beyond `NewModelFields`' (saved with it)."""
        return {"short_inputs": self.short_inputs, "classifier_pooling": self.classifier_pooling or "cls"}

    def _check_numbers(self) -> None:
        if not isinstance(self.max_steps, int) or self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(f"max_steps={self.max_steps!r} must be -1 (train num_train_epochs) or > 0")
        check_number("max_train_samples", self.max_train_samples, 1, integer=True, optional=True)
        check_number("max_eval_samples", self.max_eval_samples, 1, integer=True, optional=True)

    def _check_files(self) -> None:
        """Both files exist, read as their suffix says, and hold the columns asked for."""
        wanted = [self.text_column, self.label_column] + (
            [self.text_pair_column] if self.text_pair_column else []
        )
        for what, path in (("train", self.train), ("validation", self.validation)):
            if path is None:
                raise ValueError(f"{what}: missing; local data needs both --train and --validation")
            if Path(path).is_dir():
                raise ValueError(f"{what}: {path!r} is a directory; give a .csv / .tsv / .jsonl file")
            if not Path(path).is_file():
                raise ValueError(f"{what}: no such file: {path!r}")
            if not has_suffix(path, LOCAL_SUFFIXES):
                raise ValueError(f"{what}: {path!r} is not a .csv / .tsv / .jsonl / .json file")
            check_data_file(path, what)
            if not has_examples(path):
                raise ValueError(f"{what}: {path!r} holds no examples (a header at most)")
            columns = peek_columns(path)
            missing = [c for c in wanted if columns is not None and c not in columns]
            if missing:
                raise ValueError(
                    f"{what}: no column {missing} in {path!r} (columns: {columns}); "
                    f"set --text-column / --text-pair-column / --label-column"
                )
        if Path(self.train).resolve() == Path(self.validation).resolve():
            raise ValueError(
                f"validation: {self.validation!r} is the training file: dev accuracy would be measured "
                "on the examples the model trained on"
            )

    def _what_output_dir_holds(self) -> str:
        inside = self.model is not None and is_same_or_inside(self.output_dir, self.model)
        return "the model to finetune" if inside else "another model"


@dataclass
class FinetuneResult:
    output_dir: str
    steps: int
    train_loss: float
    eval_loss: float
    accuracy: float | None  # on the validation (dev) split; None for regression
    f1: float | None  # binary tasks: F1 of label id 1
    tokens_per_second: float | None  # real (non-pad) training tokens per wall-clock second
    num_labels: int  # 1: regression
    train_examples: int
    eval_examples: int
    pearson: float | None = None  # regression: correlation of predictions and dev scores
    spearman: float | None = None
    resumed_from_step: int = 0  # --resume: the checkpoint's step (train_loss covers the steps after it)

    def metrics_text(self) -> str:
        """'dev accuracy 0.9100, F1 0.9000' or, for regression, 'dev Pearson 0.8500, Spearman 0.8400'."""
        if self.accuracy is None:
            return f"dev Pearson {self.pearson:.4f}, Spearman {self.spearman:.4f}"
        return f"dev accuracy {self.accuracy:.4f}" + (f", F1 {self.f1:.4f}" if self.f1 is not None else "")


def load_splits(config: FinetuneConfig) -> tuple[datasets.Dataset, datasets.Dataset]:
    if config.glue_task is not None:
        dev_split = GLUE_TASKS[config.glue_task][2]
        data = load_hub_dataset(f"nyu-mll/glue:{config.glue_task}", "glue_task")
        return data["train"], data[dev_split]
    if config.dataset is not None:
        data = load_hub_dataset(config.dataset, "dataset")
        missing = [split for split in ("train", "validation") if split not in data]
        if missing:
            raise ValueError(f"dataset: {config.dataset!r} has no {missing} split (splits: {list(data)})")
        return data["train"], data["validation"]
    return load_table(config.train, "train"), load_table(config.validation, "validation")


def sample_splits(
    train: datasets.Dataset, dev: datasets.Dataset, max_train: int | None, max_eval: int | None, seed: int
) -> tuple[datasets.Dataset, datasets.Dataset]:
    """A seeded random subset of train (seed: the run's) and a fixed one of dev (seed 0: one for all runs)."""
    if max_train is not None and len(train) > max_train:
        train = train.shuffle(seed=seed).select(range(max_train))
    if max_eval is not None and len(dev) > max_eval:
        dev = dev.shuffle(seed=0).select(range(max_eval))
    return train, dev


def load_table(path: str, what: str) -> datasets.Dataset:
    if has_suffix(path, (".tsv", ".tsv.gz")):  # GLUE TSVs quote nothing: a " is just a character
        builder, options = "csv", {"delimiter": "\t", "quoting": 3}
    elif has_suffix(path, (".csv", ".csv.gz")):
        builder, options = "csv", {}
    else:
        builder, options = "json", {}
    try:
        return datasets.load_dataset(builder, data_files=path, split="train", **options)
    except Exception as error:  # the loader names no file or line; explain_failure finds them
        raise explain_failure([path], what, error) from error


def check_columns(config: FinetuneConfig, train: datasets.Dataset, dev: datasets.Dataset) -> None:
    """The columns asked for exist, and no example lacks its text or label (an empty cell, a null)."""
    wanted = [config.text_column, config.label_column] + (
        [config.text_pair_column] if config.text_pair_column else []
    )
    for what, split, path in (("train", train, config.train), ("validation", dev, config.validation)):
        missing = [column for column in wanted if column not in split.column_names]
        if missing:
            raise ValueError(
                f"{what}: no column {missing} (columns: {split.column_names}); "
                f"set --text-column / --text-pair-column / --label-column"
            )
        if len(split) == 0:
            raise ValueError(f"{what}: no examples" + (f" in {path!r}" if path else ""))
        for column in wanted:
            row = next((i for i, value in enumerate(split[column]) if _is_empty(value)), None)
            if row is not None:
                where = f"{path!r}, line {line_of_row(path, row)}" if path else f"example {row}"
                raise ValueError(
                    f"{what}: {where}: empty {column!r} (every example needs its text and label)"
                )


def _is_empty(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or (
        isinstance(value, str) and not value.strip()
    )  # fmt: skip


def is_regression(config: FinetuneConfig, train: datasets.Dataset) -> bool:
    """Scores (STS-B style: 0.0 .. 5.0) rather than classes: numeric labels, some not whole numbers."""
    labels = train[config.label_column]
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in labels)
    return numeric and any(float(v) != int(v) for v in labels)


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


def linformer_options(config: FinetuneConfig) -> dict[str, object]:
    """Config overrides for a Linformer model (saved with the classifier, so inference matches)."""
    if read_config_json(config.model).get("model_type") != "linformer":
        return {}
    pooling = {} if config.classifier_pooling is None else {"classifier_pooling": config.classifier_pooling}
    local = {  # given: replace the model's own (a window or global tokens add no weights)
        name: getattr(config, name)
        for name in ("local_window", "global_tokens")
        if name in config.changed_model_fields()
    }
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
    if config.model is None:
        max_length = config.new_model_length
    else:
        max_length = config.max_length or min(128, longest_input(read_config_json(config.model)))

    def encode(batch: dict[str, list]) -> dict[str, list]:
        pair = batch[config.text_pair_column] if config.text_pair_column else None
        encoded = tokenizer(batch[config.text_column], pair, truncation=True, max_length=max_length)
        labels = batch[config.label_column]
        encoded["labels"] = [float(v) for v in labels] if regression else [label2id[v] for v in labels]
        return encoded

    train = train.map(encode, batched=True, remove_columns=train.column_names, desc="tokenize train")
    dev = dev.map(encode, batched=True, remove_columns=dev.column_names, desc="tokenize validation")

    id2label = {0: "score"} if regression else {index: str(value) for value, index in label2id.items()}
    labels = dict(
        num_labels=len(id2label), id2label=id2label, label2id={v: k for k, v in id2label.items()},
        problem_type="regression" if regression else "single_label_classification",
    )  # fmt: skip
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
    metrics = prediction.metrics
    trainer.save_model()

    result = FinetuneResult(
        output_dir=config.output_dir,
        steps=trainer.state.global_step,
        train_loss=train_loss,
        eval_loss=metrics["eval_loss"],
        accuracy=metrics.get("eval_accuracy"),
        f1=metrics.get("eval_f1"),
        tokens_per_second=throughput.tokens_per_second(),
        num_labels=len(id2label),
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


def write_predictions(output_dir: str, dev: datasets.Dataset, prediction, regression: bool = False) -> None:
    """eval_predictions.jsonl: per dev example its length in tokens, label id and predicted id
    (regression: the dev score and the predicted score).

    What accuracy-by-input-length needs (docs/reproduction.md), without running the model again.
    """
    if regression:
        predicted = np.asarray(prediction.predictions, dtype=np.float64).reshape(-1)
        labels = np.asarray(prediction.label_ids, dtype=np.float64).reshape(-1)
        cast = float
    else:
        predicted, labels, cast = np.argmax(prediction.predictions, axis=-1), prediction.label_ids, int
    with open(Path(output_dir) / "eval_predictions.jsonl", "w") as f:
        for ids, label, guess in zip(dev["input_ids"], labels, predicted):
            f.write(json.dumps({"tokens": len(ids), "label": cast(label), "predicted": cast(guess)}) + "\n")
