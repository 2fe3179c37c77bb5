"""The long stage of `distill`: the student extended to N tokens and trained on long text.

Each step's loss, L_long, is the weighted sum of four terms (train/distill/long_losses.py: the window's
(a), the halves' (b), the short documents' (c), the crops' (d)).

What trains (`long_tune`): what `tune` names (every weight by default), "projections": E and F alone,
"adapters": E and F and new long adapters (`with_long_adapters`: a rank-r update of each attention linear
that only inputs longer than exact_length read, nn/long_adapters.py), or "layers": long layers
(`with_long_layers`: a copy of every layer, E and F included, that only inputs longer than exact_length read,
nn/long_layers.py). With `exact_length` T >= seq_len every input of at most T tokens is read exactly, without
E, F, adapters or long layers, by the 512 student's weights, which the last three leave untouched: the long
student's fidelity at seq_len is fixed before the stage starts (that of the 512 student's weights read
exactly, not the 512 student's own, which projects), however hard the long terms push, and the long reading
is learned in the weights only it has. With long layers, `short_layers="original"` (the default) goes one
step further: every weight but the long layers' is the teacher's (`read_short_as_original`), so an input of at
most T tokens is read as the original reads it (fidelity 1 up to round-off; the 512 stages then only start
the long layers), and "student" keeps the 512 student's.
A term whose inputs are all read exactly then trains nothing and is refused: the short term (c), and the
halves' (b) and crops' (d) if a half is at most T tokens. The price: the long reading cannot change the
shared weights.

E and F are resized to N before the stage (`projection_resize`): "interpolate" stretches each trained
slot over the same share of the longer input (E_N[j, t] = E_L[j, ⌊t L / N⌋] · L / N: a window mean stays
the window mean of the same share, row sums kept), "restart" starts them anew at their window start
(what `linformer extend` does). The positions wrap (row p mod L, Longformer's copy).
"""

from __future__ import annotations

import copy
import functools
import logging
import re
from collections.abc import Sequence
from typing import Any

import datasets
import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from linformer_kit.allocator import map_large_blocks
from linformer_kit.models import LinformerPreTrainedModel
from linformer_kit.models.convert import is_projection_key
from linformer_kit.models.extend import extended
from linformer_kit.train.distill.config import LONG_OPTIONS, DistillConfig
from linformer_kit.train.distill.data import LongText, long_spans, source_windows
from linformer_kit.train.distill.long_losses import long_loss, long_terms
from linformer_kit.train.distill.negatives import NegativesBank
from linformer_kit.train.distill.trainer import DistillTrainer, StagePlan, run_stage, student_from

logger = logging.getLogger(__name__)


def long_student(
    student: LinformerPreTrainedModel, config: DistillConfig, teacher: LinformerPreTrainedModel
) -> LinformerPreTrainedModel:
    """The student reading `long_length` tokens, E and F resized as `projection_resize` says, `exact_length`
    set (inputs of at most that many tokens then train and run exactly: nn/exact_rows.py), in train mode;
    with long layers, every other weight the teacher's where `short_layers` is "original"."""
    assert config.long_length is not None
    longer = extended(student, config.long_length, exact_length=config.exact_length)
    if config.long_tune == "adapters":
        longer = with_long_adapters(longer, config.long_adapter_rank)
    if config.projection_resize == "interpolate":
        old = student.state_dict()
        with torch.no_grad():
            for name, parameter in longer.named_parameters():
                if is_projection_key(name) and name in old and old[name].shape != parameter.shape:
                    parameter.copy_(stretched(old[name], parameter.shape[-1]))
    # long layers copy the layers as resized: the long reading starts as the short one
    if config.long_tune == "layers":
        longer = with_long_layers(longer, config.exact_length)
        if config.short_layers == "original":
            read_short_as_original(longer, teacher, config)
    return longer.train().requires_grad_(True)


