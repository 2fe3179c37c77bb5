"""Start a Linformer from a pretrained RoBERTa or BERT: copy every shared weight, add E and F.

The Linformer keeps RoBERTa's parameter names, so conversion is a key mapping:

    roberta.* / roberta_prelayernorm.* / bert.* -> linformer.*
    *.attention.output.dense.*                  -> *.attention.self.dense.*   (output linear)
    BERT MLM: cls.predictions.transform.dense   -> lm_head.dense
              cls.predictions.transform.LayerNorm -> lm_head.layer_norm
              cls.predictions.decoder / .bias   -> lm_head.decoder / lm_head.bias
    BERT sequence classification: bert.pooler.dense -> classifier.dense, classifier -> classifier.out_proj
              (BERT's pooler + classifier is RoBERTa's head: tanh(dense(first token)) then a linear)

BERT numbers positions 0..n-1 and has no pad offset: its config gets `position_style="bert"`.
RoBERTa-PreLayerNorm (`from_roberta` too) gets `layer_norm="pre"`, whose LayerNorms carry its names.

New projections (E, F), `projection_init` (`SequenceProjection`'s start, saved in the config):
    "window"  (default) E[j, t] = 1/|W_j| for the positions t of the j-th of k consecutive windows
              of the longest input n (|W_j| = n/k when k divides n). Each projected key / value is
              then the mean of n/k consecutive keys / values, biases included (E 1 = 1), i.e. the
              converted model starts as mean-pooling Linformer: a convex combination of the
              original keys, at their scale, with the local structure of the positions kept.
              With k = n it is the identity, so the converted model *equals* the original.
              Applies to the learned kinds ("linear", per head too, and "conv", whose kernel is
              mean pooling); the "random" kind stays a fixed Gaussian (that is its definition), and
              "mean" / "max" have no weights. A slot whose row of E gives no weight to any real
              token (at this start: a window past a short input's end, or over padding only) is
              masked out of the attention and takes no probability mass, as an empty pooling
              window is (`nn/projection.py`, `dense_slot_mask`); a row with no real token at all
              keeps every slot. For a dense E ("linear") the mask follows E's current weights:
              once training moves a window-started E's zero entries, its slots reach every
              position and none is masked; "conv" pools fixed windows, whose empty ones stay masked.
    "random"  the paper's zero-mean start, N(0, 1/n): the converted model no longer equals the source.

A Linformer converts to other Linformer options the same way (`with_linformer_options`, used by
`linformer pretrain --init-from`): a Linformer and its full-attention baseline share every weight but
E and F, so the target copies every tensor whose name and shape match and initialises the new
projections as above.

Longer inputs (`max_length=N` above the source's longest input L): the learned absolute position
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

import copy
import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import torch
import transformers
from torch import nn
from transformers import PreTrainedConfig, PreTrainedModel

from linformer_kit.models.configuration_linformer import LayerNormPosition, LinformerConfig, PositionStyle
from linformer_kit.models.loading import check_model_dir, load_pretrained, read_config_json
from linformer_kit.models.modeling_linformer import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
    LinformerModel,
    LinformerPreTrainedModel,
)
from linformer_kit.models.sentence_transformers_folder import carry_sentence_transformers_files
from linformer_kit.nn import DEFAULT_OPTIONS, ProjectionInit, ProjectionKind, Sharing
from linformer_kit.nn.options import as_size, option_field, parse_local_window, parse_projected_length
from linformer_kit.output_dir import check_output_dir, is_same_or_inside, saved_files, staged_output_dir

logger = logging.getLogger(__name__)

SourceFamily = Literal["roberta", "bert"]
# how the rows of positions past the source's longest input start (module docstring)
NewPositions = Literal["copy", "random"]


def new_positions_field() -> Any:
    """The `new_positions` option of `linformer convert` and `linformer pretrain --init-from` (one definition)."""
    return field(
        default="copy",
        metadata={
            "help": "rows of the positions past the source's longest input, when max_length extends it: 'copy' "
            "(position p takes the trained row of p mod that length, Longformer's) or 'random' (a new "
            "model's start)"
        },
    )


def check_new_positions(new_positions: str, extends: bool) -> None:
    """ValueError unless new_positions is a choice, and 'random' only where the table is extended."""
    if new_positions not in get_args(NewPositions):
        raise ValueError(f"new_positions must be one of {get_args(NewPositions)}, got {new_positions!r}")
    if new_positions != "copy" and not extends:
        raise ValueError(
            f"new_positions={new_positions!r} starts the positions that extending a position table adds "
            "(convert --max-length, pretrain --init-from with a longer --seq-len), and nothing is extended "
            "here: give a length above the source's, or drop new_positions"
        )


# model_type -> (family, state-dict prefix, LayerNorm layout)
SOURCE_TYPES: dict[str, tuple[SourceFamily, str, LayerNormPosition]] = {
    "roberta": ("roberta", "roberta", "post"),
    "roberta-prelayernorm": ("roberta", "roberta_prelayernorm", "pre"),
    "bert": ("bert", "bert", "post"),
}

# source class name -> Linformer class; the head layout decides the target, not the family
TARGETS: dict[str, type[LinformerPreTrainedModel]] = {
    "RobertaModel": LinformerModel,
    "RobertaForMaskedLM": LinformerForMaskedLM,
    "RobertaForSequenceClassification": LinformerForSequenceClassification,
    "RobertaForTokenClassification": LinformerForTokenClassification,
    "RobertaPreLayerNormModel": LinformerModel,
    "RobertaPreLayerNormForMaskedLM": LinformerForMaskedLM,
    "RobertaPreLayerNormForSequenceClassification": LinformerForSequenceClassification,
    "RobertaPreLayerNormForTokenClassification": LinformerForTokenClassification,
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

    source: str = field(
        metadata={"help": "local RoBERTa or BERT model directory (config.json + safetensors)"}
    )
    output_dir: str = field(metadata={"help": "directory to write the Linformer model to"})
    # int | list[int] | None after __post_init__; the str is the command-line form ("128", "256,128", "none")
    projected_length: int | str | list[int] | None = option_field("projected_length")
    sharing: Sharing = option_field("sharing")
    projection: ProjectionKind = option_field("projection")
    projection_init: ProjectionInit = option_field("projection_init")
    local_window: int | str | list[int | None] | None = option_field("local_window")
    global_tokens: int = option_field("global_tokens")
    max_length: int | None = field(
        default=None,
        metadata={
            "help": "longest input of the converted model (default: the source's); above the source's, "
            "the position table is extended: position p takes the trained row of p mod the source's length",
            "metavar": "N",
        },
    )
    new_positions: NewPositions = new_positions_field()
    overwrite: bool = field(
        default=False, metadata={"help": "replace output_dir if it exists and is not empty (all of it)"}
    )

    def __post_init__(self) -> None:
        if isinstance(self.projected_length, str):
            self.projected_length = parse_projected_length(self.projected_length)
        if isinstance(self.local_window, str):
            self.local_window = parse_local_window(self.local_window)
        check_model_dir(self.source, "source")
        model_type = read_config_json(self.source, "source")["model_type"]
        if model_type not in SOURCE_TYPES:
            raise ValueError(f"source: can convert model_type {' / '.join(SOURCE_TYPES)}, got {model_type!r}")
        # the target config from the source config.json: k, sharing and projection checked before loading weights
        source = _load_source_config(self.source)
        converted_config(source, self.projected_length, self.sharing, self.projection, self.projection_init,
                         max_length=self.max_length, **self.local_options())  # fmt: skip
        check_new_positions(
            self.new_positions, self.max_length is not None and longer_than(source, self.max_length)
        )
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

    def local_options(self) -> dict[str, object]:
        """local_window and global_tokens, as the conversion functions take them (keywords)."""
        return {"local_window": self.local_window, "global_tokens": self.global_tokens}


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
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
    *,
    max_length: int | None = None,
    new_positions: NewPositions = "copy",
    local_window: int | list[int | None] | None = DEFAULT_OPTIONS.local_window,  # type: ignore[assignment]
    global_tokens: int = DEFAULT_OPTIONS.global_tokens,
) -> tuple[LinformerPreTrainedModel, list[str]]:
    """The same Linformer (same head) with other Linformer options, e.g. its full-attention baseline at k = 64.

    Every tensor whose name and shape match is copied; the projections that are new (or changed
    shape) start per `projection_init`. `max_length` above the model's longest input extends the
    position table, its new rows per `new_positions` (module docstring; below it: ValueError). Returns the model, in eval mode, and the
    names of the new tensors (empty when the options are the model's own: then the model itself is
    returned).
    """
    options = dict(
        projected_length=projected_length, sharing=sharing, projection=projection, local_window=local_window,
        global_tokens=global_tokens,
    )  # fmt: skip
    longer = max_length is not None and longer_than(model.config, max_length)
    check_new_positions(new_positions, longer)
    if all(getattr(model.config, key) == value for key, value in options.items()) and not longer:
        return model, []
    config = copy.deepcopy(model.config)
    for key, value in {**options, "projection_init": projection_init}.items():
        setattr(config, key, value)
    if longer:
        config.max_position_embeddings = _position_rows(config, max_length)
    config._validate_linformer()  # k against the model's longest input, window kinds, projection_init
    target = type(model)(config)  # the new projections start per config.projection_init
    target_state = target.state_dict()
    source_state = _with_positions_for(model.state_dict(), model.config, config, new_positions)
    matching = {
        name: tensor
        for name, tensor in source_state.items()
        if name in target_state and target_state[name].shape == tensor.shape
    }
    target.load_state_dict(matching, strict=False)
    return target.eval(), sorted(set(target_state) - set(matching))


# --- longer inputs: the position table extended by wrapping (module docstring) ---------------------

POSITION_TABLE = "embeddings.position_embeddings.weight"  # under the base model's prefix


def first_position_row(config: PreTrainedConfig) -> int:
    """The row of position 0: pad_token_id + 1 in RoBERTa's numbering (fairseq's), 0 in BERT's."""
    roberta = getattr(config, "position_style", None) == "roberta" or config.model_type in (
        "roberta",
        "roberta-prelayernorm",
    )
    return config.pad_token_id + 1 if roberta else 0


