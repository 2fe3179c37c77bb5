"""`linformer pretrain --init-from`: a masked LM from a checkpoint, with this run's Linformer options.

A Linformer (or full-attention) checkpoint keeps every weight and gets new E, F where the options
differ (`linformer_kit.models.with_linformer_options`); a RoBERTa / BERT checkpoint goes through
`from_roberta` / `from_bert`, which also map the key names. Both start new projections as window
means, so the converted model starts as mean pooling, not as noise. A `max_length` above the
checkpoint's longest input extends its position table (position p takes the trained row of p mod
that length: `linformer_kit.models.positions`); `linformer pretrain --init-from DIR --seq-len N`
passes N when N is longer. The options of both functions are `linformer_kit.models.conversion.Conversion`'s.
"""

from __future__ import annotations

from typing import Any

from transformers import AutoConfig, PreTrainedConfig

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM, LinformerPreTrainedModel
from linformer_kit.models.convert import (
    SOURCE_TYPES,
    converted_config,
    converter,
    is_projection_key,
    with_linformer_options,
)


def linformer_from_checkpoint(
    path: str, *options: Any, **keywords: Any
) -> tuple[LinformerPreTrainedModel, list[str]]:
    """`LinformerForMaskedLM` from the model at `path` with these Linformer options (`Conversion`'s).

    `max_length`: the longest input, default the checkpoint's (above it the position table is
    extended, its new rows per `new_positions`, and says so in a log line; below it: ValueError).
    Returns the model and the names of the parameters / buffers that were not in the checkpoint (the
    freshly initialised projections; empty when the options match the checkpoint's).
    """
    model_type = _checked_type(AutoConfig.from_pretrained(path).model_type, f"{path!r} is ")
    if model_type == "linformer":
        return with_linformer_options(LinformerForMaskedLM.from_pretrained(path), *options, **keywords)
    model = converter(model_type)(path, *options, **keywords)
    return model, [name for name in model.state_dict() if is_projection_key(name)]


def target_config(source: PreTrainedConfig, *options: Any, **keywords: Any) -> LinformerConfig:
    """The config of the Linformer converted from `source` (linformer, roberta or bert), validated.

    Reads no weights: `PretrainConfig` uses it to check the options before any work. The options as
    in `linformer_from_checkpoint`.
    """
    _checked_type(source.model_type)
    return converted_config(source, *options, **keywords)


def _checked_type(model_type: str, which: str = "") -> str:
    """`model_type` if a checkpoint of it converts, else a ValueError naming it (`which`: the path)."""
    if model_type != "linformer" and model_type not in SOURCE_TYPES:
        raise ValueError(
            f"init_from: {which}a {model_type!r} model; expected linformer, {', '.join(SOURCE_TYPES)}"
        )
    return model_type
