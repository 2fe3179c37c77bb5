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

This module is the run; the package, `linformer_kit.train.pretrain`, re-exports its `__all__` (the
pieces' public names among them). The pieces, beside it in train/pretrain/:

    train/pretrain/config.py     PretrainConfig: the options, their values checked on construction
    train/pretrain/preflight.py  the files it names, checked at the start of the run (`preflight`)
    train/pretrain/trainer.py    tokenizer, model, masking collator, MaskedLMTrainer
    train/pretrain/report.py     the start line, PretrainResult, the no-context warning
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Sequence
from dataclasses import asdict

from transformers import PreTrainedTokenizerBase, TrainerCallback, set_seed

from linformer_kit.models.presets import PRESETS  # re-exported: linformer_kit.train.pretrain.PRESETS
from linformer_kit.train.checkpoints import KeepCheckpoint
from linformer_kit.train.context_free import label_unigram, no_context_loss
from linformer_kit.train.curve import CurveCallback
from linformer_kit.train.data import load_text, pack_blocks
from linformer_kit.train.guards import guarded_run, trained_model
from linformer_kit.train.position_loss import loss_by_position, position_ranges
from linformer_kit.train.pretrain.config import PretrainConfig
from linformer_kit.train.pretrain.report import (
    LEARNED_CONTEXT,
    PretrainResult,
    logger,
    no_context_advice,
    start_line,
    warn_if_no_context,
)
from linformer_kit.train.pretrain.trainer import (
    MaskedLMTrainer,
    ResumableMaskingCollator,
    build_model,
    build_tokenizer,
    tokenizer_handover,
)
from linformer_kit.train.publish import limit_tokenizer, publish
from linformer_kit.train.throughput import ThroughputCallback

__all__ = [
    "PRESETS",
    "MaskedLMTrainer",
    "PretrainConfig",
    "PretrainResult",
    "ResumableMaskingCollator",
    "build_model",
    "build_tokenizer",
    "no_context_advice",
    "pretrain",
    "start_line",
    "warn_if_no_context",
]
MASKED_LM_TOKENS = ("mask_token", "pad_token", "bos_token", "eos_token")  # masking and packing need them


def pretrain(config: PretrainConfig, callbacks: Sequence[TrainerCallback] = ()) -> PretrainResult:
    """Train (or continue) a masked LM as configured; save it with its tokenizer and metrics.json.

    `callbacks` are extra `TrainerCallback`s (logging, early stopping, ...), after our own. The files the
    config names are checked first (`preflight`), before any work. The run holds output_dir/.lock while it
    works, stops cleanly on SIGTERM / SIGUSR1 (`Preempted`, after a checkpoint), at a non-finite loss
    (`NonFiniteLoss`) and on a full disk (`DiskFull`): train/guards.py.
    """
    return guarded_run(config, PretrainResult, lambda: _pretrain(config, callbacks))


def _pretrain(config: PretrainConfig, callbacks: Sequence[TrainerCallback]) -> PretrainResult:
    train_text = load_text(config.train, config.text_column, "train")
    if config.max_train_documents is not None and len(train_text) > config.max_train_documents:
        train_text = train_text.select(range(config.max_train_documents))
    tokenizer = build_tokenizer(config, train_text)
    missing = [name for name in MASKED_LM_TOKENS if getattr(tokenizer, name) is None]
    if missing:  # a GPT-2 style tokenizer lacks <mask> and <pad>
        raise ValueError(
            f"tokenizer: {config.tokenizer or config.init_from!r} has no {missing}: masked-LM pretraining needs them"
        )
    train_blocks, eval_blocks = _blocks(config, train_text, tokenizer)

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
        seq_len_schedule=config.phases,
        short_block_positions=config.short_block_positions,
    )

    if trainer.is_world_process_zero():  # the `linformer` command prints linformer_kit's INFO lines
        logger.info(start_line(config, model, len(train_blocks), len(eval_blocks)))
    train_loss = None
    if config.max_steps != 0:
        train_loss = trainer.train(resume_from_checkpoint=config.resume_from_checkpoint).training_loss
    eval_loss = trainer.evaluate()["eval_loss"]
    floor = no_context_loss(collator, eval_blocks, label_unigram(train_blocks, tokenizer),
                            config.per_device_eval_batch_size)  # fmt: skip
    by_position = loss_by_position(trained_model(trainer), collator, eval_blocks, config.per_device_eval_batch_size,
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
    )
    # log_history: training loss and (with eval_strategy="steps") validation loss by step
    metrics = {**asdict(result), "log_history": trainer.state.log_history}
    publish(trainer, "fill-mask", metrics, config.to_dict())  # metrics.json, README.md; no pickle
    warn_if_no_context(result, config, model.config)
    return result


def _blocks(config: PretrainConfig, train_text, tokenizer: PreTrainedTokenizerBase) -> tuple:
    """(train blocks, validation blocks) of seq_len tokens: the validation files', or a held-out share of
    train's; at most max_eval_blocks of them, the first ones (the same for every run)."""
    with config.main_process_first(desc="tokenize and pack", local=False):
        train_blocks = pack_blocks(train_text, tokenizer, config.seq_len, "pack train blocks")
        if config.validation:
            eval_text = load_text(config.validation, config.text_column, "validation", split="validation")
            eval_blocks = pack_blocks(eval_text, tokenizer, config.seq_len, "pack validation blocks")
        else:
            split = train_blocks.train_test_split(test_size=config.validation_percent / 100, seed=config.seed)
            train_blocks, eval_blocks = split["train"], split["test"]
    if config.process_index == 0:  # every rank holds the tokenizer now (the block above ends in a barrier)
        shutil.rmtree(tokenizer_handover(config), ignore_errors=True)
    if len(train_blocks) == 0 or len(eval_blocks) == 0:
        raise ValueError(
            f"the corpus is too short for one block of seq_len={config.seq_len} tokens "
            f"(train blocks: {len(train_blocks)}, validation blocks: {len(eval_blocks)}); "
            f"add text or lower --seq-len"
        )
    if config.max_eval_blocks is not None and len(eval_blocks) > config.max_eval_blocks:
        eval_blocks = eval_blocks.select(range(config.max_eval_blocks))
    return train_blocks, eval_blocks