def read_short_as_original(
    model: LinformerPreTrainedModel, teacher: LinformerPreTrainedModel, config: DistillConfig
) -> None:
    """Every weight of `model` but its long layers' and E and F becomes the teacher's, converted and extended as
    the student was (`student_from`, `extended`: positions wrapped alike). An input of at most exact_length
    tokens is then read as the teacher reads it, up to float round-off (exact attention against the teacher's
    full attention), whatever the 512 stages did. E and F stay the student's: the first stack's are read by no
    input (a row of at most exact_length tokens is read exactly, a longer one by the long layers), and under
    sharing="layerwise" the one E the long layers read is the encoder's. The long layers keep the 512 student's
    weights and read the teacher's embeddings, from which end to end moved the student's by 0.8 % (words) and
    2.8 % (positions) in relative norm (`sbw`'s 512 stage): the long stage starts near where it would."""
    assert config.long_length is not None
    original = extended(student_from(teacher, config), config.long_length, exact_length=config.exact_length)
    state = {key: value for key, value in original.state_dict().items() if not is_projection_key(key)}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected, unexpected
    assert all(".long_layer." in key or is_projection_key(key) for key in missing), missing


def with_long_adapters(model: LinformerPreTrainedModel, rank: int) -> LinformerPreTrainedModel:
    """`model` with new long adapters of rank `rank` in every projected layer (nn/long_adapters.py; B = 0:
    the same outputs), every other weight its own."""
    adapted = _rebuilt(model, long_adapter_rank=rank)
    missing, unexpected = adapted.load_state_dict(model.state_dict(), strict=False)
    assert not unexpected, unexpected
    assert all(".long_adapters." in key for key in missing), missing
    return adapted


def with_long_layers(model: LinformerPreTrainedModel, exact_length: int | None) -> LinformerPreTrainedModel:
    """`model` with long layers (nn/long_layers.py) read by rows of more than `exact_length` real tokens (the
    model's own where None), each a copy of its layer: the same outputs, every other weight its own."""
    doubled = _rebuilt(model, long_layers=True, exact_length=exact_length or model.config.exact_length)
    state = model.state_dict()
    layer = re.compile(r"(^|\.)encoder\.layer\.")  # linformer.encoder.layer.0... in a head model
    state.update({layer.sub(r"\1encoder.long_layer.", key, count=1): value for key, value in state.items()
                  if layer.search(key)})  # fmt: skip
    doubled.load_state_dict(state, strict=True)
    return doubled


def _rebuilt(model: LinformerPreTrainedModel, **fields: Any) -> LinformerPreTrainedModel:
    """A new model of `model`'s type with its config but `fields` (validated: exact_length set for long
    adapters and layers; DistillConfig checks it first), on its device and in its dtype, weights not loaded."""
    config = copy.deepcopy(model.config)
    for name, value in fields.items():
        setattr(config, name, value)
    config._validate_linformer()
    rebuilt = type(model)(config)
    first = next(model.parameters())
    nn.Module.to(rebuilt, first.device, first.dtype)  # in place (transformers types its `to` apart)
    return rebuilt


def stretched(weight: torch.Tensor, length: int) -> torch.Tensor:
    """(*, k, L) -> (*, k, length): column t takes column ⌊t L / length⌋, scaled by L / length (row sums kept)."""
    old = weight.shape[-1]
    source = torch.arange(length, device=weight.device) * old // length
    return weight.index_select(-1, source) * (old / length)


def long_examples(spans: list[list[int]], short: list[list[int]]) -> datasets.Dataset:
    """Rows of a long span (input_ids) and a short example (short_input_ids), short ones cycled."""
    return datasets.Dataset.from_dict(
        {"input_ids": spans, "short_input_ids": [short[i % len(short)] for i in range(len(spans))]}
    )


