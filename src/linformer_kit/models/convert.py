"""Start a Linformer from a pretrained RoBERTa or BERT: copy every shared weight, add E and F.

The key mapping (`models/key_mapping.py`) copies every source weight under its Linformer name:
`roberta.*` / `bert.*` -> `linformer.*`, BERT's MLM and sequence-classification heads onto RoBERTa's.

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
              window is (`nn/dense_projection.py`, `dense_slot_mask`); a row with no real token at all
              keeps every slot. For a dense E ("linear") the mask follows E's current weights:
              once training moves a window-started E's zero entries, its slots reach every
              position and none is masked; "conv" pools fixed windows, whose empty ones stay masked.
    "random"  the paper's zero-mean start, N(0, 1/n): the converted model no longer equals the source.

A Linformer converts to other Linformer options the same way (`with_linformer_options`, used by
`linformer pretrain --init-from`): a Linformer and its full-attention baseline share every weight but
E and F, so the target copies every tensor whose name and shape match and initialises the new
projections as above.

Longer inputs (`max_length=N` above the source's longest input): the learned position table grows
to N positions, position p taking the trained row of p mod the source's length (`models/positions.py`).

The conversion calls (`from_roberta`, `from_bert`, `with_linformer_options`, `converted_config`, and
`linformer_kit.train.init_from`'s) take their options through one signature, `Conversion`'s
(models/conversion.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

import transformers
from transformers import PreTrainedConfig, PreTrainedModel

from linformer_kit.models.config_rules import auto_class_of, first_position_row
from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.models.conversion import Conversion, new_positions_field
from linformer_kit.models.folder import TOKENIZER_FILES, check_target_dir, write_model_dir
from linformer_kit.models.folder_checks import check_model_dir, read_config_json
from linformer_kit.models.key_mapping import (
    SOURCE_TYPES,
    TARGETS,
    SourceFamily,
    check_mapped,
    is_projection_key,
    mapped_state,
)
from linformer_kit.models.loading import load_pretrained
from linformer_kit.models.modeling_linformer import LinformerPreTrainedModel
from linformer_kit.models.positions import (
    NewPositions,
    check_new_positions,
    extend_position_table,
    with_positions_for,
)
from linformer_kit.nn.options import (
    ProjectionInit,
    ProjectionKind,
    Sharing,
    option_field,
    parse_per_layer,
)

LinformerModelT = TypeVar("LinformerModelT", bound=LinformerPreTrainedModel)


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
    exact_length: int | None = option_field("exact_length")
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
        for name in ("projected_length", "local_window"):  # the command-line form: k's grammar
            if isinstance(getattr(self, name), str):
                setattr(self, name, parse_per_layer(name, getattr(self, name)))
        check_model_dir(self.source, "source")
        model_type = read_config_json(self.source, "source")["model_type"]
        if model_type == "linformer":  # (convert's options would replace its own: extend keeps them)
            raise ValueError(
                f"source {self.source!r} is a Linformer already: `linformer extend SRC DST --max-length N` reads "
                "it at longer inputs with its own options (convert takes model_type "
                f"{' / '.join(SOURCE_TYPES)})"
            )
        if model_type not in SOURCE_TYPES:
            raise ValueError(f"source: can convert model_type {' / '.join(SOURCE_TYPES)}, got {model_type!r}")
        # the target config from the source config.json: the options checked before loading weights
        self.conversion().config_for(_load_source_config(self.source))
        check_target_dir(self.source, self.output_dir, self.overwrite)

    def conversion(self) -> Conversion:
        """The options, longest input and new positions of this conversion."""
        return Conversion(**{option.name: getattr(self, option.name) for option in fields(Conversion)})


def with_linformer_options(
    model: LinformerModelT, *options: Any, **keywords: Any
) -> tuple[LinformerModelT, list[str]]:
    """The same Linformer (same head) with other Linformer options, e.g. its full-attention baseline at k = 64.

    `options`, `keywords`: `Conversion`'s (`with_linformer_options(model, 64, "kv", "linear")`). Every
    tensor whose name and shape match is copied; the projections that are new (or changed shape) start
    per `projection_init`. `max_length` above the model's longest input extends the position table,
    its new rows per `new_positions` (models/positions.py; below it: ValueError). Returns the model, in
    eval mode, and the names of the new tensors (empty when the options are the model's own: then the
    model itself is returned).
    """
    conversion = Conversion(*options, **keywords)
    config = conversion.config_for(model.config)
    same = {key: value for key, value in conversion.options().items() if key != "projection_init"}
    if config.max_position_embeddings == model.config.max_position_embeddings and all(
        getattr(model.config, key) == value for key, value in same.items()
    ):  # projection_init only says how new projections start: with none new, the model is the target
        return model, []
    target = type(model)(config)  # the new projections start per config.projection_init
    target_state = target.state_dict()
    source_state = with_positions_for(model.state_dict(), model.config, config, conversion.new_positions)
    matching = {
        name: tensor
        for name, tensor in source_state.items()
        if name in target_state and target_state[name].shape == tensor.shape
    }
    target.load_state_dict(matching, strict=False)
    return target.eval(), sorted(set(target_state) - set(matching))


def from_roberta(
    model_or_path: PreTrainedModel | str | Path, *options: Any, **keywords: Any
) -> LinformerPreTrainedModel:
    """A Linformer copy of a RoBERTa model (`RobertaModel` or its MaskedLM / sequence / token heads;
    RoBERTa-PreLayerNorm's too, as a `layer_norm="pre"` Linformer).

    `model_or_path` is a model or a local directory (safetensors weights only). `options`, `keywords`:
    `Conversion`'s (`from_roberta(model, projected_length=128, sharing="kv", max_length=4096)`).
    Returns the Linformer with the same head, every shared weight copied and E, F initialised per
    `projection_init` (see the module docstring), in eval mode. `max_length`: the longest input,
    default the source's; above it the position table is extended, its new rows per `new_positions`
    (models/positions.py), below it is a ValueError.
    """
    return _convert(model_or_path, "roberta", Conversion(*options, **keywords))


def from_bert(
    model_or_path: PreTrainedModel | str | Path, *options: Any, **keywords: Any
) -> LinformerPreTrainedModel:
    """Like `from_roberta`, with its options, for BERT (`BertModel` or its MaskedLM / sequence / token heads)."""
    return _convert(model_or_path, "bert", Conversion(*options, **keywords))


def converted_config(source: PreTrainedConfig, *options: Any, **keywords: Any) -> LinformerConfig:
    """The LinformerConfig a RoBERTa(-PreLayerNorm) / BERT / Linformer config converts to, validated, with
    `Conversion`'s options (no weights involved): `Conversion.config_for`."""
    return Conversion(*options, **keywords).config_for(source)


def converter(model_type: str) -> Callable[..., LinformerPreTrainedModel]:
    """`from_roberta` or `from_bert`, by the family of a source `model_type` (a key of SOURCE_TYPES)."""
    return from_roberta if SOURCE_TYPES[model_type][0] == "roberta" else from_bert


def convert_checkpoint(config: ConvertConfig) -> Path:
    """Convert `config.source` (a RoBERTa or BERT directory) and write model + tokenizer (+ a
    sentence-transformers pipeline) to output_dir (`write_model_dir`, models/folder.py: complete or not at all)."""
    model_type = _load_source_config(config.source).model_type
    model = _convert(config.source, SOURCE_TYPES[model_type][0], config.conversion())
    return write_model_dir(model, config.output_dir, source=config.source, max_length=config.max_length,
                           overwrite=config.overwrite)  # fmt: skip


# --- the steps -------------------------------------------------------------------------------------


def _convert(
    model_or_path: PreTrainedModel | str | Path, family: SourceFamily, conversion: Conversion
) -> LinformerPreTrainedModel:
    """A RoBERTa / BERT model of `family` (or its directory) as a Linformer (`from_roberta`)."""
    source = _load_source(model_or_path) if isinstance(model_or_path, (str, Path)) else model_or_path
    name = type(source).__name__
    if name not in TARGETS or not name.lower().startswith(family):
        supported = [n for n in TARGETS if n.lower().startswith(family)]
        raise ValueError(f"cannot convert a {name} with from_{family}: supported classes are {supported}")
    target = TARGETS[name](conversion.config_for(source.config))  # every projection new: per projection_init
    state = with_positions_for(
        mapped_state(source, target), source.config, target.config, conversion.new_positions
    )
    check_mapped(target.load_state_dict(state, strict=False))
    return target.eval()


def _load_source_config(path: str | Path) -> PreTrainedConfig:
    read_config_json(path, "source")  # a clear error for a missing or broken config.json
    return transformers.AutoConfig.from_pretrained(path)


def _load_source(path: str | Path) -> PreTrainedModel:
    """Load a local RoBERTa/BERT with the head its config names (`head_of`: its class follows the model
    type); safetensors only (no unpickling), weights that fit config.json."""
    check_model_dir(path, "source")
    return load_pretrained(auto_class_of(_load_source_config(path)), path, "source")


__all__ = [  # with the names of models/key_mapping.py, models/positions.py and models/folder.py that callers
    # import from here
    "SOURCE_TYPES",
    "TOKENIZER_FILES",
    "ConvertConfig",
    "NewPositions",
    "check_new_positions",
    "check_target_dir",
    "convert_checkpoint",
    "converted_config",
    "converter",
    "extend_position_table",
    "first_position_row",
    "from_bert",
    "from_roberta",
    "is_projection_key",
    "with_linformer_options",
    "write_model_dir",
]
