"""Masked-language-model pretraining of a Linformer (or its full-attention baseline) on raw text.

    text files / Hub dataset ──load_text──▶ Dataset["text"]
        ──(tokenizer given? else train byte-level BPE)──▶ pack_blocks ──▶ Dataset["input_ids"] (N, seq_len)
        ──DataCollatorForLanguageModeling (15 %: 80 % <mask>, 10 % random, 10 % kept; masks seeded
          per batch, see ResumableMaskingCollator)──▶ Trainer
          (each batch cut to the current phase's block length, train/schedule.py)
        ──▶ output_dir/{model.safetensors, config.json, tokenizer.json, ..., metrics.json, README.md}

No training loop, masking, checkpoint format or launcher of our own: `Trainer` does all of it, so
`torchrun --nproc_per_node N` / `accelerate launch` run the same function on N processes, and
`resume=True` is `Trainer.train(resume_from_checkpoint=...)` (weights, optimizer, scheduler, RNG
and the data position all come back from the last `checkpoint-*` folder). `PretrainConfig` *is*
the Trainer's `TrainingArguments` (a subclass, see `train/training_arguments.py`), so `--bf16`, `--report_to`
and every other Trainer option work as they do in any Hugging Face script.
"""

from __future__ import annotations

import hashlib
import logging
import math
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, get_args

import torch
from transformers import (
    AutoConfig,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    PreTrainedConfig,
    PreTrainedTokenizerBase,
    TrainerCallback,
    set_seed,
)

from linformer_kit.data_files import has_suffix
from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.models.convert import NewPositions, check_new_positions, new_positions_field
from linformer_kit.models.loading import check_model_dir, longest_input, read_config_json
from linformer_kit.models.presets import PRESETS  # re-exported: linformer_kit.train.pretrain.PRESETS
from linformer_kit.nn.options import ShortInputs, format_projected_length, option_field
from linformer_kit.output_dir import is_same_or_inside
from linformer_kit.train.branch import (
    KeepCheckpoint,
    branch_checkpoint,
    branched_from,
    check_branch_source,
    write_branch_checkpoint,
)
from linformer_kit.train.context_free import label_unigram, no_context_loss
from linformer_kit.train.curve import CurveCallback
from linformer_kit.train.data import (
    SPECIAL_TOKENS,
    TEXT_SUFFIXES,
    expand_text_files,
    is_hub_name,
    load_text,
    pack_blocks,
    train_tokenizer,
)
from linformer_kit.train.guards import GuardedTrainer, guarded_run
from linformer_kit.train.init_from import linformer_from_checkpoint, target_config
from linformer_kit.train.model_fields import NewModelFields, Preset
from linformer_kit.train.position_loss import loss_by_position, position_ranges
from linformer_kit.train.publish import limit_tokenizer, publish
from linformer_kit.train.schedule import check_schedule, cut_blocks, length_at, parse_schedule
from linformer_kit.train.throughput import ThroughputCallback
from linformer_kit.train.training_arguments import LinformerTrainingArguments, check_number, trainer_default

logger = logging.getLogger(__name__)
ShortBlockPositions = Literal["restart", "keep"]
MIN_VOCAB = 256 + len(SPECIAL_TOKENS)  # a byte-level BPE: every byte, the special tokens, then merges