def short_examples(
    config: DistillConfig, short: datasets.Dataset, long_sources: Sequence[datasets.Dataset],
    tokenizer: PreTrainedTokenizerBase, count: int,
) -> list[list[int]]:  # fmt: skip
    """The short term's (c) `count` examples: the 512 stages' (`short_text="train"`), or those alternating with
    windows of seq_len tokens of the long text, at most 4 a document ("train+long"), each source in turn
    (`source_windows`); ValueError when the long text holds no such window."""
    assert config.seq_len is not None
    ids = [short[i % len(short)]["input_ids"] for i in range(count)]
    assert config.short_weight is not None  # the preflight's default
    if config.short_text == "train" or config.short_weight == 0:  # (no short term: no windows cut for it)
        return ids
    windows = source_windows(long_sources, tokenizer, config.seq_len, (count + 1) // 2, config.seed + 2)
    if not windows:
        raise ValueError(
            f"short_text='train+long': the long text holds no window of seq_len={config.seq_len} tokens; "
            "use --short-text train"
        )
    return [windows[(i // 2) % len(windows)] if i % 2 else ids[i // 2] for i in range(count)]


class LongCollator:
    """Pads the spans (all one length) and the short documents apart: input_ids, short_input_ids and masks."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tokenizer = tokenizer

    def __call__(self, rows: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        out = {}
        for key, prefix in (("input_ids", ""), ("short_input_ids", "short_")):
            padded = self.tokenizer.pad({"input_ids": [r[key] for r in rows]}, return_tensors="pt")
            out[f"{prefix}input_ids"], out[f"{prefix}attention_mask"] = (
                padded["input_ids"],
                padded["attention_mask"],
            )
        return out


class LongTrainer(DistillTrainer):
    """`DistillTrainer` whose loss is L_long (module docstring); the weights are the config's. A step backs
    through each term's graph before the next term is built (`training_step`)."""

    def __init__(self, *args: Any, config: DistillConfig, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config = config
        # the halves term's banked negatives (negatives.py); training steps fill it, evaluation neither reads nor fills it
        self.bank = NegativesBank(config.negatives_bank) if config.negatives_bank > 0 else None

    def stage_loss(self, model: nn.Module, inputs: dict[str, torch.Tensor | Any]) -> torch.Tensor:
        return long_loss(model, self.teacher, inputs, self.config, self.bank if model.training else None)

    def training_step(
        self, model: nn.Module, inputs: dict[str, torch.Tensor | Any], num_items_in_batch: Any = None
    ) -> torch.Tensor:
        """One backward a term of L_long (`long_terms`), in place of one backward of their sum: the gradient
        is the same sum, but only one term's graph is held at a time, where one backward holds all three
        (the window term's and the halves' each read the whole span). What it keeps of
        `Trainer.training_step`: train mode (and the optimizer's), the inputs on the device, the loss context
        around each forward, the loss over the gradient accumulation steps. Distributed (DDP, DeepSpeed: one
        gradient reduction, one engine step a backward) it is `Trainer.training_step`, one backward."""
        if self.accelerator.distributed_type != "NO":  # accelerate's DistributedType.NO (a str enum)
            return super().training_step(model, inputs, num_items_in_batch)
        model.train()
        optimizer_train = getattr(self.optimizer, "train", None)
        if callable(optimizer_train):  # schedule-free optimizers
            optimizer_train()
        inputs = self._prepare_inputs(inputs)
        terms = long_terms(model, self.teacher, inputs, self.config, self.bank)
        total = torch.zeros((), device=self.args.device)
        while True:
            with self.compute_loss_context_manager():
                term = next(terms, None)
            if term is None:
                return self.finite(total)  # the guard of every stage (train/guards.py)
            term = term / self.current_gradient_accumulation_steps
            if term.requires_grad:  # a term whose inputs were all read exactly trains nothing on this batch
                self.accelerator.backward(term)
            total += term.detach()


# options added after stages that resume, each with what every run before it did (long_held_out: the share
# held out before the option existed): at that value an option is left out of those a resume compares
ADDED_LATER = {"long_held_out": 0.1, "halves": "split", "negatives_bank": 0, "long_spans_per_document": None}


def long_stage(config: DistillConfig) -> StagePlan:
    """The long stage as configured: its steps, batch, learning rate, and every option a resume compares
    (`run_stage` adds attention_dropout where it is not the student's own)."""
    options = {name: getattr(config, name) for name in LONG_OPTIONS}
    options.update(config.conversion_options(), long_length=config.long_length, seq_len=config.seq_len,
                   exact_length=config.exact_length)  # fmt: skip
    if config.long_tune == "tune":  # left out: a stage run before the option existed resumes as it was
        del options["long_tune"]
    if config.long_tune != "adapters":  # (likewise)
        del options["long_adapter_rank"]
    if config.long_tune != "layers" or config.short_layers == "student":  # (likewise)
        del options["short_layers"]
    for name, before in ADDED_LATER.items():  # (likewise)
        if options[name] == before:
            del options[name]
    if config.short_text == "train":  # (likewise)
        del options["short_text"]
    elif config.long_train and len(config.long_train) > 1:
        # windows each source in turn since 14c43ba: a stage that drew them at once is not resumed as one
        options["short_windows"] = "each source in turn"
    trains = config.tune if config.long_tune == "tune" else config.long_tune
    if trains == "lora":  # what trains is compared on resume too (all: left out, as before)
        options.update(tune=config.tune, lora_rank=config.lora_rank)
    return StagePlan(
        "long", "long", trains, config.long_steps, config.long_learning_rate, options,
        trainer=functools.partial(LongTrainer, config=config), collator=LongCollator,
        batch_size=config.long_batch_size,
    )  # fmt: skip


def span_length(config: DistillConfig) -> int:
    """Tokens of a long stage's span: long_length, or with halves="whole" two halves of long_length tokens
    each ([CLS] + 2 (long_length - 2) text tokens + [SEP]: `halves` cuts it into two of long_length)."""
    assert config.long_length is not None
    return config.long_length if config.halves == "split" else 2 * config.long_length - 2


def run_long_stage(
    config: DistillConfig,
    student: LinformerPreTrainedModel,
    teacher: LinformerPreTrainedModel,
    short: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
    long: LongText,
) -> tuple[LinformerPreTrainedModel, float]:
    """The student extended to long_length (`long_student`), trained on spans of the long text (data.py's
    `long_text`: the held-out documents left out) mixed with the short term's examples (`short_examples`)
    (`run_stage`: its own Trainer in output_dir/long/, resumable); ValueError when the long text holds no
    span of long_length tokens."""
    assert config.long_length is not None
    map_large_blocks()  # a long step's large activations are returned when freed (allocator.py)
    longer = long_student(student, config, teacher)
    wanted = config.long_steps * config.long_batch_size * config.gradient_accumulation_steps
    length = span_length(config)
    spans = long_spans(long.train, tokenizer, length, wanted, config.seed, config.long_spans_per_document)
    if len(spans) < config.long_batch_size:
        raise ValueError(
            f"long_train: the text holds {len(spans)} span(s) of {length} tokens (long_length="
            f"{config.long_length}, halves={config.halves!r}), fewer than long_batch_size="
            f"{config.long_batch_size}; give longer documents or lower --long-length"
        )
    if config.negatives_bank > 0 and len(spans) < wanted:
        logger.warning(
            f"distill: long_train holds {len(spans)} spans of {length} tokens for {wanted} a stage: spans repeat, "
            f"and the bank (negatives_bank={config.negatives_bank}) may hold a query's own second half as a negative"
        )
    rows = long_examples(spans, short_examples(config, short, long.sources, tokenizer, len(spans)))
    return run_stage(config, long_stage(config), longer, teacher, rows, tokenizer)