def longer_than(config: PreTrainedConfig, max_length: int) -> bool:
    """Whether `max_length` extends the model of `config`: True above its longest input, False at it.

    Raises ValueError below it, naming both (a conversion never cuts the position table).
    """
    if as_size("max_length", max_length) < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    longest = config.max_position_embeddings - first_position_row(config)
    if max_length < longest:
        raise ValueError(
            f"max_length={max_length} is below the source's longest input {longest} "
            f"(max_position_embeddings={config.max_position_embeddings}): a conversion extends the position "
            "table, it does not cut it; leave max_length out to keep the source's length"
        )
    return max_length > longest


def _position_rows(config: PreTrainedConfig, max_length: int) -> int:
    """max_position_embeddings for inputs up to max_length long in `config`'s numbering."""
    return first_position_row(config) + max_length


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


def _with_positions_for(
    state: dict[str, torch.Tensor],
    source: PreTrainedConfig,
    target: PreTrainedConfig,
    new_positions: NewPositions = "copy",
) -> dict[str, torch.Tensor]:
    """`state` with its position table (any prefix) extended to `target`'s length, logged; else as is."""
    if target.max_position_embeddings == source.max_position_embeddings:
        return state
    first = first_position_row(source)
    longest, extended = source.max_position_embeddings - first, target.max_position_embeddings - first
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