@dataclass
class PretrainConfig(NewModelFields, LinformerTrainingArguments):
    """Everything `pretrain` needs: the Trainer's arguments plus ours; checked once, on construction.

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
    # a run that shares its first steps with another (train/branch.py): the trunk keeps its checkpoint at
    # the shared step, each branch starts there with its own attention
    branch_from: str | None = field(
        default=None,
        metadata={
            "help": "start at the step of this checkpoint folder (a trunk-N of --keep-checkpoint) of a run that "
            "differs from this one in attention alone and attended every block exactly until then: its "
            "weights, optimizer, schedule, RNG, data position and curve, with this run's own E and F; "
            "equal to training from step 0 with the window start (train/branch.py)"
        },
    )
    keep_checkpoint: int | None = field(
        default=None,
        metadata={
            "help": "also keep the checkpoint of step N as output_dir/trunk-N, which save_total_limit does "
            "not remove: the folder other runs start from with --branch-from"
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
    seq_len_schedule: list[str] | str = field(
        default_factory=lambda: ["auto"],
        metadata={
            "help": "block length by phase, LENGTH:FRACTION,... of the steps, ending at seq_len (e.g. "
            "128:0.5,512:0.5; tokens per step stay the same), 'none' (every step at seq_len) or 'auto' "
            "(seq_len/4 for the first half, then seq_len): short blocks first leave the masked-LM "
            "plateau far sooner (docs/reproduction.md)"
        },
    )
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
        """Ours, after output_dir and the Trainer numbers (`LinformerTrainingArguments.__post_init__`)."""
        if isinstance(self.train, str):
            self.train = [self.train]
        if isinstance(self.validation, str):
            self.validation = [self.validation]
        self._check_model_fields()  # k's command-line form parsed, dropout
        self._check_numbers()
        schedule = self.seq_len_schedule
        if isinstance(schedule, list) and all(isinstance(part, str) for part in schedule) and schedule:
            schedule = ",".join(schedule)  # the command line's words: 128:0.5 512:0.5, or 128:0.5,512:0.5
        if isinstance(schedule, str):
            schedule = parse_schedule(schedule, self.seq_len)
        self.seq_len_schedule = schedule
        self.seq_len_schedule = [list(p) for p in check_schedule(self.seq_len_schedule, self.seq_len)]
        if self.short_block_positions not in get_args(ShortBlockPositions):
            raise ValueError(
                f"short_block_positions must be one of {get_args(ShortBlockPositions)}, got {self.short_block_positions!r}"
            )
        self._check_data()
        self._check_model()

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

    def _check_data(self) -> None:
        if not self.train:
            raise ValueError("train: give at least one file, folder or dataset name (--train)")
        local: dict[str, list[Path]] = {}
        given = {"train": self.train, "validation": self.validation or []}
        for what, sources in given.items():
            if sources and not (len(sources) == 1 and is_hub_name(sources[0])):  # first 64 KiB of each file
                local[what] = expand_text_files(sources, what, self.text_column)
        structured = [f for files in local.values() for f in files if not has_suffix(f, TEXT_SUFFIXES)]
        every_source_local = len(local) == sum(bool(sources) for sources in given.values())
        if self.text_column != "text" and every_source_local and not structured:
            raise ValueError(
                f"text_column={self.text_column!r} names a field of JSON lines or Hub data, but every "
                "--train / --validation file is plain .txt (one record per line, no fields)"
            )
        for what in local:
            for source in given[what]:
                if is_same_or_inside(self.output_dir, source) or is_same_or_inside(source, self.output_dir):
                    raise ValueError(
                        f"output_dir {self.output_dir!r} and the {what} data {source!r} overlap: checkpoints "
                        "(JSON files) would become training text of the next run; choose another --output-dir"
                    )
        shared = {f.resolve() for f in local.get("train", [])} & {
            f.resolve() for f in local.get("validation", [])
        }
        if shared:
            raise ValueError(
                f"validation: {sorted(map(str, shared))[0]!r} is also a training file: the held-out loss "
                "would be measured on text the model trained on"
            )

    def _check_model(self) -> None:
        if self.preset is not None and self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {self.preset!r}")
        if self.preset is not None and self.init_from is not None:
            raise ValueError(
                f"preset={self.preset!r} and init_from={self.init_from!r}: the model keeps the shape of "
                "init_from; drop --preset"
            )
        # sharing / projection / projection_init / layer_norm choices: LinformerConfig's checks (model_config)
        new_model_only = {
            "projection_scaling": LinformerConfig.projection_scaling,
            "layer_norm": LinformerConfig.layer_norm,
            "dropout": LinformerConfig.hidden_dropout_prob,
            "short_inputs": "exact",
        }
        for name, default in new_model_only.items():
            if getattr(self, name) != default and self.init_from is not None:
                raise ValueError(
                    f"{name}={getattr(self, name)!r} applies to new models only; "
                    f"init_from={self.init_from!r} keeps its checkpoint's {name}"
                )
        if self.tokenizer is not None and not (Path(self.tokenizer) / "tokenizer_config.json").is_file():
            raise ValueError(
                f"tokenizer: {self.tokenizer!r} is not a saved tokenizer folder (no tokenizer_config.json)"
            )
        if self.init_from is not None:  # its tokenizer comes along, unless --tokenizer is given
            check_model_dir(self.init_from, "init_from", tokenizer=self.tokenizer is None)
        if self.vocab_size is not None and (self.tokenizer or self.init_from):
            raise ValueError(
                f"vocab_size={self.vocab_size} sizes a newly trained tokenizer, but the tokenizer of "
                f"{self.tokenizer or self.init_from!r} is used: drop --vocab-size"
            )
        source = read_config_json(self.init_from, "init_from") if self.init_from is not None else None
        if source is not None:
            self._check_seq_len_fits(source)
        # a seq_len above the checkpoint's longest input extends its position table (init_from_length)
        check_new_positions(self.new_positions, source is not None and self.seq_len > longest_input(source))
        self._check_k_within(self.seq_len, "seq_len")  # within the blocks trained on, not the model
        self.model_config()  # k per layer, sharing, projection against the model: LinformerConfig's checks
        self._check_branch()

    def _check_branch(self) -> None:
        """--keep-checkpoint names a step that is saved; --branch-from a trunk this run can continue."""
        if self.keep_checkpoint is not None:
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
        if self.branch_from is None:
            return
        if self.init_from is not None:
            raise ValueError(
                f"branch_from={self.branch_from!r} and init_from={self.init_from!r} both give the starting "
                "weights: drop one"
            )
        source = Path(self.branch_from)
        if not source.is_dir():
            raise ValueError(f"branch_from: no such checkpoint folder: {self.branch_from!r}")
        wanted = self._model_config_of(read_config_json(source, "branch_from"))
        check_branch_source(source, wanted, self.seq_len_schedule, self.max_steps,
                            self.per_device_train_batch_size)  # fmt: skip

    def _check_seq_len_fits(self, source: dict) -> None:
        """init_from is a model type we convert (config.json as a dict); a longer seq_len extends it."""
        if source["model_type"] not in ("linformer", "roberta", "bert"):
            raise ValueError(
                f"init_from: {self.init_from!r} is a {source['model_type']!r} model; expected linformer, roberta or bert"
            )

    def init_from_length(self) -> int | None:
        """The longest input of the model converted from init_from: the checkpoint's, or seq_len if longer
        (the position table is then extended: `linformer_kit.models.convert`). None without init_from."""
        if self.init_from is None:
            return None
        return max(self.seq_len, longest_input(read_config_json(self.init_from, "init_from")))

    def _check_checkpoints(self) -> None:
        """The base class's output_dir / resume rules, then: --resume must build the checkpoint's model."""
        super()._check_checkpoints()
        if self.resume_from_checkpoint is not None:
            self._check_same_model(Path(self.resume_from_checkpoint))

    def model_config(self, vocab_size: int | None = None, pad_token_id: int = 1) -> PreTrainedConfig:
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

    def _model_config_of(self, saved: dict) -> PreTrainedConfig:
        """The model this run would build to continue a saved one (config.json as a dict): its vocabulary."""
        return self.model_config(
            vocab_size=saved.get("vocab_size"), pad_token_id=saved.get("pad_token_id", 1)
        )

    def _check_same_model(self, checkpoint: Path) -> None:
        """--resume must build the model the checkpoint holds: name the option that differs."""
        saved = read_config_json(checkpoint, "resume")
        wanted = self._model_config_of(saved)
        layers = saved.get("num_hidden_layers", 0)
        for name in ("projected_length", "sharing", "projection", "projection_scaling", "layer_norm"):
            mine = getattr(wanted, name)
            theirs = saved.get(name, getattr(LinformerConfig, name))  # older checkpoints: the default
            if name == "projected_length":  # 8 and [8, 8] are the same model
                mine, theirs = (v if isinstance(v, list) else [v] * layers for v in (mine, theirs))
            if mine != theirs:
                raise ValueError(
                    f"resume: {name}={getattr(self, name)!r} differs from the checkpoint's {name}={saved.get(name)!r} "
                    f"({checkpoint / 'config.json'}): resume with the options of the run that wrote it"
                )
        if self.init_from is None:
            shape = {key: saved.get(key) for key in PRESETS[self.shape] if key != "vocab_size"}
            if shape != {key: getattr(wanted, key) for key in shape}:
                raise ValueError(
                    f"resume: preset={self.shape!r} differs from the checkpoint's shape {shape} "
                    f"({checkpoint / 'config.json'}): resume with the options of the run that wrote it"
                )
            if wanted.max_position_embeddings != saved.get("max_position_embeddings"):
                raise ValueError(
                    f"resume: seq_len={self.seq_len} differs from the checkpoint's longest input "
                    f"{longest_input(saved)} "
                    f"({checkpoint / 'config.json'}): resume with the options of the run that wrote it"
                )


@dataclass
class PretrainResult:
    output_dir: str
    steps: int
    train_loss: (
        float | None
    )  # mean over this invocation's steps (after resumed_from_step); None when max_steps=0
    eval_loss: float
    perplexity: float  # exp(eval_loss) on the held-out blocks (masking seeded, so runs compare)
    # exp(loss) of the best predictor that sees only the token at each scored position (unigram +
    # the 80/10/10 rule; train/context_free.py), on the same blocks: a model at it uses no context
    no_context_perplexity: float
    # exp(loss) of the scored positions in the block's first quarter, second quarter and second half
    # ("0-511", "512-1023", "1024-2047" at n = 2 048; train/position_loss.py), same masks and blocks
    perplexity_by_position: dict[str, float]
    # perplexity below LEARNED_CONTEXT x the floor: the model reads context (else: the masked-LM plateau)
    learned_context: bool
    tokens_per_second: float | None  # training tokens (padding-free blocks) per wall-clock second
    num_parameters: int
    eval_blocks: int
    train_blocks: int
    reinitialized: list[str] = field(default_factory=list)  # init_from: weights the checkpoint lacked
    resumed_from_step: int = 0  # --resume: the checkpoint's step (train_loss covers the steps after it)
    # --branch-from: {"trunk": its run folder, "checkpoint": trunk-N, "step": N}; this run trained steps N+1..
    branched_from: dict | None = None


LEARNED_CONTEXT = 0.8  # "within 20 % of the no-context floor" is the plateau, not a language model


def warn_if_no_context(
    result: PretrainResult, config: PretrainConfig, model_config: PreTrainedConfig
) -> None:
    """One WARNING line on the `linformer_kit` logger when the model learned no context (else nothing).

    It names both perplexities and only the changes this run has not made (`no_context_advice`).
    """
    if result.learned_context:
        return
    where = (
        "above"
        if result.perplexity > result.no_context_perplexity
        else f"within {1 - LEARNED_CONTEXT:.0%} of"
    )
    logger.warning(
        f"validation perplexity {result.perplexity:.1f} is {where} the no-context floor "
        f"{result.no_context_perplexity:.1f}: the model predicts masked tokens from their frequency alone and "
        "has not learned to use context yet (the masked-LM plateau, docs/reproduction.md). "
        f"What may help this run: {'; '.join(no_context_advice(config, model_config))}"
    )


def no_context_advice(config: PretrainConfig, model_config: PreTrainedConfig) -> list[str]:
    """The changes that leave the masked-LM plateau sooner (DESIGN.md, "Pretraining that learns"),
    less those this run already made or cannot make: a length schedule if it has none (and its
    seq_len leaves room for one), pre-LN for a new post-LN model, the window start for a projected
    model whose E, F started random. Training longer always applies."""
    advice = ["train longer (--max-steps)"]
    if len(config.seq_len_schedule) < 2:  # every step at seq_len
        auto = parse_schedule("auto", config.seq_len)
        if len(auto) > 1:
            phases = ",".join(f"{length}:{fraction:g}" for length, fraction in auto)
            advice.append(f"start with short blocks (--seq-len-schedule {phases})")
    new_model = config.init_from is None and config.resume_from_checkpoint is None
    if new_model and getattr(model_config, "layer_norm", "post") != "pre":
        advice.append("--layer-norm pre with a higher --learning-rate (small models)")
    projected = any(k is not None for k in getattr(model_config, "projected_lengths", lambda: [None])())
    starts = getattr(model_config, "projection_init", "window")
    if new_model and projected and starts != "window" and model_config.projection in ("linear", "conv"):
        advice.append("--projection-init window (each slot starts as a local mean)")
    return advice


def build_tokenizer(config: PretrainConfig, train_text) -> PreTrainedTokenizerBase:
    """The given tokenizer, init_from's, the resumed checkpoint's, or a fresh byte-level BPE.

    A trained tokenizer is never kept on its own in output_dir, where a later run (another corpus,
    another vocabulary) could pick it up: the Trainer saves it with the model into every checkpoint
    (so a resume finds it) and into output_dir at the end.
    """
    source = config.tokenizer or config.init_from or config.resume_from_checkpoint  # a model carries its own
    if source:
        return AutoTokenizer.from_pretrained(source)
    vocab_size = config.vocab_size or PRESETS[config.shape]["vocab_size"]
    if config.world_size == 1:
        return train_tokenizer(train_text, vocab_size, config.tokenizer_chars)
    # Several processes: rank 0 trains it and hands it over through a folder that this run alone
    # writes before anyone reads it, and removes once every rank holds the tokenizer (see pretrain).
    with config.main_process_first(desc="train tokenizer", local=False):
        if config.process_index == 0:
            tokenizer = train_tokenizer(train_text, vocab_size, config.tokenizer_chars)
            shutil.rmtree(_tokenizer_handover(config), ignore_errors=True)
            tokenizer.save_pretrained(_tokenizer_handover(config))
            return tokenizer
        return AutoTokenizer.from_pretrained(_tokenizer_handover(config))


def _tokenizer_handover(config: PretrainConfig) -> Path:
    return Path(config.output_dir) / ".tokenizer-handover"


def build_model(
    config: PretrainConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[LinformerForMaskedLM, list[str]]:
    """A fresh model of the preset's shape, or `init_from` with this config's Linformer options."""
    if config.init_from is not None:
        return linformer_from_checkpoint(
            config.init_from, **config.conversion_options(), max_length=config.init_from_length(),
            new_positions=config.new_positions,
        )  # fmt: skip
    model_config = config.model_config(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    model_config.bos_token_id, model_config.eos_token_id = tokenizer.bos_token_id, tokenizer.eos_token_id
    return LinformerForMaskedLM(model_config), []  # E, F start per model_config.projection_init


class ResumableMaskingCollator(DataCollatorForLanguageModeling):
    """`DataCollatorForLanguageModeling` (15 %; 80/10/10) whose masks are a function of (seed, batch).

    Why: on resume, `Trainer` fetches the first batch *before* it restores the RNG state of the
    checkpoint, so with the global RNG that batch (and every later one) gets other masks than the
    uninterrupted run. Seeding the collator's own generator from the batch contents makes masks
    independent of RNG order: resumed == uninterrupted, every rank masks its own blocks differently,
    and all models evaluated on the same blocks see the same masks. (A block seen again in a later
    epoch gets its earlier mask: static masking across epochs.) The masking itself is the library's.
    """

    def __call__(self, features, return_tensors=None):
        ids = torch.tensor([feature["input_ids"] for feature in features])  # (b, n)
        digest = hashlib.blake2b(ids.numpy().tobytes(), digest_size=8, key=str(self.seed).encode()).digest()
        self._batch_seed = int.from_bytes(digest, "little") >> 1  # fits in int64
        # No generator: the library's masking asks `create_rng` for one, below. (Setting `generator`
        # here is not enough: transformers >= 5.24 replaces a generator it did not make itself.)
        self.generator = None
        return super().__call__(features, return_tensors)

    def create_rng(self, return_tensors=None):
        self.generator = self.get_generator(self._batch_seed)


class MaskedLMTrainer(GuardedTrainer):
    """`Trainer` for masked-LM pretraining: the length schedule, and the LM head at masked positions only.

    Each batch of seq_len blocks is cut to the block length of the current optimizer step
    (`args.seq_len_schedule`, train/schedule.py), in training and evaluation alike; logs carry that
    length as `seq_len`. The guards of a long run come from `GuardedTrainer` (train/guards.py). The LM
    head runs only where there is a label (`logits_for="labelled"`): same
    loss as the model's default call, 0.15x the head work (1.54x faster `small` training steps,
    scripts/cpu/masked_head_ab.py). Through `model(...)`, so DDP / accelerate wrappers still see the call.
    """

    def __init__(
        self,
        *args,
        seq_len_schedule: list | None = None,
        short_block_positions: ShortBlockPositions | None = None,
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.seq_len_schedule = seq_len_schedule  # None: every batch at the length it comes in
        self.short_block_positions = short_block_positions  # with a schedule: `PretrainConfig`'s choice

    def current_seq_len(self, training: bool = False) -> int:
        """The block length of the step being trained, or (evaluation, logs) of the last step trained."""
        # global_step counts finished steps: a logged loss and an evaluation belong to the last one
        step = self.state.global_step if training else max(self.state.global_step - 1, 0)
        return length_at(self.seq_len_schedule, step, self.state.max_steps)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if self.seq_len_schedule is not None:
            length = self.current_seq_len(training=model.training)
            if self.short_block_positions == "keep" and length < inputs["input_ids"].shape[1]:
                inputs = {**inputs, "position_ids": self._block_positions(model, inputs["input_ids"])}
            inputs = cut_blocks(inputs, length)
        inputs = {**inputs, "logits_for": "labelled"} if "labels" in inputs else inputs
        return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

    def _block_positions(self, model, input_ids: torch.Tensor) -> torch.Tensor:
        """(b, n) position ids of the full blocks, as the model numbers them: cut with the tokens, a short
        block keeps the positions it has in its block, so every position embedding trains in every phase."""
        embeddings = self.accelerator.unwrap_model(model).linformer.embeddings
        b, n = input_ids.shape
        return embeddings.position_ids(input_ids, b, n, input_ids.device)

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        if self.seq_len_schedule is not None:
            logs = {**logs, "seq_len": self.current_seq_len()}
        super().log(logs, *args, **kwargs)


def start_line(
    config: PretrainConfig, model: LinformerForMaskedLM, train_blocks: int, eval_blocks: int
) -> str:
    """What is about to run, in one line: model, parameters, data, tokens per step, budget, device, dtype."""
    c = model.config
    ks = c.projected_lengths()  # per layer, None = full attention in that layer
    if all(k is None for k in ks):
        attention = "full attention"
    else:
        k = format_projected_length(ks if len(set(ks)) > 1 else ks[0])  # as --projected-length takes it
        attention = f"k={k} {c.sharing} {c.projection} ({c.projection_init} start)"
    sequences = config.per_device_train_batch_size * config.world_size * config.gradient_accumulation_steps
    tokens_per_step = sequences * config.seq_len
    if config.max_steps > 0:
        steps = config.max_steps
    else:
        steps = math.ceil(config.num_train_epochs * train_blocks / sequences) if config.max_steps else 0
    dtype = "bf16 autocast" if config.bf16 else "fp16 autocast" if config.fp16 else "fp32"
    schedule = config.seq_len_schedule
    phases = "" if not schedule else ", lengths " + ",".join(f"{n}:{f:g}" for n, f in schedule)
    origin = f"{config.shape} encoder" if config.init_from is None else f"encoder from {config.init_from}"
    return (
        f"pretrain: {origin} ({c.hidden_size} wide x {c.num_hidden_layers} layers, "
        f"{c.layer_norm}-LN), {attention}, {model.num_parameters() / 1e6:.2f} M parameters; "
        f"data {train_blocks:,} train / {eval_blocks:,} validation blocks of {config.seq_len} tokens; "
        f"{tokens_per_step:,} tokens/step ({sequences} sequences){phases}; {steps:,} steps = "
        f"{steps * tokens_per_step / 1e6:,.1f} M tokens; {config.device.type}, {dtype}"
    )


def pretrain(config: PretrainConfig, callbacks: Sequence[TrainerCallback] = ()) -> PretrainResult:
    """Train (or continue) a masked LM as configured; save it with its tokenizer and metrics.json.

    `callbacks` are extra `TrainerCallback`s (logging, early stopping, ...), after our own. The run
    holds output_dir/.lock while it works, stops cleanly on SIGTERM / SIGUSR1 (`Preempted`, after a
    checkpoint), at a non-finite loss (`NonFiniteLoss`) and on a full disk (`DiskFull`): train/guards.py.
    """
    return guarded_run(config, PretrainResult, lambda: _pretrain(config, callbacks))


def _pretrain(config: PretrainConfig, callbacks: Sequence[TrainerCallback]) -> PretrainResult:
    train_text = load_text(config.train, config.text_column, "train")
    if config.max_train_documents is not None and len(train_text) > config.max_train_documents:
        train_text = train_text.select(range(config.max_train_documents))
    tokenizer = build_tokenizer(config, train_text)
    missing = [
        name
        for name in ("mask_token", "pad_token", "bos_token", "eos_token")
        if getattr(tokenizer, name) is None
    ]
    if missing:  # masking and packing need them; a GPT-2 style tokenizer lacks <mask> and <pad>
        raise ValueError(
            f"tokenizer: {config.tokenizer or config.init_from!r} has no {missing}: masked-LM pretraining needs them"
        )
    with config.main_process_first(desc="tokenize and pack", local=False):
        train_blocks = pack_blocks(train_text, tokenizer, config.seq_len, "pack train blocks")
        if config.validation:
            eval_text = load_text(config.validation, config.text_column, "validation", split="validation")
            eval_blocks = pack_blocks(eval_text, tokenizer, config.seq_len, "pack validation blocks")
        else:
            split = train_blocks.train_test_split(test_size=config.validation_percent / 100, seed=config.seed)
            train_blocks, eval_blocks = split["train"], split["test"]
    if (
        config.process_index == 0
    ):  # every rank has loaded the tokenizer by now (the block above ends in a barrier)
        shutil.rmtree(_tokenizer_handover(config), ignore_errors=True)
    if len(train_blocks) == 0 or len(eval_blocks) == 0:
        raise ValueError(
            f"the corpus is too short for one block of seq_len={config.seq_len} tokens "
            f"(train blocks: {len(train_blocks)}, validation blocks: {len(eval_blocks)}); "
            f"add text or lower --seq-len"
        )
    if config.max_eval_blocks is not None and len(eval_blocks) > config.max_eval_blocks:
        eval_blocks = eval_blocks.select(
            range(config.max_eval_blocks)
        )  # the first blocks: same for every run

    set_seed(config.seed)  # the initial weights (Trainer seeds only after the model exists)
    model, reinitialized = build_model(config, tokenizer)
    if model.config.vocab_size < len(tokenizer):
        raise ValueError(
            f"the tokenizer has {len(tokenizer)} tokens but the model's vocab_size is {model.config.vocab_size}: "
            f"pass the tokenizer the model was trained with (--tokenizer)"
        )
    limit_tokenizer(tokenizer, model.config)  # saved with the model: pipelines truncate to what runs
    if config.init_from is not None:  # the converted model's longest input (seq_len when it was extended)
        tokenizer.model_max_length = model.config.max_seq_len
    collator = ResumableMaskingCollator(tokenizer, mlm_probability=config.mlm_probability, seed=config.seed)
    throughput = ThroughputCallback()
    keep = [] if config.keep_checkpoint is None else [KeepCheckpoint(config.keep_checkpoint)]
    trainer = MaskedLMTrainer(
        model=model,
        args=config,
        data_collator=collator,
        train_dataset=train_blocks,
        eval_dataset=eval_blocks,
        processing_class=tokenizer,
        callbacks=[throughput, CurveCallback(), *keep, *callbacks],
        seq_len_schedule=config.seq_len_schedule,
        short_block_positions=config.short_block_positions,
    )

    if trainer.is_world_process_zero():  # the `linformer` command prints linformer_kit's INFO lines
        logger.info(start_line(config, model, len(train_blocks), len(eval_blocks)))
    train_loss = None
    start = config.resume_from_checkpoint  # a resumed run continues its own checkpoints, a branch its trunk's
    if config.branch_from is not None and start is None and config.max_steps != 0:
        with config.main_process_first(desc="branch from the trunk", local=False):  # one writer, all read it
            if config.process_index == 0:
                write_branch_checkpoint(trainer, Path(config.branch_from), Path(config.output_dir))
        start = str(branch_checkpoint(Path(config.branch_from), Path(config.output_dir)))
    if config.max_steps != 0:
        train_loss = trainer.train(resume_from_checkpoint=start).training_loss
    eval_loss = trainer.evaluate()["eval_loss"]
    floor = no_context_loss(collator, eval_blocks, label_unigram(train_blocks, tokenizer),
                            config.per_device_eval_batch_size)  # fmt: skip
    by_position = loss_by_position(trainer.model, collator, eval_blocks, config.per_device_eval_batch_size,
                                   position_ranges(config.seq_len))  # fmt: skip
    trainer.save_model()  # model.safetensors + config.json + tokenizer files, on the main process only

    perplexity = math.exp(min(eval_loss, 100.0))
    result = PretrainResult(
        output_dir=config.output_dir,
        steps=trainer.state.global_step,
        train_loss=train_loss,
        eval_loss=eval_loss,
        perplexity=perplexity,
        no_context_perplexity=math.exp(floor),
        perplexity_by_position={name: math.exp(min(loss, 100.0)) for name, (loss, _) in by_position.items()},
        learned_context=perplexity < LEARNED_CONTEXT * math.exp(floor),
        tokens_per_second=throughput.tokens_per_second(),
        num_parameters=model.num_parameters(),
        eval_blocks=len(eval_blocks),
        train_blocks=len(train_blocks),
        reinitialized=reinitialized,
        resumed_from_step=trainer.resumed_from_step,
        branched_from=branched_from(config.output_dir),
    )
    # log_history: training loss and (with eval_strategy="steps") validation loss by step
    metrics = {**asdict(result), "log_history": trainer.state.log_history}
    publish(trainer, "fill-mask", metrics, config.to_dict())  # metrics.json, README.md; no pickle
    warn_if_no_context(result, config, model.config)
    return result
