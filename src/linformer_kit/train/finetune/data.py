"""The data of a finetuning run: the two splits, read and checked, and how labels become classes."""

from __future__ import annotations

import math

import datasets
from transformers import PreTrainedTokenizerBase

from linformer_kit.data_files import explain_failure, has_suffix, line_of_row
from linformer_kit.models.config_rules import longest_input
from linformer_kit.models.folder_checks import read_config_json
from linformer_kit.train.data import load_hub_dataset
from linformer_kit.train.finetune.config import GLUE_TASKS, FinetuneConfig


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
    # __post_init__: the data one way, here both files
    assert config.train is not None
    assert config.validation is not None
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
    wanted = config.columns
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


def label_fields(label2id: dict) -> dict:
    """The config fields of the classifier's labels: num_labels, id2label, label2id, problem_type (no
    classes: regression, one output)."""
    id2label = {index: str(value) for value, index in label2id.items()} if label2id else {0: "score"}
    return dict(
        num_labels=len(id2label), id2label=id2label, label2id={v: k for k, v in id2label.items()},
        problem_type="single_label_classification" if label2id else "regression",
    )  # fmt: skip


def example_length(config: FinetuneConfig) -> int:
    """Tokens per example: max_length, else a new model's longest input or min(128, the model's)."""
    if config.model is None:
        return config.new_model_length
    return config.max_length or min(128, longest_input(read_config_json(config.model)))


def tokenized(
    config: FinetuneConfig,
    tokenizer: PreTrainedTokenizerBase,
    split: datasets.Dataset,
    label2id: dict,
    what: str,
) -> datasets.Dataset:
    """`split` as input ids (truncated to `example_length`) and labels: class ids, or the scores (no classes)."""
    length = example_length(config)

    def encode(batch: dict[str, list]) -> dict[str, list]:
        pair = batch[config.text_pair_column] if config.text_pair_column else None
        encoded = tokenizer(batch[config.text_column], pair, truncation=True, max_length=length)
        labels = batch[config.label_column]
        encoded["labels"] = [label2id[v] for v in labels] if label2id else [float(v) for v in labels]
        return encoded

    return split.map(encode, batched=True, remove_columns=split.column_names, desc=f"tokenize {what}")