def from_roberta(
    model_or_path: PreTrainedModel | str | Path,
    projected_length: int | list[int] | None = DEFAULT_OPTIONS.projected_length,
    sharing: Sharing = DEFAULT_OPTIONS.sharing,
    projection: ProjectionKind = DEFAULT_OPTIONS.projection,
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
    *,
    max_length: int | None = None,
    new_positions: NewPositions = "copy",
    local_window: int | list[int | None] | None = DEFAULT_OPTIONS.local_window,  # type: ignore[assignment]
    global_tokens: int = DEFAULT_OPTIONS.global_tokens,
) -> LinformerPreTrainedModel:
    """A Linformer copy of a RoBERTa model (`RobertaModel` or its MaskedLM / sequence / token heads;
    RoBERTa-PreLayerNorm's too, as a `layer_norm="pre"` Linformer).

    `model_or_path` is a model or a local directory (safetensors weights only). Returns the
    Linformer with the same head, every shared weight copied and E, F initialised per
    `projection_init` (see the module docstring), in eval mode. `max_length`: the longest input,
    default the source's; above it the position table is extended, its new rows per `new_positions`
    (module docstring), below it is a ValueError.
    """
    return _convert(
        model_or_path, "roberta", projected_length, sharing, projection, projection_init, max_length,
        new_positions, local_window=local_window, global_tokens=global_tokens,
    )  # fmt: skip


