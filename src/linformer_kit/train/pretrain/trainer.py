"""The pieces of a pretraining run's Trainer: tokenizer, model, masking collator, masked-LM Trainer."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import torch
from transformers import AutoTokenizer, DataCollatorForLanguageModeling, PreTrainedTokenizerBase

from linformer_kit.models import LinformerForMaskedLM, LinformerPreTrainedModel
from linformer_kit.models.presets import PRESETS
from linformer_kit.train.data import train_tokenizer
from linformer_kit.train.guards import GuardedTrainer
from linformer_kit.train.init_from import linformer_from_checkpoint
from linformer_kit.train.pretrain.config import PretrainConfig, ShortBlockPositions
from linformer_kit.train.schedule import Schedule, cut_blocks, length_at


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
            shutil.rmtree(tokenizer_handover(config), ignore_errors=True)
            tokenizer.save_pretrained(tokenizer_handover(config))
            return tokenizer
        return AutoTokenizer.from_pretrained(tokenizer_handover(config))


def tokenizer_handover(config: PretrainConfig) -> Path:
    return Path(config.output_dir) / ".tokenizer-handover"


def build_model(
    config: PretrainConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[LinformerPreTrainedModel, list[str]]:
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
        seq_len_schedule: Schedule | None = None,
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
        assert self.seq_len_schedule is not None  # (asked with a schedule only)
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
