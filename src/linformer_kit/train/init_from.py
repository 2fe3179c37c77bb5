"""`linformer pretrain --init-from`: a masked LM from a checkpoint, with this run's Linformer options.

A Linformer (or full-attention) checkpoint keeps every weight and gets new E, F where the options
differ (`linformer_kit.models.with_linformer_options`); a RoBERTa / BERT checkpoint goes through
`from_roberta` / `from_bert`, which also map the key names. Both start new projections as window
means, so the converted model starts as mean pooling, not as noise. A `max_length` above the
checkpoint's longest input extends its position table (position p takes the trained row of p mod
that length: `linformer_kit.models.convert`); `linformer pretrain --init-from DIR --seq-len N` passes N
when N is longer.
"""

from __future__ import annotations

import copy

from transformers import AutoConfig, PreTrainedConfig

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM
from linformer_kit.models.convert import (
    SOURCE_TYPES,
    NewPositions,
    converted_config,
    converter,
    first_position_row,
    is_projection_key,
    longer_than,
    with_linformer_options,
)
from linformer_kit.nn import DEFAULT_OPTIONS, ProjectionInit, ProjectionKind, Sharing


def linformer_from_checkpoint(
    path: str,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
    *,
    max_length: int | None = None,
    new_positions: NewPositions = "copy",
    local_window: int | list[int | None] | None = DEFAULT_OPTIONS.local_window,  # type: ignore[assignment]
    global_tokens: int = DEFAULT_OPTIONS.global_tokens,
) -> tuple[LinformerForMaskedLM, list[str]]:
    """`LinformerForMaskedLM` from the model at `path` with these Linformer options.

    `max_length`: the longest input, default the checkpoint's (above it the position table is
    extended, its new rows per `new_positions`, and says so in a log line; below it: ValueError). Returns the model and the names of
    the parameters / buffers that were not in the checkpoint (the freshly initialised projections;
    empty when the options match the checkpoint's).
    """
    linformer = dict(
        projected_length=projected_length,
        sharing=sharing,
        projection=projection,
        projection_init=projection_init,
        local_window=local_window,
        global_tokens=global_tokens,
    )
    model_type = AutoConfig.from_pretrained(path).model_type
    if model_type in SOURCE_TYPES:
        model = converter(model_type)(path, **linformer, max_length=max_length, new_positions=new_positions)
        return model, [name for name in model.state_dict() if is_projection_key(name)]
    if model_type != "linformer":
        raise ValueError(
            f"init_from: {path!r} is a {model_type!r} model; expected linformer, {', '.join(SOURCE_TYPES)}"
        )
    return with_linformer_options(
        LinformerForMaskedLM.from_pretrained(path),
        **linformer,
        max_length=max_length,
        new_positions=new_positions,
    )


def target_config(
    source: PreTrainedConfig,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
    *,
    max_length: int | None = None,
    local_window: int | list[int | None] | None = DEFAULT_OPTIONS.local_window,  # type: ignore[assignment]
    global_tokens: int = DEFAULT_OPTIONS.global_tokens,
) -> LinformerConfig:
    """The config of the Linformer converted from `source` (linformer, roberta or bert), validated.

    Reads no weights: `PretrainConfig` uses it to check the options before any work. `max_length` as
    in `linformer_from_checkpoint`.
    """
    linformer = dict(
        projected_length=projected_length,
        sharing=sharing,
        projection=projection,
        projection_init=projection_init,
        local_window=local_window,
        global_tokens=global_tokens,
    )
    if source.model_type in SOURCE_TYPES:
        return converted_config(source, **linformer, max_length=max_length)
    if source.model_type != "linformer":
        raise ValueError(
            f"init_from: a {source.model_type!r} model; expected linformer, {', '.join(SOURCE_TYPES)}"
        )
    config = copy.deepcopy(source)
    for key, value in linformer.items():
        setattr(config, key, value)
    if max_length is not None and longer_than(source, max_length):
        config.max_position_embeddings = first_position_row(source) + max_length
    config._validate_linformer()  # k against the model's longest input, window kinds, ...
    return config