def from_bert(
    model_or_path: PreTrainedModel | str | Path,
    projected_length: int | list[int] | None = DEFAULT_OPTIONS.projected_length,
    sharing: Sharing = DEFAULT_OPTIONS.sharing,
    projection: ProjectionKind = DEFAULT_OPTIONS.projection,
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init,
    *,
    max_length: int | None = None,
    new_positions: NewPositions = "copy",
    local_window: int | list[int | None] | None = DEFAULT_OPTIONS.local_window,  # type: ignore[assignment]
    global_tokens: int = DEFAULT_OPTIONS.global_tokens,
) -> LinformerPreTrainedModel:
    """Like `from_roberta`, for BERT (`BertModel` or its MaskedLM / sequence / token heads)."""
    return _convert(
        model_or_path,
        "bert",
        projected_length,
        sharing,
        projection,
        projection_init,
        max_length,
        new_positions,
        local_window=local_window,
        global_tokens=global_tokens,
    )


def converter(model_type: str) -> Callable[..., LinformerPreTrainedModel]:
    """`from_roberta` or `from_bert`, by the family of a source `model_type` (a key of SOURCE_TYPES)."""
    return from_roberta if SOURCE_TYPES[model_type][0] == "roberta" else from_bert


def convert_checkpoint(config: ConvertConfig) -> Path:
    """Convert `config.source` (a RoBERTa or BERT directory) and write model + tokenizer to output_dir.

    The directory appears complete or not at all: it is written next to output_dir and renamed.
    """
    model = converter(_load_source_config(config.source).model_type)(
        config.source, config.projected_length, config.sharing, config.projection, config.projection_init,
        max_length=config.max_length, new_positions=config.new_positions, **config.local_options(),
    )  # fmt: skip
    with staged_output_dir(config.output_dir, replace=config.overwrite) as staging:
        model.save_pretrained(staging)  # safetensors
        for name in TOKENIZER_FILES:
            if (Path(config.source) / name).is_file():
                shutil.copy2(Path(config.source) / name, staging / name)
        _limit_saved_tokenizer(staging / "tokenizer_config.json", model.config.max_seq_len, config.max_length)
        carry_sentence_transformers_files(config.source, staging, model.config.max_seq_len, config.max_length)
    return Path(config.output_dir)


def _limit_saved_tokenizer(path: Path, limit: int, max_length: int | None = None) -> None:
    """model_max_length = the model's longest input at most, so `truncation=True` truncates to what runs;
    exactly `limit` when the conversion was given a `max_length` (an extended model reads that long)."""
    if not path.is_file():
        return
    settings = json.loads(path.read_text())
    given = settings.get("model_max_length", limit)
    settings["model_max_length"] = limit if max_length is not None else min(given, limit)
    path.write_text(json.dumps(settings, indent=2, ensure_ascii=False) + "\n")


# --- the steps -------------------------------------------------------------------------------------


def _convert(
    model_or_path: PreTrainedModel | str | Path,
    family: SourceFamily,
    projected_length: int | list[int] | None,
    sharing: Sharing,
    projection: ProjectionKind,
    projection_init: ProjectionInit,
    max_length: int | None = None,
    new_positions: NewPositions = "copy",
    **local: object,
) -> LinformerPreTrainedModel:
    source = _load_source(model_or_path) if isinstance(model_or_path, (str, Path)) else model_or_path
    name = type(source).__name__
    if name not in TARGETS or not name.lower().startswith(family):
        supported = [n for n in TARGETS if n.lower().startswith(family)]
        raise ValueError(f"cannot convert a {name} with from_{family}: supported classes are {supported}")
    config = converted_config(
        source.config, projected_length, sharing, projection, projection_init, max_length=max_length, **local
    )
    check_new_positions(new_positions, config.max_position_embeddings > source.config.max_position_embeddings)
    target = TARGETS[name](config)  # every projection is new: it starts per projection_init
    _copy_weights(source, target, new_positions)
    return target.eval()


