"""Longer inputs than a model was trained for: its learned position table extended by wrapping.

With `max_length=N` above the source's longest input L (`longest_input`, models/config_rules.py), the
table grows to N positions, and new position p takes the trained row of p mod L,
    row(p) = first + (p mod L),  p = 0 .. N-1,   first = pad_token_id + 1 (RoBERTa) or 0 (BERT),
where RoBERTa's rows 0 .. pad_token_id (below its first position; the pad row among them) are kept
as they are. Every other weight is kept; E and F are sized for N and start per `projection_init`,
and the tokenizer saved with the model gets `model_max_length = N`. Positions below L keep their own
rows, so with full attention (`projected_length=None`) the model gives exactly the source's outputs
on every input the source could read (tests/models/test_longer_positions.py). N below L is a
ValueError: a conversion never cuts the table silently. `new_positions="random"` starts the rows of
positions L .. N-1 as a new model's, N(0, initializer_range^2), instead (the ablation of the copy:
docs/models.md, "A long-input model from a short one").
"""

from __future__ import annotations

import logging
from typing import Literal, get_args

import torch
from transformers import PreTrainedConfig

from linformer_kit.models.config_rules import first_position_row, longest_input, position_rows
from linformer_kit.nn.options import as_size, check_choice

logger = logging.getLogger(__name__)

# how the rows of positions past the source's longest input start (module docstring)
NewPositions = Literal["copy", "random"]
POSITION_TABLE = "embeddings.position_embeddings.weight"  # under the base model's prefix


def check_new_positions(new_positions: str, extends: bool) -> None:
    """ValueError unless new_positions is a choice, and 'random' only where the table is extended."""
    check_choice("new_positions", new_positions, get_args(NewPositions))
    if new_positions != "copy" and not extends:
        raise ValueError(
            f"new_positions={new_positions!r} starts the positions that extending a position table adds "
            "(convert --max-length, pretrain --init-from with a longer --seq-len), and nothing is extended "
            "here: give a length above the source's, or drop new_positions"
        )


def longer_than(config: PreTrainedConfig, max_length: int) -> bool:
    """Whether `max_length` extends the model of `config`: True above its longest input, False at it.

    Raises ValueError below it, naming both (a conversion never cuts the position table).
    """
    if as_size("max_length", max_length) < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    longest = longest_input(config)
    if max_length < longest:
        raise ValueError(
            f"max_length={max_length} is below the source's longest input {longest} "
            f"(max_position_embeddings={config.max_position_embeddings}): a conversion extends the position "
            "table, it does not cut it; leave max_length out to keep the source's length"
        )
    return max_length > longest


def extended_rows(config: PreTrainedConfig, max_length: int | None) -> int:
    """max_position_embeddings of `config`'s model read up to `max_length` tokens: more rows above its
    longest input, its own at it or without a max_length (below it: ValueError, `longer_than`)."""
    if max_length is not None and longer_than(config, max_length):
        return position_rows(config, max_length)
    return config.max_position_embeddings


def extend_position_table(
    table: torch.Tensor, first: int, max_length: int, new_positions: NewPositions = "copy", std: float = 0.02
) -> torch.Tensor:
    """(first + L, D) -> (first + max_length, D): rows below `first` kept, position p gets row first + p mod L
    ("copy"), or, for p >= L, a new row ~ N(0, std^2) ("random")."""
    length = table.shape[0] - first  # L, the longest input the table was trained for
    rows = first + torch.arange(max_length, device=table.device) % length  # (max_length,)
    extended = torch.cat([table[:first], table[rows]])
    if new_positions == "random":
        extended[first + length :] = torch.randn_like(extended[first + length :]) * std
    return extended


def with_positions_for(
    state: dict[str, torch.Tensor],
    source: PreTrainedConfig,
    target: PreTrainedConfig,
    new_positions: NewPositions = "copy",
) -> dict[str, torch.Tensor]:
    """`state` with its position table (any prefix) extended to `target`'s length, logged; else as is."""
    if target.max_position_embeddings == source.max_position_embeddings:
        return state
    first = first_position_row(source)
    longest, extended = longest_input(source), longest_input(target)
    state = dict(state)
    for name, table in state.items():
        if name.endswith(POSITION_TABLE):
            state[name] = extend_position_table(
                table, first, extended, new_positions, std=target.initializer_range
            )
    kept = f"; rows 0-{first - 1} (below position 0, the pad row among them) kept" if first else ""
    how = (
        f"position p takes the trained row of p mod {longest}"
        if new_positions == "copy"
        else f"positions {longest}-{extended - 1} start new, N(0, {target.initializer_range}^2)"
    )
    logger.info(
        f"positions extended from {longest} to {extended}: {how}{kept}; E and F are sized for {extended}"
    )
    return state


__all__ = [
    "POSITION_TABLE",
    "NewPositions",
    "check_new_positions",
    "extend_position_table",
    "extended_rows",
    "longer_than",
    "with_positions_for",
]
