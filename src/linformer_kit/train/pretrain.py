"""Masked-language-model pretraining of a Linformer (or its full-attention baseline) on raw text.

    text files / Hub dataset ──load_text──▶ Dataset["text"]
        ──(tokenizer given? else train byte-level BPE)──▶ pack_blocks ──▶ Dataset["input_ids"] (N, seq_len)
        ──DataCollatorForLanguageModeling (15 %: 80 % <mask>, 10 % random, 10 % kept; masks seeded
          per batch, see ResumableMaskingCollator)──▶ Trainer
        ──▶ output_dir/{model.safetensors, config.json, tokenizer.json, ..., metrics.json, README.md}

No training loop, masking, checkpoint format or launcher of our own: `Trainer` does all of it, so
`torchrun --nproc_per_node N` / `accelerate launch` run the same function on N processes, and
`resume=True` is `Trainer.train(resume_from_checkpoint=...)` (weights, optimizer, scheduler, RNG
and the data position all come back from the last `checkpoint-*` folder).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import torch
from transformers import (
    AutoConfig,
    AutoTokenizer,
    DataCollatorForLanguageModeling,
    PreTrainedTokenizerBase,
    Trainer,
    TrainerCallback,
    TrainingArguments,
    set_seed,
)
from transformers.trainer_utils import get_last_checkpoint

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.nn import PROJECTION_KINDS, SHARING_MODES, ProjectionKind, Sharing
from linformer_kit.train.convert import linformer_from_checkpoint
from linformer_kit.train.data import expand_text_files, is_hub_name, load_text, pack_blocks, train_tokenizer
from linformer_kit.train.publish import limit_tokenizer, publish
from linformer_kit.train.throughput import ThroughputCallback

Preset = Literal["tiny", "small", "base"]

# Encoder shapes. "base" is the paper's RoBERTa-base (Linformer §5: 12 layers, 768 wide, 12 heads).
PRESETS: dict[str, dict[str, int]] = {
    "tiny": dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=256, vocab_size=1024
    ),
    "small": dict(
        hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, vocab_size=8192
    ),
    "base": dict(
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        vocab_size=50265,
    ),
}


@dataclass
class PretrainConfig:
    """Everything `pretrain` needs; checked once, on construction (ValueError names the bad value)."""

    train: list[str]  # files / folders (.txt .jsonl .jsonl.gz .json) or one Hub dataset "NAME[:CONFIG]"
    output_dir: str
    validation: list[str] | None = None  # None: hold out `validation_percent` % of the training blocks
    validation_percent: float = 5.0
    text_column: str = "text"  # field holding the text in JSON lines / Hub datasets
    max_train_documents: int | None = None  # quick runs: only the first N documents (books, lines) of train
    # model: a preset shape, or an existing checkpoint (its shape wins; the Linformer options below apply)
    preset: Preset = "small"
    init_from: str | None = None
    seq_len: int = 512  # n: block length, and the model's longest input when it is built here
    projected_length: int | list[int] | None = 128  # k (one per layer allowed); None = full attention
    sharing: Sharing = "headwise"
    projection: ProjectionKind = "linear"
    # tokenizer: a saved one, or byte-level BPE trained on the first `tokenizer_chars` characters of train
    tokenizer: str | None = None
    vocab_size: int | None = None  # None: the preset's
    tokenizer_chars: int = 20_000_000
    # optimisation (Trainer)
    max_steps: int | None = None  # None: `epochs` passes over the data; 0: evaluate (and save) only
    epochs: float = 1.0
    batch_size: int = 8  # per device
    gradient_accumulation_steps: int = 1
    learning_rate: float = 5e-4
    weight_decay: float = 0.01
    warmup: float = 0.06  # fraction of the steps
    mlm_probability: float = 0.15
    save_steps: int = 500
    save_total_limit: int | None = 2
    logging_steps: int = 50
    max_eval_blocks: int | None = 512  # evaluation cost cap; None = the whole validation set
    resume: bool = False
    seed: int = 42
    progress: bool = True
    extra_training_args: dict = field(default_factory=dict)  # any other TrainingArguments field
    callbacks: list[TrainerCallback] = field(default_factory=list)  # extra Trainer callbacks

    def __post_init__(self) -> None:
        if not self.train:
            raise ValueError("train: give at least one file, folder or dataset name")
        for what, sources in (("train", self.train), ("validation", self.validation or [])):
            if not (len(sources) == 1 and is_hub_name(sources[0])):
                expand_text_files(sources, what)  # missing file / folder / wrong kind: fail now
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {self.preset!r}")
        if self.sharing not in SHARING_MODES:
            raise ValueError(f"sharing must be one of {SHARING_MODES}, got {self.sharing!r}")
        if self.projection not in PROJECTION_KINDS:
            raise ValueError(f"projection must be one of {PROJECTION_KINDS}, got {self.projection!r}")
        if self.max_train_documents is not None and self.max_train_documents < 1:
            raise ValueError(f"max_train_documents={self.max_train_documents} must be >= 1")
        if self.seq_len < 8:
            raise ValueError(f"seq_len={self.seq_len} is too short: a block needs at least 8 tokens")
        if self.max_steps is not None and self.max_steps < 0:
            raise ValueError(f"max_steps={self.max_steps} must be >= 0")
        if self.epochs <= 0 or self.batch_size < 1 or self.save_steps < 1:
            raise ValueError(
                f"epochs={self.epochs}, batch_size={self.batch_size} and save_steps={self.save_steps} must be > 0"
            )
        if not 0 < self.mlm_probability < 1:
            raise ValueError(f"mlm_probability={self.mlm_probability} must be in (0, 1)")
        if not 0 < self.validation_percent < 100:
            raise ValueError(f"validation_percent={self.validation_percent} must be in (0, 100)")
        if self.tokenizer is not None and not (Path(self.tokenizer) / "tokenizer_config.json").is_file():
            raise ValueError(
                f"tokenizer: {self.tokenizer!r} is not a saved tokenizer folder (no tokenizer_config.json)"
            )
        if self.init_from is not None:
            if not (Path(self.init_from) / "config.json").is_file():
                raise ValueError(f"init_from: {self.init_from!r} is not a model directory (no config.json)")
            source = AutoConfig.from_pretrained(self.init_from)
            limit = source.max_position_embeddings - (source.pad_token_id or 0) - 1
            if self.seq_len > limit:
                raise ValueError(
                    f"seq_len={self.seq_len} is above the longest input of {self.init_from!r} "
                    f"({limit} tokens, max_position_embeddings={source.max_position_embeddings}); lower --seq-len"
                )
        for k in (
            self.projected_length if isinstance(self.projected_length, list) else [self.projected_length]
        ):
            if k is not None and not 1 <= k <= self.seq_len:
                raise ValueError(f"projected_length k={k} must be between 1 and seq_len={self.seq_len}")
        has_checkpoint = Path(self.output_dir).is_dir() and get_last_checkpoint(self.output_dir) is not None
        if self.resume and not has_checkpoint:
            raise ValueError(f"resume: {self.output_dir!r} holds no checkpoint-* folder to resume from")
        if has_checkpoint and not self.resume:
            raise ValueError(
                f"{self.output_dir!r} already holds checkpoints: pass --resume to continue that run, "
                f"or choose another --output-dir"
            )


@dataclass
class PretrainResult:
    output_dir: str
    steps: int
    train_loss: float | None  # mean over this invocation's steps; None when max_steps=0
    eval_loss: float
    perplexity: float  # exp(eval_loss) on the held-out blocks (masking seeded, so runs compare)
    tokens_per_second: float | None  # training tokens (padding-free blocks) per wall-clock second
    num_parameters: int
    eval_blocks: int
    train_blocks: int
    reinitialized: list[str] = field(default_factory=list)  # init_from: weights the checkpoint lacked


def build_tokenizer(config: PretrainConfig, train_text, args: TrainingArguments) -> PreTrainedTokenizerBase:
    """The given tokenizer, the one saved by an earlier (resumed) run, or a fresh byte-level BPE."""
    saved = Path(config.output_dir) / "tokenizer"
    source = config.tokenizer or config.init_from  # a model directory carries its tokenizer
    if source and (Path(source) / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(source)
    with args.main_process_first(desc="train tokenizer"):  # rank 0 trains and saves, the others load
        if not (saved / "tokenizer_config.json").is_file():
            vocab_size = config.vocab_size or PRESETS[config.preset]["vocab_size"]
            tokenizer = train_tokenizer(train_text, vocab_size, config.tokenizer_chars)
            if args.process_index == 0:
                tokenizer.save_pretrained(saved)
            return tokenizer
        return AutoTokenizer.from_pretrained(saved)


def build_model(
    config: PretrainConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[LinformerForMaskedLM, list[str]]:
    """A fresh model of the preset's shape, or `init_from` with this config's Linformer options."""
    linformer = dict(
        projected_length=config.projected_length, sharing=config.sharing, projection=config.projection
    )
    if config.init_from is not None:
        return linformer_from_checkpoint(config.init_from, **linformer)
    shape = {key: value for key, value in PRESETS[config.preset].items() if key != "vocab_size"}
    model_config = LinformerConfig(
        vocab_size=len(tokenizer),
        max_position_embeddings=config.seq_len + tokenizer.pad_token_id + 1,  # RoBERTa positions: n = seq_len
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        **shape,
        **linformer,
    )
    return LinformerForMaskedLM(model_config), []


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
        self.generator = self.get_generator(int.from_bytes(digest, "little") >> 1)  # fits in int64
        return super().__call__(features, return_tensors)


def training_arguments(config: PretrainConfig) -> TrainingArguments:
    return TrainingArguments(
        output_dir=config.output_dir,
        max_steps=config.max_steps if config.max_steps else -1,
        num_train_epochs=config.epochs,
        per_device_train_batch_size=config.batch_size,
        per_device_eval_batch_size=config.batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        learning_rate=config.learning_rate,
        weight_decay=config.weight_decay,
        warmup_steps=config.warmup,
        adam_beta2=0.98,  # RoBERTa's
        save_strategy="steps",
        save_steps=config.save_steps,
        save_total_limit=config.save_total_limit,
        eval_strategy="no",  # one held-out evaluation at the end, with seeded masks
        logging_steps=config.logging_steps,
        seed=config.seed,
        data_seed=config.seed,
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),  # pinning is CUDA-only; silences a CPU warning
        report_to=[],
        include_num_input_tokens_seen="non_padding",  # for tokens/s (blocks hold no padding)
        disable_tqdm=not config.progress,
        **config.extra_training_args,
    )


def pretrain(config: PretrainConfig) -> PretrainResult:
    """Train (or continue) a masked LM as configured; save it with its tokenizer and metrics.json."""
    args = training_arguments(config)
    train_text = load_text(config.train, config.text_column, "train")
    if config.max_train_documents is not None and len(train_text) > config.max_train_documents:
        train_text = train_text.select(range(config.max_train_documents))
    tokenizer = build_tokenizer(config, train_text, args)
    with args.main_process_first(desc="tokenize and pack"):
        train_blocks = pack_blocks(train_text, tokenizer, config.seq_len, "pack train blocks")
        if config.validation:
            eval_text = load_text(config.validation, config.text_column, "validation", split="validation")
            eval_blocks = pack_blocks(eval_text, tokenizer, config.seq_len, "pack validation blocks")
        else:
            split = train_blocks.train_test_split(test_size=config.validation_percent / 100, seed=config.seed)
            train_blocks, eval_blocks = split["train"], split["test"]
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
    collator = ResumableMaskingCollator(tokenizer, mlm_probability=config.mlm_probability, seed=config.seed)
    throughput = ThroughputCallback()
    trainer = Trainer(
        model=model,
        args=args,
        data_collator=collator,
        train_dataset=train_blocks,
        eval_dataset=eval_blocks,
        processing_class=tokenizer,
        callbacks=[throughput, *config.callbacks],
    )

    train_loss = None
    if config.max_steps != 0:
        resume_from = get_last_checkpoint(config.output_dir) if config.resume else None
        train_loss = trainer.train(resume_from_checkpoint=resume_from).training_loss
    eval_loss = trainer.evaluate()["eval_loss"]
    trainer.save_model()  # model.safetensors + config.json + tokenizer files, on the main process only

    result = PretrainResult(
        output_dir=config.output_dir,
        steps=trainer.state.global_step,
        train_loss=train_loss,
        eval_loss=eval_loss,
        perplexity=math.exp(min(eval_loss, 100.0)),
        tokens_per_second=throughput.tokens_per_second(),
        num_parameters=model.num_parameters(),
        eval_blocks=len(eval_blocks),
        train_blocks=len(train_blocks),
        reinitialized=reinitialized,
    )
    publish(trainer, "fill-mask", asdict(result), asdict(config))  # metrics.json, README.md; no pickle
    return result
