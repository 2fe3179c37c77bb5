"""Start pretraining from a checkpoint with (possibly) different Linformer options.

A Linformer model and its full-attention baseline share every weight except the projections E, F
(the query/key/value/output linears, embeddings, FFNs and LM head have the same names and shapes).
So converting a full-attention model to k = 64, or a k = 128 model to k = 64, is: build the target
model from the source config with the new options, copy every tensor whose name and shape match,
and initialise the new E, F the way `from_roberta` does ("window": each projected key / value
starts as the mean of n/k consecutive ones, so the converted model starts as mean pooling, not as
noise). A RoBERTa / BERT checkpoint goes through `linformer_kit.models.from_roberta` / `from_bert`,
which also map the key names.
"""

from __future__ import annotations

import copy

from transformers import AutoConfig, PreTrainedConfig

from linformer_kit.models import LinformerConfig, LinformerForMaskedLM, from_bert, from_roberta
from linformer_kit.models.convert import converted_config, window_init  # from_roberta's config and E/F init
from linformer_kit.nn import ProjectionKind, SequenceProjection, Sharing


def linformer_from_checkpoint(
    path: str, projected_length: int | list[int] | None, sharing: Sharing, projection: ProjectionKind
) -> tuple[LinformerForMaskedLM, list[str]]:
    """`LinformerForMaskedLM` from the model at `path` with these Linformer options.

    Returns the model and the names of the parameters / buffers that were not in the checkpoint (the
    freshly initialised projections; empty when the options match the checkpoint's).
    """
    linformer = dict(projected_length=projected_length, sharing=sharing, projection=projection)
    model_type = AutoConfig.from_pretrained(path).model_type
    if model_type in ("roberta", "bert"):
        convert = from_roberta if model_type == "roberta" else from_bert
        model = convert(path, **linformer)
        return model, _projection_names(model)
    if model_type != "linformer":
        raise ValueError(
            f"init_from: {path!r} is a {model_type!r} model; expected linformer, roberta or bert"
        )
    source = LinformerForMaskedLM.from_pretrained(path)
    if all(getattr(source.config, key) == value for key, value in linformer.items()):
        return source, []

    target = LinformerForMaskedLM(target_config(source.config, **linformer))
    target_state = target.state_dict()
    matching = {
        name: tensor
        for name, tensor in source.state_dict().items()
        if name in target_state and target_state[name].shape == tensor.shape
    }
    target.load_state_dict(matching, strict=False)
    new = sorted(set(target_state) - set(matching))
    for name, module in target.named_modules():
        if isinstance(module, SequenceProjection) and any(key.startswith(f"{name}.") for key in new):
            window_init(module)
    return target, new


def target_config(
    source: PreTrainedConfig,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
) -> LinformerConfig:
    """The config of the Linformer converted from `source` (linformer, roberta or bert), validated.

    Reads no weights: `PretrainConfig` uses it to check the options before any work.
    """
    linformer = dict(projected_length=projected_length, sharing=sharing, projection=projection)
    if source.model_type in ("roberta", "bert"):
        return converted_config(source, source.model_type, **linformer)
    if source.model_type != "linformer":
        raise ValueError(f"init_from: a {source.model_type!r} model; expected linformer, roberta or bert")
    config = copy.deepcopy(source)
    for key, value in linformer.items():
        setattr(config, key, value)
    config._validate_linformer()  # k against the model's longest input, window kinds, ...
    return config


def _projection_names(model: LinformerForMaskedLM) -> list[str]:
    return [name for name in model.state_dict() if "_projection." in name or "encoder.projection." in name]
