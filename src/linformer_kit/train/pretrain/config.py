"""`PretrainConfig`: what `linformer pretrain` takes, with the checks of its values.

The flags of `linformer pretrain` are generated from this class (cli/arguments.py). Its constructor
checks values only and reads no file; `preflight()` (called by `pretrain` before any work) checks the
files and folders it names (train/pretrain/preflight.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from transformers import AutoConfig

from linformer_kit.models.config_rules import longest_input
from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.models.conversion import new_positions_field
from linformer_kit.models.convert import NewPositions, check_new_positions
from linformer_kit.models.folder_checks import read_config_json
from linformer_kit.models.presets import PRESETS
from linformer_kit.nn.options import ShortInputs, option_field
from linformer_kit.train.data import SPECIAL_TOKENS
from linformer_kit.train.init_from import target_config
from linformer_kit.train.model_fields import NewModelFields, Preset
from linformer_kit.train.pretrain.preflight import (
    RESUMED_OPTIONS,
    check_init_from,
    check_resumed_model,
    check_text_sources,
    check_tokenizer_folder,
)
from linformer_kit.train.schedule import Schedule, check_schedule, parse_schedule
from linformer_kit.train.training_arguments import LinformerTrainingArguments, check_number, trainer_default

ShortBlockPositions = Literal["restart", "keep"]
MIN_VOCAB = 256 + len(SPECIAL_TOKENS)  # a byte-level BPE: every byte, the special tokens, then merges
# the fields that apply to a new model only: init_from keeps its checkpoint's, so they must keep their defaults
NEW_MODEL_ONLY = ("projection_scaling", "layer_norm", "dropout", "short_inputs")
# seq_len_schedule's forms: HfArgumentParser reads the command line's; __post_init__ then stores the
# checked [length, fraction] pairs there (typed as `PretrainConfig.phases`), which the checker also sees
if TYPE_CHECKING:
    ScheduleForms = list[str] | str | list[list[int | float]]
else:
    ScheduleForms = list[str] | str


@dataclass
class PretrainConfig(NewModelFields, LinformerTrainingArguments):
    """Everything `pretrain` needs: the Trainer's arguments plus ours; values checked on construction,
    files by `preflight` at the start of the run (train/pretrain/preflight.py).

    A `TrainingArguments` subclass (and `NewModelFields`: k, sharing, projection, dropout, layer_norm of a
    new model, train/model_fields.py): every Trainer field (`learning_rate`, `per_device_train_batch_size`,
    `max_steps`, `bf16`, `report_to`, ...) is set under its own name, and `linformer pretrain`'s flags
    are generated from this class. `max_steps=-1` trains for `num_train_epochs`; `max_steps=0` only
    evaluates and saves. ValueError names the bad value.
    """

    # Trainer fields with pretraining defaults: RoBERTa's beta2, 1 pass over the data, and the batch and
    # learning rate with which the `small` preset left the masked-LM plateau on a GPU (64 x 512 tokens
    # per step, lr 1e-3, with the default length schedule: docs/reproduction.md, "Pretraining that learns")
    num_train_epochs: float = trainer_default("num_train_epochs", 1.0)
    per_device_train_batch_size: int = trainer_default("per_device_train_batch_size", 64)
    learning_rate: float = trainer_default("learning_rate", 1e-3)
    adam_beta2: float = trainer_default("adam_beta2", 0.98)
    # data
    train: list[str] = field(
        default_factory=list,
        metadata={
            "help": ".txt / .jsonl / .jsonl.gz / .json files or folders, or one Hub dataset NAME[:CONFIG]"
        },
    )
    validation: list[str] | None = field(
        default=None,
        metadata={"help": "held-out text; if absent, validation_percent of the train blocks are held out"},
    )
    validation_percent: float = field(
        default=5.0, metadata={"help": "held-out share when validation is absent"}
    )
    text_column: str = field(
        default="text", metadata={"help": "field holding the text in JSON lines / Hub data"}
    )
    max_train_documents: int | None = field(
        default=None,
        metadata={"help": "quick runs: use only the first N documents (books, paragraphs) of train"},
    )
    max_eval_blocks: int | None = field(
        default=512,
        metadata={"help": "evaluate on at most the first N validation blocks (the same for every run)"},
    )
    mlm_probability: float = field(default=0.15, metadata={"help": "share of tokens masked (80/10/10)"})
    # model: a preset shape (None: "small"), or an existing checkpoint (its shape; the Linformer options
    # below apply; a preset is then an error, it would be ignored)
    preset: Preset | None = field(
        default=None,
        metadata={
            "help": "encoder shape: tiny (64 wide, 2 layers), mini (128 wide, 2 layers), small (256 wide, "
            "4 layers) or base (RoBERTa-base); None means small, or the shape of the init_from model "
            "(the two do not go together)"
        },
    )
    init_from: str | None = field(
        default=None,
        metadata={
            "help": "start from this Linformer, RoBERTa or BERT directory (projected_length, sharing, projection convert it)"
        },
    )
    # a study's trunk (reproduction/branch.py): its branches start from this checkpoint
    keep_checkpoint: int | None = field(
        default=None,
        metadata={
            "help": "also keep the checkpoint of step N as output_dir/trunk-N, which save_total_limit does "
            "not remove: the folder other runs of a study start from (a recipe's trunk: {run:, step:})"
        },
    )
    new_positions: NewPositions = new_positions_field()
    seq_len: int = field(
        default=512,
        metadata={
            "help": "block length n, and the longest input of a new model; with init_from, a seq_len above "
            "the checkpoint's longest input extends its position table (position p takes the trained row "
            "of p mod that length)"
        },
    )
    # [[length, fraction], ...] after __post_init__; on the command line one or more LENGTH:FRACTION
    # words (or 'auto' / 'none'), in a config file also a list of [length, fraction] pairs
    seq_len_schedule: ScheduleForms = field(
        default_factory=lambda: ["auto"],
        metadata={
            "help": "block length by phase, LENGTH:FRACTION,... of the steps, ending at seq_len (e.g. "
            "128:0.5,512:0.5; tokens per step stay the same), 'none' (every step at seq_len) or 'auto' "
            "(seq_len/4 for the first half, then seq_len): short blocks first leave the masked-LM "
            "plateau far sooner (docs/reproduction.md)"
        },
    )
    # set by __post_init__: the checked schedule, (length, fraction) per phase
    phases: Schedule = field(default_factory=list, init=False, repr=False)
    short_block_positions: ShortBlockPositions = field(
        default="keep",
        metadata={
            "help": "positions of the short blocks of a length schedule: 'keep' (the positions they have in "
            "their seq_len block, so every position embedding trains from the first step; measured in "
            "docs/reproduction.md) or 'restart' (0..L-1, BERT's: positions past L train only in the last phase)"
        },
    )
    # Linformer options (projected_length, sharing, projection, ...), dropout and layer_norm: NewModelFields.
    # Pretraining's own default: "exact", so the short phases of a length schedule train attention exactly
    # and only longer blocks project (projecting them kept a k = 128 model on the floor: docs/reproduction.md)
    short_inputs: ShortInputs = option_field(
        "short_inputs", default="exact", note="saved with the model; new models only"
    )
    # tokenizer: a saved one, or byte-level BPE trained on the first `tokenizer_chars` characters of train
    tokenizer: str | None = field(
        default=None,
        metadata={"help": "a saved tokenizer folder; if absent, a byte-level BPE is trained on train"},
    )
    vocab_size: int | None = field(
        default=None, metadata={"help": "vocabulary of the BPE trained here; if absent, the preset's"}
    )
    tokenizer_chars: int = field(
        default=20_000_000, metadata={"help": "characters of train the BPE learns from"}
    )

    @property
    def shape(self) -> str:
        """The preset whose shape a new model gets ("small" when none is given)."""
        return self.preset or "small"

    def _check_fields(self) -> None:
        """Ours, after the Trainer numbers (`LinformerTrainingArguments.__post_init__`): values only."""
        if isinstance(self.train, str):
            self.train = [self.train]
        if isinstance(self.validation, str):
            self.validation = [self.validation]
        if not self.train:
            raise ValueError("train: give at least one file, folder or dataset name (--train)")
        self._check_model_fields()  # k's command-line form parsed, dropout
        self._check_numbers()
        self.phases = check_schedule(self._parsed_schedule(), self.seq_len)
        self.seq_len_schedule = [list(p) for p in self.phases]
        if self.short_block_positions not in get_args(ShortBlockPositions):
            raise ValueError(
                f"short_block_positions must be one of {get_args(ShortBlockPositions)}, got {self.short_block_positions!r}"
            )
        self._check_model()
        self._check_keep_checkpoint()

    def _parsed_schedule(self) -> list:
        """[[length, fraction], ...] from the command line's words (128:0.5 512:0.5, or 128:0.5,512:0.5),
        'auto', 'none', or a config file's list of pairs."""
        schedule = self.seq_len_schedule
        words = [part for part in schedule if isinstance(part, str)] if isinstance(schedule, list) else []
        if isinstance(schedule, list) and len(words) == len(schedule) and schedule:
            schedule = ",".join(words)
        return parse_schedule(schedule, self.seq_len) if isinstance(schedule, str) else schedule

    def _check_numbers(self) -> None:
        check_number("seq_len", self.seq_len, 8, integer=True)  # a block needs room for <s>, text, </s>
        check_number("tokenizer_chars", self.tokenizer_chars, 1, integer=True)
        for name in ("max_train_documents", "max_eval_blocks"):
            check_number(name, getattr(self, name), 1, integer=True, optional=True)
        if not isinstance(self.max_steps, int) or self.max_steps < -1:
            raise ValueError(
                f"max_steps={self.max_steps!r} must be -1 (train num_train_epochs), 0 (only evaluate) or > 0"
            )
        check_number("vocab_size", self.vocab_size, MIN_VOCAB, integer=True, optional=True,
                     why=f"a byte-level BPE holds 256 bytes and {len(SPECIAL_TOKENS)} special tokens")  # fmt: skip
        check_number("mlm_probability", self.mlm_probability, 0, exclusive=True, below=1)
        check_number("validation_percent", self.validation_percent, 0, exclusive=True, below=100)

    def _check_model(self) -> None:
        """The model's options: a new model's against LinformerConfig's checks now, init_from's in the preflight."""
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {self.preset!r}")
        if self.init_from is not None:
            if self.preset is not None:
                raise ValueError(
                    f"preset={self.preset!r} and init_from={self.init_from!r}: the model keeps the shape of "
                    "init_from; drop --preset"
                )
            defaults = {f.name: f.default for f in fields(self)}
            for name in NEW_MODEL_ONLY:
                if getattr(self, name) != defaults[name]:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} applies to new models only; "
                        f"init_from={self.init_from!r} keeps its checkpoint's {name}"
                    )
        if self.vocab_size is not None and (self.tokenizer or self.init_from):
            raise ValueError(
                f"vocab_size={self.vocab_size} sizes a newly trained tokenizer, but the tokenizer of "
                f"{self.tokenizer or self.init_from!r} is used: drop --vocab-size"
            )
        self._check_k_within(self.seq_len, "seq_len")  # within the blocks trained on, not the model
        if self.init_from is None:  # nothing to extend; init_from's table: the preflight
            check_new_positions(self.new_positions, extends=False)
            self.model_config()  # k per layer, sharing, projection against the model: LinformerConfig's checks

    def _check_keep_checkpoint(self) -> None:
        """--keep-checkpoint names a step that is saved."""
        if self.keep_checkpoint is None:
            return
        check_number("keep_checkpoint", self.keep_checkpoint, 1, integer=True)
        # save_steps is a float on the command line; below 1 it is a fraction of the run (no fixed steps)
        every = self.save_steps
        saved = self.save_strategy == "steps" and every >= 1 and float(every).is_integer()
        if not saved or self.keep_checkpoint % int(every) or 0 < self.max_steps < self.keep_checkpoint:
            raise ValueError(
                f"keep_checkpoint={self.keep_checkpoint} is never saved: it must be a multiple of save_steps="
                f"{self.save_steps} (save_strategy={str(self.save_strategy)!r} must be 'steps') and at most "
                f"max_steps={self.max_steps}"
            )

    def _check_inputs(self) -> None:
        """The preflight's part (train/pretrain/preflight.py): data, tokenizer and init_from folders; then
        the options against init_from's config (LinformerConfig's checks, from its config.json)."""
        check_text_sources(self.train, self.validation, self.text_column, self.output_dir)
        check_tokenizer_folder(self.tokenizer)
        if self.init_from is not None:
            check_init_from(self.init_from, self.tokenizer is not None, self.seq_len, self.new_positions)
            self.model_config()

    def _check_checkpoints(self) -> None:
        """The base class's output_dir / resume rules, then: --resume must build the checkpoint's model."""
        super()._check_checkpoints()
        if self.resume_from_checkpoint is not None:
            checkpoint = Path(self.resume_from_checkpoint)
            saved = read_config_json(checkpoint, "resume")
            check_resumed_model(
                checkpoint, saved, self.continued_model_config(saved),
                {name: getattr(self, name) for name in RESUMED_OPTIONS},
                self.shape if self.init_from is None else None, self.seq_len,
            )  # fmt: skip

    def init_from_length(self) -> int | None:
        """The longest input of the model converted from init_from: the checkpoint's, or seq_len if longer
        (the position table is then extended: `linformer_kit.models.convert`). None without init_from."""
        if self.init_from is None:
            return None
        return max(self.seq_len, longest_input(read_config_json(self.init_from, "init_from")))

    def model_config(self, vocab_size: int | None = None, pad_token_id: int = 1) -> LinformerConfig:
        """The config of the model this run trains (without weights): a preset shape, or init_from's."""
        if self.init_from is None:
            return self.new_model_config(
                self.shape, self.seq_len, pad_token_id=pad_token_id, short_inputs=self.short_inputs,
                vocab_size=vocab_size or self.vocab_size or PRESETS[self.shape]["vocab_size"],
            )  # fmt: skip
        return target_config(
            AutoConfig.from_pretrained(self.init_from),
            **self.conversion_options(),
            max_length=self.init_from_length(),
        )

    def continued_model_config(self, saved: dict) -> LinformerConfig:
        """The model this run builds to continue a saved one (its config.json as a dict): its vocabulary."""
        return self.model_config(
            vocab_size=saved.get("vocab_size"), pad_token_id=saved.get("pad_token_id", 1)
        )
