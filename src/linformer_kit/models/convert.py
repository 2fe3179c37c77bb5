"""Start a Linformer from a pretrained RoBERTa or BERT: copy every shared weight, add E and F.

The Linformer keeps RoBERTa's parameter names, so conversion is a key mapping:

    roberta.* / bert.*                          -> linformer.*
    *.attention.output.dense.*                  -> *.attention.self.dense.*   (output linear)
    BERT MLM: cls.predictions.transform.dense   -> lm_head.dense
              cls.predictions.transform.LayerNorm -> lm_head.layer_norm
              cls.predictions.decoder / .bias   -> lm_head.decoder / lm_head.bias
    BERT sequence classification: bert.pooler.dense -> classifier.dense, classifier -> classifier.out_proj
              (BERT's pooler + classifier is RoBERTa's head: tanh(dense(first token)) then a linear)

BERT numbers positions 0..n-1 and has no pad offset: its config gets `position_style="bert"`.

New projections (E, F), `projection_init`:
    "window"  (default) E[j, t] = 1/|W_j| for the positions t of the j-th of k consecutive windows
              of the longest input n (|W_j| = n/k when k divides n). Each projected key / value is
              then the mean of n/k consecutive keys / values, biases included (E 1 = 1), i.e. the
              converted model starts as mean-pooling Linformer: a convex combination of the
              original keys, at their scale, with the local structure of the positions kept.
              With k = n it is the identity, so the converted model *equals* the original.
              Applies to the learned kinds ("linear", per head too, and "conv", whose kernel is
              mean pooling); "random" stays a fixed Gaussian (that is its definition), and "mean" /
              "max" have no weights. Caveat: a dense E sized to n leaves the trailing slots empty
              for inputs shorter than n (zero keys and values that still take softmax mass), where
              the pooling kinds ("mean", "conv") mask empty windows; finetune, or use those kinds,
              for short inputs.
    "default" the from-scratch initialisation (`SequenceProjection`: N(0, 1/n)).

A Linformer converts to other Linformer options the same way (`with_linformer_options`, used by
`linformer pretrain --init-from`): a Linformer and its full-attention baseline share every weight but
E and F, so the target copies every tensor whose name and shape match and initialises the new
projections as above.
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

import torch
import transformers
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel

from linformer_kit.models.configuration_linformer import LinformerConfig, PositionStyle
from linformer_kit.models.loading import check_model_dir, load_pretrained, read_config_json
from linformer_kit.models.modeling_linformer import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
    LinformerModel,
    LinformerPreTrainedModel,
)
from linformer_kit.nn import ProjectionKind, SequenceProjection, Sharing
from linformer_kit.output_dir import check_output_dir, is_same_or_inside, saved_files, staged_output_dir

ProjectionInit = Literal["window", "default"]
PROJECTION_INITS: tuple[str, ...] = get_args(ProjectionInit)
SourceFamily = Literal["roberta", "bert"]

# source class name -> Linformer class; the head layout decides the target, not the family
TARGETS: dict[str, type[LinformerPreTrainedModel]] = {
    "RobertaModel": LinformerModel,
    "RobertaForMaskedLM": LinformerForMaskedLM,
    "RobertaForSequenceClassification": LinformerForSequenceClassification,
    "RobertaForTokenClassification": LinformerForTokenClassification,
    "BertModel": LinformerModel,
    "BertForMaskedLM": LinformerForMaskedLM,
    "BertForSequenceClassification": LinformerForSequenceClassification,
    "BertForTokenClassification": LinformerForTokenClassification,
}
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "vocab.txt",
    "sentencepiece.bpe.model",
    "spiece.model",
)
# RoBERTa config fields that carry over unchanged (BERT uses the same names)
COPIED_FIELDS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
    "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
    "type_vocab_size", "initializer_range", "layer_norm_eps", "pad_token_id", "bos_token_id",
    "eos_token_id", "classifier_dropout", "tie_word_embeddings", "id2label", "label2id", "problem_type",
)  # fmt: skip


@dataclass
class ConvertConfig:
    """What `linformer convert` does: read `source`, write a ready-to-use model directory to `output_dir`.

    Checked on construction, before any weight is read: `source` is a RoBERTa / BERT directory with
    safetensors weights, the Linformer options fit its config, and `output_dir` is new or empty
    (`overwrite=True` replaces a whole existing directory, once the new one is complete). Writing
    into the source directory is refused even with `overwrite`.
    """

    source: str
    output_dir: str
    projected_length: int | list[int] | None = 256
    sharing: Sharing = "headwise"
    projection: ProjectionKind = "linear"
    projection_init: ProjectionInit = "window"
    overwrite: bool = False  # replace an existing, non-empty output_dir

    def __post_init__(self) -> None:
        check_model_dir(self.source, "source")
        model_type = read_config_json(self.source, "source")["model_type"]
        if model_type not in ("roberta", "bert"):
            raise ValueError(f"source: can convert model_type 'roberta' or 'bert', got {model_type!r}")
        if self.projection_init not in PROJECTION_INITS:
            raise ValueError(
                f"projection_init must be one of {PROJECTION_INITS}, got {self.projection_init!r}"
            )
        # the target config from the source config.json: k, sharing and projection checked before loading weights
        converted_config(_load_source_config(self.source), model_type, self.projected_length, self.sharing,
                          self.projection)  # fmt: skip
        out = check_output_dir(self.output_dir, "output_dir")
        if is_same_or_inside(self.source, out):
            raise ValueError(
                f"output_dir {self.output_dir!r} is (or contains) the source directory {self.source!r}: "
                "writing there would overwrite or delete the model being converted; choose another output_dir"
            )
        if out.is_dir() and any(out.iterdir()) and not self.overwrite:
            held = saved_files(out) or sorted(p.name for p in out.iterdir())[:5]
            raise ValueError(
                f"output_dir {self.output_dir!r} is not empty (it holds {', '.join(held)}): choose a new "
                "directory, or pass --overwrite to replace all of it"
            )


# the modules that hold E / F: per layer (`attention.self.*`), or one per encoder under layerwise sharing
PROJECTION_MODULES = ("key_projection", "value_projection", "kv_projection", "encoder.projection")


def is_projection_key(name: str) -> bool:
    """Whether a state-dict key belongs to a projection E / F (what conversion adds; all else is copied)."""
    return any(f"{module}." in name for module in PROJECTION_MODULES)


def with_linformer_options(
    model: LinformerPreTrainedModel,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit = "window",
) -> tuple[LinformerPreTrainedModel, list[str]]:
    """The same Linformer (same head) with other Linformer options, e.g. its full-attention baseline at k = 64.

    Every tensor whose name and shape match is copied; the projections that are new (or changed
    shape) start per `projection_init`. Returns the model, in eval mode, and the names of the new
    tensors (empty when the options are the model's own: then the model itself is returned).
    """
    if projection_init not in PROJECTION_INITS:
        raise ValueError(f"projection_init must be one of {PROJECTION_INITS}, got {projection_init!r}")
    options = dict(projected_length=projected_length, sharing=sharing, projection=projection)
    if all(getattr(model.config, key) == value for key, value in options.items()):
        return model, []
    config = copy.deepcopy(model.config)
    for key, value in options.items():
        setattr(config, key, value)
    config._validate_linformer()  # k against the model's longest input, window kinds, ...
    target = type(model)(config)
    target_state = target.state_dict()
    matching = {
        name: tensor
        for name, tensor in model.state_dict().items()
        if name in target_state and target_state[name].shape == tensor.shape
    }
    target.load_state_dict(matching, strict=False)
    new = sorted(set(target_state) - set(matching))
    init_projections(target, projection_init, new)
    return target.eval(), new


def from_roberta(
    model_or_path: PreTrainedModel | str | Path,
    projected_length: int | list[int] | None = 256,
    sharing: Sharing = "headwise",
    projection: ProjectionKind = "linear",
    projection_init: ProjectionInit = "window",
) -> LinformerPreTrainedModel:
    """A Linformer copy of a RoBERTa model (`RobertaModel` or its MaskedLM / sequence / token heads).

    `model_or_path` is a model or a local directory (safetensors weights only). Returns the
    Linformer with the same head, every shared weight copied and E, F initialised per
    `projection_init` (see the module docstring), in eval mode.
    """
    return _convert(model_or_path, "roberta", projected_length, sharing, projection, projection_init)


def from_bert(
    model_or_path: PreTrainedModel | str | Path,
    projected_length: int | list[int] | None = 256,
    sharing: Sharing = "headwise",
    projection: ProjectionKind = "linear",
    projection_init: ProjectionInit = "window",
) -> LinformerPreTrainedModel:
    """Like `from_roberta`, for BERT (`BertModel` or its MaskedLM / sequence / token heads)."""
    return _convert(model_or_path, "bert", projected_length, sharing, projection, projection_init)


def convert_checkpoint(config: ConvertConfig) -> Path:
    """Convert `config.source` (a RoBERTa or BERT directory) and write model + tokenizer to output_dir.

    The directory appears complete or not at all: it is written next to output_dir and renamed.
    """
    family = _family(_load_source_config(config.source))
    convert = from_roberta if family == "roberta" else from_bert
    model = convert(
        config.source, config.projected_length, config.sharing, config.projection, config.projection_init
    )
    with staged_output_dir(config.output_dir, replace=config.overwrite) as staging:
        model.save_pretrained(staging)  # safetensors
        for name in TOKENIZER_FILES:
            if (Path(config.source) / name).is_file():
                shutil.copy2(Path(config.source) / name, staging / name)
        _limit_saved_tokenizer(staging / "tokenizer_config.json", model.config.max_seq_len)
    return Path(config.output_dir)


def _limit_saved_tokenizer(path: Path, limit: int) -> None:
    """model_max_length = the model's longest input at most, so `truncation=True` truncates to what runs."""
    if not path.is_file():
        return
    settings = json.loads(path.read_text())
    settings["model_max_length"] = min(settings.get("model_max_length", limit), limit)
    path.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")


# --- the steps -------------------------------------------------------------------------------------


def _convert(
    model_or_path: PreTrainedModel | str | Path,
    family: SourceFamily,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit,
) -> LinformerPreTrainedModel:
    if projection_init not in PROJECTION_INITS:
        raise ValueError(f"projection_init must be one of {PROJECTION_INITS}, got {projection_init!r}")
    source = _load_source(model_or_path) if isinstance(model_or_path, (str, Path)) else model_or_path
    name = type(source).__name__
    if name not in TARGETS or not name.lower().startswith(family):
        supported = [n for n in TARGETS if n.lower().startswith(family)]
        raise ValueError(f"cannot convert a {name} with from_{family}: supported classes are {supported}")
    config = converted_config(source.config, family, projected_length, sharing, projection)
    target = TARGETS[name](config)
    _copy_weights(source, target, family)
    init_projections(target, projection_init)  # every projection of the converted model is new
    return target.eval()


def init_projections(model: nn.Module, projection_init: ProjectionInit, new: list[str] | None = None) -> None:
    """Start the model's projections per `projection_init`: every one, or those owning a `new` state-dict key."""
    if projection_init == "default":
        return  # the constructor's `SequenceProjection.reset_parameters`
    for name, module in model.named_modules():
        if isinstance(module, SequenceProjection) and (
            new is None or any(k.startswith(f"{name}.") for k in new)
        ):
            window_init(module)


def _load_source_config(path: str | Path) -> PreTrainedConfig:
    read_config_json(path, "source")  # a clear error for a missing or broken config.json
    return transformers.AutoConfig.from_pretrained(path)


def _family(config: PreTrainedConfig) -> SourceFamily:
    if config.model_type not in ("roberta", "bert"):
        raise ValueError(f"can convert model_type 'roberta' or 'bert', got {config.model_type!r}")
    return config.model_type


def _load_source(path: str | Path) -> PreTrainedModel:
    """Load a local RoBERTa/BERT with the class its config names; safetensors only (no unpickling)."""
    check_model_dir(path, "source")
    config = _load_source_config(path)
    architectures = config.architectures or []
    name = next(
        (a for a in architectures if a in TARGETS),
        "RobertaModel" if config.model_type == "roberta" else "BertModel",
    )
    return load_pretrained(getattr(transformers, name), path, "source")  # weights that fit config.json


def converted_config(
    source: PreTrainedConfig,
    family: SourceFamily,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
) -> LinformerConfig:
    """The LinformerConfig a RoBERTa / BERT config converts to (validated; no weights involved)."""
    if getattr(source, "position_embedding_type", "absolute") not in ("absolute", None):
        raise ValueError(
            f"only absolute position embeddings convert, got position_embedding_type={source.position_embedding_type!r}"
        )
    if getattr(source, "is_decoder", False):
        raise ValueError("is_decoder=True (causal) models cannot be converted: Linformer is bidirectional")
    fields = {name: getattr(source, name) for name in COPIED_FIELDS if hasattr(source, name)}
    style: PositionStyle = family  # "roberta" positions start at pad+1, "bert" at 0
    return LinformerConfig(
        **fields,
        projected_length=projected_length,
        sharing=sharing,
        projection=projection,
        position_style=style,
    )


def _renamed(key: str, family: SourceFamily, target: nn.Module) -> str:
    """Source state-dict key -> Linformer key (see the module docstring)."""
    key = key.replace(".attention.output.dense.", ".attention.self.dense.")
    if key.startswith(f"{family}."):
        key = "linformer." + key[len(family) + 1 :]
    if family == "bert":
        key = key.replace("cls.predictions.transform.dense.", "lm_head.dense.")
        key = key.replace("cls.predictions.transform.LayerNorm.", "lm_head.layer_norm.")
        key = key.replace("cls.predictions.decoder.", "lm_head.decoder.")
        key = key.replace("cls.predictions.bias", "lm_head.bias")
        if isinstance(target, LinformerForSequenceClassification):
            key = key.replace("linformer.pooler.dense.", "classifier.dense.")
            if key.startswith("classifier.") and not key.startswith("classifier.dense."):
                key = "classifier.out_proj." + key[len("classifier.") :]
    return key


def _copy_weights(source: PreTrainedModel, target: LinformerPreTrainedModel, family: SourceFamily) -> None:
    if family == "bert" and isinstance(target, LinformerForMaskedLM) and source.config.hidden_act != "gelu":
        raise ValueError(
            f"BERT's MLM head uses hidden_act={source.config.hidden_act!r}, the Linformer (RoBERTa) head uses gelu"
        )
    state = {_renamed(key, family, target): value for key, value in source.state_dict().items()}
    result = target.load_state_dict(state, strict=False)
    unexpected = [
        key for key in result.unexpected_keys if not key.endswith(("position_ids", "token_type_ids"))
    ]
    missing = [key for key in result.missing_keys if not is_projection_key(key)]
    if unexpected or missing:
        raise ValueError(f"weights do not map onto the Linformer: unexpected {unexpected}, missing {missing}")


@torch.no_grad()
def window_init(projection: SequenceProjection) -> None:
    """E[j, t] = 1/|W_j| on the j-th of k consecutive windows of n positions (identity when k = n)."""
    if projection.kind == "conv":
        projection.weight.fill_(1.0 / projection.window)  # kernel = stride = n/k: mean pooling
        return
    if projection.kind != "linear":
        return  # "random" is a fixed Gaussian by definition; "mean" / "max" have no weights
    k, n = projection.projected_length, projection.max_seq_len
    window_of = torch.arange(n) * k // n  # (n,) slot of each position, windows as equal as k, n allow
    e = (window_of[None, :] == torch.arange(k)[:, None]).to(projection.weight.dtype)  # (k, n)
    e = e / e.sum(-1, keepdim=True)
    projection.weight.copy_(e.expand_as(projection.weight))  # per-head E (h, k, n) too


__all__ = [
    "PROJECTION_INITS",
    "ConvertConfig",
    "ProjectionInit",
    "convert_checkpoint",
    "from_bert",
    "from_roberta",
    "init_projections",
    "is_projection_key",
    "window_init",
    "with_linformer_options",
]
