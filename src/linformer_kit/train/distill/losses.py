"""The losses of `linformer distill`'s stages (torch only): a student against its frozen teacher.

    attention transfer  layer i of the student gets the teacher's input to layer i's attention, x_i, and
                        matches its output:
                            L_att = mean_i ||A_i^S(x_i) - A_i^T(x_i)||² / ||A_i^T(x_i)||²   (real tokens)
                        Layers are independent, so this is cheap, and its floor is what the chosen
                        attention can represent (LoLCATs' attention transfer).
    end to end          on the student's own forward pass:
                            L_e2e = mean_l ||h_l^S - h_l^T||² / ||h_l^T||²  (+ KL(p^T || p^S) on the
                            masked-LM logits when the teacher has a masked-LM head: CALD's losses)
                                    + embedding_weight (1 - cos(mean-pooled h_L^S, h_L^T))

Every term counts real tokens only (the batch's attention_mask): padding changes none of them, and each
is 0 when the student is the teacher.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from linformer_kit.models.embedding import sentence_embedding
from linformer_kit.nn import LinformerSelfAttention

# what a forward hook of a Linformer attention layer records: its input x, key padding mask, output
AttentionRecord = tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]


def attention_layers(model: nn.Module) -> list[LinformerSelfAttention]:
    """The Linformer attention layers of `model`, in order (first layer first)."""
    return [m for m in model.modules() if isinstance(m, LinformerSelfAttention)]


@contextmanager
def attention_io(model: nn.Module) -> Iterator[list[AttentionRecord]]:
    """Record (x, key_padding_mask, output) of every Linformer attention layer of `model`, in order."""
    records: list[AttentionRecord] = []

    def hook(module: nn.Module, args: tuple[Any, ...], output: torch.Tensor) -> None:
        records.append((args[0], args[1] if len(args) > 1 else None, output))

    handles = [layer.register_forward_hook(hook) for layer in attention_layers(model)]
    try:
        yield records
    finally:
        for handle in handles:
            handle.remove()


def relative_error(got: torch.Tensor, want: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """||got - want||² / ||want||² over the real tokens: (b, n, D), (b, n, D), (b, n) bool -> scalar."""
    weight = real[..., None].to(want.dtype)
    return ((got - want).square() * weight).sum() / (want.square() * weight).sum().clamp_min(1e-12)


def attention_transfer_loss(
    student: nn.Module, teacher: nn.Module, inputs: Mapping[str, torch.Tensor]
) -> torch.Tensor:
    """L_att of the module docstring: each student layer on the teacher's input to that layer."""
    with torch.no_grad(), attention_io(teacher) as records:
        teacher(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
    real = inputs["attention_mask"].bool()
    errors = [
        relative_error(layer(x, mask), want, real)
        for layer, (x, mask, want) in zip(attention_layers(student), records, strict=True)
    ]
    return torch.stack(errors).mean()


def end_to_end_loss(
    student: nn.Module,
    teacher: nn.Module,
    inputs: Mapping[str, torch.Tensor],
    logits_weight: float,
    embedding_weight: float = 0.0,
) -> torch.Tensor:
    """L_e2e of the module docstring: hidden states of every layer, masked-LM logits where there are any,
    and 1 - cos of the mean-pooled last hidden states (the sentence embedding) with `embedding_weight`."""
    batch = {"input_ids": inputs["input_ids"], "attention_mask": inputs["attention_mask"]}
    with torch.no_grad():
        want = teacher(**batch, output_hidden_states=True)
    got = student(**batch, output_hidden_states=True)
    real = inputs["attention_mask"].bool()
    errors = [
        relative_error(s, t, real) for s, t in zip(got.hidden_states[1:], want.hidden_states[1:], strict=True)
    ]
    loss = torch.stack(errors).mean()
    if getattr(want, "logits", None) is not None and logits_weight > 0:
        log_p, log_q = want.logits[real].log_softmax(-1), got.logits[real].log_softmax(-1)
        loss = loss + logits_weight * (log_p.exp() * (log_p - log_q)).sum(-1).mean()
    if embedding_weight > 0:
        # 1 - cos as half the squared distance of the unit vectors: exactly 0, with a zero gradient, when equal
        unit = [
            sentence_embedding(h[-1], real) for h in (got.hidden_states, want.hidden_states)
        ]  # (b, D) each
        loss = loss + embedding_weight * 0.5 * (unit[0] - unit[1]).square().sum(-1).mean()
    return loss
