"""`linformer pretrain --init-from`: a masked LM from a checkpoint, with this run's Linformer options.

A Linformer (or full-attention) checkpoint keeps every weight and gets new E, F where the options
differ (`linformer_kit.models.with_linformer_options`); a RoBERTa / BERT checkpoint goes through
`from_roberta` / `from_bert`, which also map the key names. Both start new projections as window
means, so the converted model starts as mean pooling, not as noise.
"""

from __future__ import annotations

import copy

from transformers import AutoConfig, PreTrainedConfig

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM, from_bert, from_roberta
from linformer_kit.models.convert import (
    SOURCE_TYPES,
    converted_config,
    is_projection_key,
    with_linformer_options,
)
from linformer_kit.nn import DEFAULT_OPTIONS, ProjectionInit, ProjectionKind, Sharing


def linformer_from_checkpoint(
    path: str,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
) -> tuple[LinformerForMaskedLM, list[str]]:
    """`LinformerForMaskedLM` from the model at `path` with these Linformer options.

    Returns the model and the names of the parameters / buffers that were not in the checkpoint (the
    freshly initialised projections; empty when the options match the checkpoint's).
    """
    linformer = dict(
        projected_length=projected_length,
        sharing=sharing,
        projection=projection,
        projection_init=projection_init,
    )
    model_type = AutoConfig.from_pretrained(path).model_type
    if model_type in SOURCE_TYPES:
        convert = from_roberta if SOURCE_TYPES[model_type][0] == "roberta" else from_bert
        model = convert(path, **linformer)
        return model, [name for name in model.state_dict() if is_projection_key(name)]
    if model_type != "linformer":
        raise ValueError(
            f"init_from: {path!r} is a {model_type!r} model; expected linformer, {', '.join(SOURCE_TYPES)}"
        )
    return with_linformer_options(LinformerForMaskedLM.from_pretrained(path), **linformer)


def target_config(
    source: PreTrainedConfig,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
) -> LinformerConfig:
    """The config of the Linformer converted from `source` (linformer, roberta or bert), validated.

    Reads no weights: `PretrainConfig` uses it to check the options before any work.
    """
    linformer = dict(
        projected_length=projected_length,
        sharing=sharing,
        projection=projection,
        projection_init=projection_init,
    )
    if source.model_type in SOURCE_TYPES:
        return converted_config(source, **linformer)
    if source.model_type != "linformer":
        raise ValueError(
            f"init_from: a {source.model_type!r} model; expected linformer, {', '.join(SOURCE_TYPES)}"
        )
    config = copy.deepcopy(source)
    for key, value in linformer.items():
        setattr(config, key, value)
    config._validate_linformer()  # k against the model's longest input, window kinds, ...
    return config
