"""Sequence-length schedule for masked-LM pretraining: short blocks first, the full length last.

Why: a masked LM sits on the no-context plateau (it predicts each token's unigram frequency) until
its attention learns where to look, and that takes longer the longer the blocks are (with near-uniform
attention a neighbour is 1/n of the signal). BERT trains 90 % of its steps at n = 128 for this reason;
DeepSpeed's sequence-length warm-up and Shortformer measure the same effect (docs/reproduction.md).

A schedule is a list of phases (length L_i, fraction f_i of the optimizer steps), e.g. 128:0.5,512:0.5.
It is applied to batches, not to the data: the data are always packed into blocks of the final length
n (= seq_len), and in a phase of length L each (b, n) batch is cut into (b·n/L, L) blocks just before
the forward pass. So:
    - tokens per step are the same in every phase (the batch grows by n/L as blocks shrink), and so
      are the masks (masking is per token, before the cut), hence the no-context floor;
    - which phase a step is in is a function of the optimizer step alone: a resumed run cuts exactly
      as the uninterrupted one did, across phase boundaries too;
    - the model is built for n (a Linformer's E and F are sized to n; shorter phases use their first
      L columns, the length contract of `SequenceProjection`).
Evaluation during training uses the current phase's length (the curve shows what the model learns as
it trains); the final evaluation, after the last phase, is at n.

Text form (flags, config files, recipes): "L1:f1,L2:f2,...", "none" (every step at n), or "auto"
(the default: n/4 for the first half of the steps, then n, when n/4 >= MIN_SHORT_LENGTH; else none).
Phase i covers steps [round(F_{i-1}·T), round(F_i·T)) of T, with F_i = f_1 + ... + f_i.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

Schedule = list[tuple[int, float]]  # (length, fraction of the optimizer steps), in order
AUTO_SHORT_FRACTION = 0.5  # the default's first phase; measured in docs/reproduction.md
MIN_SHORT_LENGTH = 64  # "auto" leaves shorter runs alone: their blocks are short already


def parse_schedule(text: str, seq_len: int) -> Schedule:
    """'128:0.5,512:0.5' -> [(128, 0.5), (512, 0.5)]; 'none' -> [(seq_len, 1.0)]; 'auto' -> the default."""
    word = text.strip().lower()
    if word == "none":
        return [(seq_len, 1.0)]
    if word == "auto":
        short = seq_len // 4
        if seq_len % 4 or short < MIN_SHORT_LENGTH:
            return [(seq_len, 1.0)]
        return [(short, AUTO_SHORT_FRACTION), (seq_len, 1.0 - AUTO_SHORT_FRACTION)]
    phases = []
    for part in text.split(","):
        length, sep, fraction = part.partition(":")
        try:
            phases.append((int(length), float(fraction)))
        except ValueError:
            raise ValueError(
                f"seq_len_schedule: expected LENGTH:FRACTION pairs separated by commas (e.g. "
                f"'128:0.5,{seq_len}:0.5'), 'auto' or 'none', got {text!r}"
            ) from None
        if not sep:
            raise ValueError(f"seq_len_schedule: {part!r} has no ':FRACTION' (in {text!r})")
    return phases


def check_schedule(phases: Sequence[Sequence], seq_len: int) -> Schedule:
    """The phases as a validated Schedule; ValueError names the phase and the rule it breaks."""
    checked: Schedule = []
    for phase in phases:
        if not (isinstance(phase, (list, tuple)) and len(phase) == 2):
            raise ValueError(f"seq_len_schedule: each phase is (length, fraction), got {phase!r}")
        length, fraction = phase
        if isinstance(length, bool) or not isinstance(length, int) or not 8 <= length <= seq_len:
            raise ValueError(
                f"seq_len_schedule: length {length!r} must be an int between 8 and seq_len={seq_len}"
            )
        if seq_len % length:
            raise ValueError(
                f"seq_len_schedule: length {length} must divide seq_len={seq_len} (a block of {seq_len} "
                f"tokens is cut into {seq_len}/{length} blocks)"
            )
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise ValueError(f"seq_len_schedule: fraction {fraction!r} of length {length} must be in (0, 1]")
        checked.append((length, float(fraction)))
    if not checked:
        raise ValueError("seq_len_schedule: no phase; give 'auto', 'none' or LENGTH:FRACTION pairs")
    total = sum(fraction for _, fraction in checked)
    if not math.isclose(total, 1.0, abs_tol=1e-6):
        raise ValueError(f"seq_len_schedule: the fractions {[f for _, f in checked]} sum to {total:g}, not 1")
    if checked[-1][0] != seq_len:
        raise ValueError(
            f"seq_len_schedule: the last phase has length {checked[-1][0]}, but it must end at "
            f"seq_len={seq_len} (the length the model is built and evaluated for)"
        )
    return checked


def length_at(phases: Schedule, step: int, max_steps: int) -> int:
    """The block length of optimizer step `step` (0-based) of a run of `max_steps` steps."""
    end = 0.0
    for length, fraction in phases:
        end += fraction
        if step < round(end * max_steps):
            return length
    return phases[-1][0]  # at and after the last step (the final evaluation)


def cut_blocks(inputs: dict[str, torch.Tensor], length: int) -> dict[str, torch.Tensor]:
    """Every (b, n) tensor of a batch as (b·n/length, length); other entries unchanged.

    Row-major: block i of the result is tokens [j·length, (j+1)·length) of row i // (n/length).
    """
    cut = {}
    for name, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() == 2 and value.shape[1] != length:
            value = value.reshape(-1, length)  # (b·n/L, L)
        cut[name] = value
    return cut
