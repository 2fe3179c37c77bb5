"""The long stage's loss (train/distill/long.py): four terms against a teacher that reads no more than 512 tokens.

No teacher reads N tokens, but targets exist (issue "Long documents beat chunking"). Each step
takes B spans of N tokens of one long document each (`long_train`: e.g. Gutenberg train, IMDB unsup)
and B short documents of the 512 stages' examples:

    (a) window   the teacher's hidden states of every layer, each token's taken from a 512-token window
                 of the span in which it sits near the centre (windows at a stride of half their
                 length): "the original with context on both sides", read by the student in one pass
                     L_win = mean_l ||h_l^S(span) - h_l^win||² / ||h_l^win||²      (all tokens real)
    (b) halves   the span's two halves embedded apart (mean pooling, normalised; `halves`="split": halves of
                 N / 2 tokens; "whole": spans of 2 N - 2 tokens, so each half is N and (a) reads the first),
                 each first half against the B second halves of the batch, in-batch negatives,
                 MultipleNegativesRankingLoss's semantics (sentence-transformers):
                 L_mnr = CE(scale · cos(a_i, p_j), j = i)
                 with `negatives_bank` M > 0, the second halves of earlier steps too (negatives.py)
    (c) short    L_e2e (train/distill/losses.py) on the short documents against the teacher at 512:
                 what keeps the 512 fidelity. `short_text="train+long"` (the default) alternates them with
                 512-token windows of the long text, each source in turn (data.py `source_windows`), so the
                 short reading is held where the long stage trains too: with IMDB reviews alone, `c1`'s
                 fidelity on 512-token book passages fell to 0.887; with the windows each source in turn, 0.943
    (d) crops    `crops_per_half` crops of `crop_length` tokens of each half, embedded by the teacher (the
                 query a user writes is read at short length), each against the 2B halves of (b): its own
                 half against the same span's other half (the same book: a hard negative) and the
                 batch's. The long reading must keep what each piece of its text says, which a fact in
                 prose (needle) asks of it: L_crop = CE(scale · cos(t_c, a_j), j = half(c)). The queries
                 are the teacher's (no gradient), but the halves' gradient reaches every weight the
                 short reading shares: on MiniLM (d) at weight 1 cost fidelity at 512 (0.971 -> 0.951)

    L_long = window_weight · L_win + contrastive_weight · L_mnr + short_weight · L_e2e + crop_weight · L_crop
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn
from torch.nn import functional as F

from linformer_kit.models.embedding import encoder_of, sentence_embedding
from linformer_kit.train.distill.config import DistillConfig
from linformer_kit.train.distill.losses import end_to_end_loss, relative_error
from linformer_kit.train.distill.negatives import NegativesBank


@torch.no_grad()
def window_targets(teacher: nn.Module, input_ids: torch.Tensor, window: int) -> list[torch.Tensor]:
    """Per layer (embeddings first, as `hidden_states`), (b, n, D): each token's state from the `window`-token
    teacher window (its own [CLS] ... [SEP]) whose centre is nearest to it. `input_ids` (b, n) are whole
    spans, [CLS] + n - 2 tokens + [SEP], no padding; the first window gives [CLS]'s state, the last [SEP]'s."""
    b, n = input_ids.shape
    body, inner = n - 2, window - 2
    if body <= inner:  # one window holds the whole span
        return list(teacher(input_ids=input_ids, output_hidden_states=True).hidden_states)
    stride = inner // 2
    starts = [*range(0, body - inner, stride), body - inner]  # (W,) the last window ends at the end
    cls, sep, text = input_ids[:, :1], input_ids[:, -1:], input_ids[:, 1:-1]
    windows = torch.cat([torch.cat([cls, text[:, a : a + inner], sep], 1) for a in starts])  # (W b, window)
    states = teacher(input_ids=windows, output_hidden_states=True).hidden_states  # per layer (W b, window, D)
    centres = torch.tensor(starts) + inner / 2  # (W,)
    nearest = (torch.arange(body)[:, None] + 0.5 - centres[None, :]).abs().argmin(-1)  # (body,) window of t
    within = torch.arange(body) - torch.tensor(starts)[nearest] + 1  # (body,) t's place in its window
    targets = []
    for layer in states:
        layer = layer.view(len(starts), b, window, -1)  # (W, b, window, D)
        middle = layer[nearest, :, within].transpose(0, 1)  # (b, body, D)
        targets.append(torch.cat([layer[0, :, :1], middle, layer[-1, :, -1:]], 1))  # (b, n, D)
    return targets


def halves(input_ids: torch.Tensor) -> torch.Tensor:
    """(b, n) whole spans -> (2, b, m + 2): each span's two halves of m = (n - 2) // 2 text tokens, [CLS] / [SEP]
    around each (an odd text's last token is dropped, so both halves are one length)."""
    cls, sep, text = input_ids[:, :1], input_ids[:, -1:], input_ids[:, 1:-1]
    middle = text.shape[1] // 2
    return torch.stack(
        [torch.cat([cls, half, sep], 1) for half in (text[:, :middle], text[:, middle : 2 * middle])]
    )


def embedded_halves(model: nn.Module, input_ids: torch.Tensor) -> torch.Tensor:
    """(b, n) whole spans -> (2, b, D): the unit embeddings of each span's first and second half."""
    out = []
    for ids in halves(input_ids):
        mask = torch.ones_like(ids)
        out.append(sentence_embedding(model(input_ids=ids, attention_mask=mask).last_hidden_state, mask))
    return torch.stack(out)


def halves_loss(embedded: torch.Tensor, scale: float, bank: torch.Tensor | None = None) -> torch.Tensor:
    """L_mnr of the module docstring from `embedded_halves` (b >= 2 spans); `bank` (M, D): unit second halves
    of earlier steps, further negatives (negatives.py)."""
    documents = (
        embedded[1] if bank is None else torch.cat([embedded[1], bank.to(embedded.dtype)])
    )  # (b + M, D)
    logits = scale * embedded[0] @ documents.T  # (b, b + M) cosines of unit vectors
    return F.cross_entropy(logits, torch.arange(len(logits), device=logits.device))


def crops_loss(
    teacher: nn.Module, input_ids: torch.Tensor, embedded: torch.Tensor, length: int, count: int, scale: float
) -> torch.Tensor:
    """L_crop of the module docstring: `count` random crops of `length` text tokens of each half of each span
    (`input_ids` (b, n)), read by `teacher` (an encoder), against the 2 b halves `embedded` (2, b, D)."""
    ids = halves(input_ids).flatten(0, 1)  # (2 b, m + 2): half j = h b + i
    text = ids[:, 1:-1]
    starts = torch.randint(0, text.shape[1] - length + 1, (len(ids), count), device=ids.device)  # (2b, count)
    crops = text.gather(1, (starts[..., None] + torch.arange(length, device=ids.device)).flatten(1))
    crops = crops.view(len(ids) * count, length)  # (2 b count, length): crop c of half j at row j count + c
    crops = torch.cat(
        [ids[:, :1].repeat_interleave(count, 0), crops, ids[:, -1:].repeat_interleave(count, 0)], 1
    )
    mask = torch.ones_like(crops)
    with torch.no_grad():
        queries = sentence_embedding(teacher(input_ids=crops, attention_mask=mask).last_hidden_state, mask)
    logits = scale * queries @ embedded.flatten(0, 1).T  # (2 b count, 2 b)
    target = torch.arange(len(ids), device=ids.device).repeat_interleave(count)
    return F.cross_entropy(logits, target)


def long_loss(
    model: nn.Module,
    teacher: nn.Module,
    inputs: dict[str, torch.Tensor],
    config: DistillConfig,
    bank: NegativesBank | None = None,
) -> torch.Tensor:
    """L_long of the module docstring: the sum of `long_terms` (one graph; `LongTrainer.training_step` backs
    through each term apart, and a test checks the two give one gradient)."""
    return torch.stack(list(long_terms(model, teacher, inputs, config, bank))).sum()


def long_terms(
    model: nn.Module,
    teacher: nn.Module,
    inputs: dict[str, torch.Tensor],
    config: DistillConfig,
    bank: NegativesBank | None = None,
) -> Iterator[torch.Tensor]:
    """The weighted terms of L_long whose weight is above 0, each built when the last is taken: the window
    term (a), the halves' (b) with the crops' (d) (they share the embedded halves), the short term (c).
    `bank`: the halves term's banked negatives, read, then given this batch's second halves."""
    encoder = encoder_of(model)  # the last hidden state, not a head's logits (PEFT-wrapped or not)
    ids = inputs["input_ids"]  # (b, n): spans, no padding
    if config.window_weight > 0:
        assert config.seq_len is not None
        # halves="whole": a span is two halves of long_length, and the window term reads the first
        read = ids if config.halves == "split" else halves(ids)[0]
        # the encoders, not the head models: a masked-LM head would build (b, n, vocab) logits and drop them
        # (2 GB of fp32 at 4 x 4 096 x 30 522)
        want = window_targets(encoder_of(teacher), read, config.seq_len)
        mask = torch.ones_like(read)
        got = encoder(input_ids=read, attention_mask=mask, output_hidden_states=True).hidden_states
        real = mask.bool()
        errors = [relative_error(s, t, real) for s, t in zip(got[1:], want[1:], strict=True)]
        yield config.window_weight * torch.stack(errors).mean()
        del want, got, errors  # the graph goes with its backward; the targets go too
    if config.contrastive_weight > 0 or config.crop_weight > 0:
        embedded = embedded_halves(encoder, ids)  # (2, b, D): the long reading of each half
        term = ids.new_zeros((), dtype=torch.float32)
        if config.contrastive_weight > 0:
            held = None if bank is None else bank.rows
            term = term + config.contrastive_weight * halves_loss(embedded, config.contrastive_scale, held)
            if bank is not None:
                bank.push(embedded[1])
        if config.crop_weight > 0:
            crops = crops_loss(encoder_of(teacher), ids, embedded, config.crop_length, config.crops_per_half,
                               config.contrastive_scale)  # fmt: skip
            term = term + config.crop_weight * crops
        yield term
        del embedded, term
    assert config.short_weight is not None  # the preflight's default
    if config.short_weight > 0:
        short = {"input_ids": inputs["short_input_ids"], "attention_mask": inputs["short_attention_mask"]}
        yield config.short_weight * end_to_end_loss(
            model, teacher, short, config.logits_weight, config.embedding_weight
        )
