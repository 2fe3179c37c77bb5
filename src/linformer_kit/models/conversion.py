"""What one conversion sets, in one signature: `Conversion`, the options of every conversion call.

`from_roberta`, `from_bert`, `with_linformer_options`, `converted_config` (models/convert.py),
`linformer extend` (models/extend.py) and `linformer_kit.train.init_from` take their options as
`Conversion`'s constructor does. `Conversion.config_for` builds the target config from a source
config, with no weights involved: the options and the config they make are this room, the weight
copying is models/convert.py's. `new_positions_field` is the command-line form of `new_positions`.
"""

from __future__ import annotations

import copy
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, cast

from transformers import PreTrainedConfig

from linformer_kit.models.configuration_linformer import LinformerConfig
from linformer_kit.models.key_mapping import SOURCE_TYPES, copied_fields
from linformer_kit.models.positions import NewPositions, check_new_positions, extended_rows
from linformer_kit.nn.options import (
    DEFAULT_LOCAL_WINDOW,
    DEFAULT_OPTIONS,
    DEFAULT_PROJECTED_LENGTH,
    OPTION_NAMES,
    ProjectionInit,
    ProjectionKind,
    Sharing,
)


@dataclass(frozen=True)
class Conversion:
    """What one conversion sets: the target's Linformer options, its longest input, how new positions start.

    The constructor is the one signature of every conversion call: projected_length, sharing,
    projection and projection_init by position or by name, the rest by name; what is not given is
    `LinformerOptions`' default. A conversion does not set projection_scaling (it needs the random
    start: new models only), short_inputs (a Linformer source keeps its own; finetune sets it) or
    projection_order (no config saves it). The values are checked where the target config is built.
    """

    projected_length: int | list[int | None] | None = DEFAULT_PROJECTED_LENGTH
    sharing: Sharing = DEFAULT_OPTIONS.sharing
    projection: ProjectionKind = DEFAULT_OPTIONS.projection
    projection_init: ProjectionInit = DEFAULT_OPTIONS.projection_init
    _: KW_ONLY
    max_length: int | None = None  # the target's longest input; None: the source's (models/positions.py)
    new_positions: NewPositions = "copy"
    local_window: int | list[int | None] | None = DEFAULT_LOCAL_WINDOW
    global_tokens: int = DEFAULT_OPTIONS.global_tokens
    exact_length: int | None = DEFAULT_OPTIONS.exact_length

    def options(self) -> dict[str, Any]:
        """The Linformer options, as `LinformerConfig` fields."""
        return {name: getattr(self, name) for name in CONVERSION_OPTIONS}

    def config_for(self, source: PreTrainedConfig) -> LinformerConfig:
        """The validated config of `source`'s model converted: a RoBERTa / BERT config's fields, or every
        field of a Linformer's, with these options (no weights involved). ValueError names a bad option,
        a max_length below the source's longest input, or a model type that does not convert."""
        linformer = source.model_type == "linformer"
        if not linformer and source.model_type not in SOURCE_TYPES:
            raise ValueError(
                f"can convert model_type linformer / {' / '.join(SOURCE_TYPES)}, got {source.model_type!r}"
            )
        kept = {} if linformer else copied_fields(source)
        rows = extended_rows(source, self.max_length)
        check_new_positions(self.new_positions, rows > source.max_position_embeddings)
        values = {**kept, **self.options(), "max_position_embeddings": rows}
        if linformer:  # the rest of its config kept: short_inputs, projection_scaling, the encoder's fields
            # a Linformer's config: LinformerConfig, or the same class from a saved model's own code
            config = cast(LinformerConfig, copy.deepcopy(source))
            config.update(values)
            config._validate_linformer()  # k against the model's longest input, window kinds, projection_init
            return config
        family, _, layer_norm = SOURCE_TYPES[source.model_type]
        # position_style: "roberta" positions start at pad+1, "bert" at 0
        return LinformerConfig(**values, position_style=family, layer_norm=layer_norm)


# the Linformer options a conversion sets: LinformerOptions' own that `Conversion` takes (its docstring)
CONVERSION_OPTIONS = tuple(name for name in OPTION_NAMES if name in Conversion.__dataclass_fields__)


def new_positions_field() -> Any:
    """The `new_positions` option of `linformer convert` and `linformer pretrain --init-from` (one definition,
    named to ruff as a field factory in pyproject.toml: it stays here, or pyproject.toml follows it)."""
    return field(
        default="copy",
        metadata={
            "help": "rows of the positions past the source's longest input, when max_length extends it: 'copy' "
            "(position p takes the trained row of p mod that length, Longformer's) or 'random' (a new "
            "model's start)"
        },
    )
