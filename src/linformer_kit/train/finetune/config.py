"""`FinetuneConfig`: what `linformer finetune` takes, with the checks of its values.

The flags of `linformer finetune` are generated from this class (cli/arguments.py). Its constructor
checks values only and reads no file; `preflight()` (called by `finetune` before any work) checks the
data files and the model or tokenizer folder it names (train/finetune/preflight.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from linformer_kit.models import CLASSIFIER_POOLINGS, ClassifierPooling
from linformer_kit.models.presets import PRESETS
from linformer_kit.nn import SHORT_INPUTS, ShortInputs
from linformer_kit.nn.options import check_choice, option_field
from linformer_kit.output_dir import is_same_or_inside
from linformer_kit.train.finetune.preflight import check_pretrained_model, check_table_files
from linformer_kit.train.finetune.tokenizer_kinds import TOKENIZER_KINDS, check_tokenizer_source
from linformer_kit.train.model_fields import LOCAL_OPTIONS, NewModelFields, Preset
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
NEW_MODEL_LENGTH = 512  # a new model's longest input when max_length is absent: pretrain's seq_len, k = n/4


@dataclass
class FinetuneConfig(NewModelFields, LinformerTrainingArguments):
    """Everything `finetune` needs: the Trainer's arguments plus ours; values checked on construction,
    files by `preflight` at the start of the run (train/finetune/preflight.py).

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

    @property
    def columns(self) -> list[str]:
        """The columns every example needs: its text, its label (and its pair's text)."""
        return [self.text_column, self.label_column] + (
            [self.text_pair_column] if self.text_pair_column else []
        )

    def _check_fields(self) -> None:
        """Ours, after the Trainer numbers (`LinformerTrainingArguments.__post_init__`): values only."""
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
        self._check_data()
        self._check_numbers()
        check_choice("short_inputs", self.short_inputs, SHORT_INPUTS)
        check_choice("tune", self.tune, TUNES)
        if self.classifier_pooling is not None:
            check_choice("classifier_pooling", self.classifier_pooling, CLASSIFIER_POOLINGS)
        if self.model is not None:
            self._check_pretrained()
        else:
            self._check_new_model()

    def _check_data(self) -> None:
        """One source of data (files, a Hub dataset or a GLUE task), its columns three different ones."""
        files = self.train is not None or self.validation is not None
        if files + (self.dataset is not None) + (self.glue_task is not None) != 1:
            raise ValueError(
                "give the data one way: --train and --validation files, --dataset, or --glue-task"
            )
        for what, path in (("train", self.train), ("validation", self.validation)):
            if files and path is None:
                raise ValueError(f"{what}: missing; local data needs both --train and --validation")
        if self.glue_task is not None:
            if self.glue_task not in GLUE_TASKS:
                raise ValueError(f"glue_task must be one of {tuple(GLUE_TASKS)}, got {self.glue_task!r}")
            self.text_column, self.text_pair_column, _ = GLUE_TASKS[self.glue_task]
        if self.label_column in (self.text_column, self.text_pair_column):
            raise ValueError(
                f"text_column={self.text_column!r}, text_pair_column={self.text_pair_column!r} and "
                f"label_column={self.label_column!r} must be different columns"
            )

    def _check_pretrained(self) -> None:
        """A `model` keeps its shape and tokenizer: the new-model fields stay as they are, but for the
        attention's local part, which adds no weights (`LOCAL_OPTIONS`: they apply to a Linformer --model)."""
        new_only = ["tokenizer"] * (self.tokenizer is not None) + [
            name for name in self.changed_model_fields() if name not in LOCAL_OPTIONS
        ]
        if new_only:
            raise ValueError(
                f"{', '.join(new_only)}: apply to a new model (--preset) only; --model {self.model!r} keeps "
                "its own shape and tokenizer"
            )

    def _check_new_model(self) -> None:
        """A known preset, a tokenizer, and options that build a model of max_length tokens."""
        check_choice("preset", self.preset, tuple(PRESETS))
        if self.tokenizer is None:
            raise ValueError(
                f"tokenizer: missing; a new model (--preset {self.preset}) needs one of {TOKENIZER_KINDS} "
                "or a saved tokenizer folder (--tokenizer)"
            )
        check_number("max_length", self.max_length, 2, integer=True, optional=True,
                     why="room for <s> and </s>")  # fmt: skip
        self._check_k_within(self.new_model_length, "max_length")
        # LinformerConfig's checks of the options together (the vocabulary is the tokenizer's, known later)
        assert self.preset is not None  # (checked above: one of PRESETS)
        vocab_size = PRESETS[self.preset]["vocab_size"]
        self.new_model_config(self.preset, self.new_model_length, vocab_size=vocab_size, pad_token_id=1,
                              **self.new_classifier_options())  # fmt: skip

    def new_classifier_options(self) -> dict[str, str]:
        """`LinformerConfig` fields of a new classifier beyond `NewModelFields`' (saved with it)."""
        return {"short_inputs": self.short_inputs, "classifier_pooling": self.classifier_pooling or "cls"}

    def changed_local_options(self) -> list[str]:
        """The `LOCAL_OPTIONS` given other than their defaults: they replace a Linformer model's own."""
        return [name for name in self.changed_model_fields() if name in LOCAL_OPTIONS]

    def _check_numbers(self) -> None:
        if not isinstance(self.max_steps, int) or self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(f"max_steps={self.max_steps!r} must be -1 (train num_train_epochs) or > 0")
        check_number("max_train_samples", self.max_train_samples, 1, integer=True, optional=True)
        check_number("max_eval_samples", self.max_eval_samples, 1, integer=True, optional=True)

    def _check_inputs(self) -> None:
        """The preflight's part (train/finetune/preflight.py): the data files, the model or tokenizer folder."""
        if self.train is not None and self.validation is not None:  # both or neither (_check_data)
            check_table_files(self.train, self.validation, self.columns)
        if self.model is not None:
            check_pretrained_model(self.model, self.changed_local_options(), self.classifier_pooling,
                                   self.max_length)  # fmt: skip
        else:
            assert self.tokenizer is not None  # a new model's: __post_init__ requires it
            check_tokenizer_source(self.tokenizer)

    def _what_output_dir_holds(self) -> str:
        inside = self.model is not None and is_same_or_inside(self.output_dir, self.model)
        return "the model to finetune" if inside else "another model"
