"""What a pretraining run says: the line before it starts, its result, and whether it learned context."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from transformers import PreTrainedConfig

from linformer_kit.models import LinformerPreTrainedModel
from linformer_kit.nn.options import format_projected_length
from linformer_kit.train.pretrain.config import PretrainConfig
from linformer_kit.train.schedule import parse_schedule

logger = logging.getLogger("linformer_kit.train.pretrain")  # the run's logger: its lines keep their name


@dataclass
class PretrainResult:
    output_dir: str
    steps: int
    # mean over this invocation's steps (after resumed_from_step); None when max_steps=0
    train_loss: float | None
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
    # --resume (a study's branch too: reproduction/branch.py): the checkpoint's step (train_loss covers the
    # steps after it)
    resumed_from_step: int = 0


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


def start_line(
    config: PretrainConfig, model: LinformerPreTrainedModel, train_blocks: int, eval_blocks: int
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
    schedule = config.phases
    phases = "" if not schedule else ", lengths " + ",".join(f"{n}:{f:g}" for n, f in schedule)
    origin = f"{config.shape} encoder" if config.init_from is None else f"encoder from {config.init_from}"
    return (
        f"pretrain: {origin} ({c.hidden_size} wide x {c.num_hidden_layers} layers, "
        f"{c.layer_norm}-LN), {attention}, {model.num_parameters() / 1e6:.2f} M parameters; "
        f"data {train_blocks:,} train / {eval_blocks:,} validation blocks of {config.seq_len} tokens; "
        f"{tokens_per_step:,} tokens/step ({sequences} sequences){phases}; {steps:,} steps = "
        f"{steps * tokens_per_step / 1e6:,.1f} M tokens; {config.device.type}, {dtype}"
    )