def _load_source_config(path: str | Path) -> PreTrainedConfig:
    read_config_json(path, "source")  # a clear error for a missing or broken config.json
    return transformers.AutoConfig.from_pretrained(path)


def _load_source(path: str | Path) -> PreTrainedModel:
    """Load a local RoBERTa/BERT with the class its config names; safetensors only (no unpickling)."""
    check_model_dir(path, "source")
    config = _load_source_config(path)
    architectures = config.architectures or []
    name = next(
        (a for a in architectures if a in TARGETS),
        {"roberta": "RobertaModel", "roberta-prelayernorm": "RobertaPreLayerNormModel"}.get(
            config.model_type, "BertModel"
        ),
    )
    return load_pretrained(getattr(transformers, name), path, "source")  # weights that fit config.json


def converted_config(
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
    """The LinformerConfig a RoBERTa(-PreLayerNorm) / BERT config converts to (validated; no weights involved).

    `max_length` above the source's longest input gives the position table that many positions
    (module docstring); below it is a ValueError naming both.
    """
    if source.model_type not in SOURCE_TYPES:
        raise ValueError(f"can convert model_type {' / '.join(SOURCE_TYPES)}, got {source.model_type!r}")
    family, _, layer_norm = SOURCE_TYPES[source.model_type]
    if getattr(source, "position_embedding_type", "absolute") not in ("absolute", None):
        raise ValueError(
            f"only absolute position embeddings convert, got position_embedding_type={source.position_embedding_type!r}"
        )
    if getattr(source, "is_decoder", False):
        raise ValueError("is_decoder=True (causal) models cannot be converted: Linformer is bidirectional")
    fields = {name: getattr(source, name) for name in COPIED_FIELDS if hasattr(source, name)}
    if max_length is not None and longer_than(source, max_length):
        fields["max_position_embeddings"] = _position_rows(source, max_length)
    style: PositionStyle = family  # "roberta" positions start at pad+1, "bert" at 0
    return LinformerConfig(
        **fields,
        projected_length=projected_length,
        sharing=sharing,
        projection=projection,
        projection_init=projection_init,
        local_window=local_window,
        global_tokens=global_tokens,
        position_style=style,
        layer_norm=layer_norm,
    )


def _renamed(key: str, model_type: str, target: nn.Module) -> str:
    """Source state-dict key -> Linformer key (see the module docstring)."""
    family, prefix, _ = SOURCE_TYPES[model_type]
    key = key.replace(".attention.output.dense.", ".attention.self.dense.")
    if key.startswith(f"{prefix}."):
        key = "linformer." + key[len(prefix) + 1 :]
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


def _copy_weights(
    source: PreTrainedModel, target: LinformerPreTrainedModel, new_positions: NewPositions = "copy"
) -> None:
    model_type = source.config.model_type
    if (
        model_type == "bert"
        and isinstance(target, LinformerForMaskedLM)
        and source.config.hidden_act != "gelu"
    ):
        raise ValueError(
            f"BERT's MLM head uses hidden_act={source.config.hidden_act!r}, the Linformer (RoBERTa) head uses gelu"
        )
    state = {_renamed(key, model_type, target): value for key, value in source.state_dict().items()}
    state = _with_positions_for(state, source.config, target.config, new_positions)  # longer max_length
    result = target.load_state_dict(state, strict=False)
    unexpected = [
        key for key in result.unexpected_keys if not key.endswith(("position_ids", "token_type_ids"))
    ]
    missing = [key for key in result.missing_keys if not is_projection_key(key)]
    if unexpected or missing:
        raise ValueError(f"weights do not map onto the Linformer: unexpected {unexpected}, missing {missing}")


__all__ = [
    "SOURCE_TYPES",
    "ConvertConfig",
    "convert_checkpoint",
    "extend_position_table",
    "from_bert",
    "from_roberta",
    "is_projection_key",
    "with_linformer_options",
]
