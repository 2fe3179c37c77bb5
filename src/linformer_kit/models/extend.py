"""Read a saved Linformer at longer inputs: `linformer extend SRC DST --max-length N`.

A Linformer made at its source's length (a converted or distilled all-MiniLM-L6-v2 reads 512 tokens)
reads N once its position table and its E, F are sized for N:

    positions   the table grows as `convert --max-length` grows it (models/positions.py): position p
                takes the trained row of p mod the model's longest input L ("copy", Longformer's), or a
                new row ("random")
    E, F        (k x N), new: they start per the model's projection_init ("window": slot j is the mean
                of the keys in the j-th of k windows of N / k tokens), as `with_linformer_options`
                starts every projection whose shape changed
    the rest    every other weight, and every Linformer option (k, sharing, window, global tokens,
                short inputs, scaling), kept; `--exact-length T` sets T (nn/exact_rows.py): e.g. 512, every
                input the source read is read exactly, as fast as the original, and only longer ones are
                projected

The local window and the global tokens have no weights: they read N tokens as they read L. This is the
model the distillation study read at n = 2 048 (docs/distill.md, "Long inputs"): the k = 128, w = 64
student classifies IMDB reviews longer than 512 tokens 3.8 points better than the original cut at 512.
`convert` refuses a Linformer source, because its options (with their defaults) would replace the
model's own; `extend` takes none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import torch

from linformer_kit.models.config_rules import auto_class_of, longest_input, position_rows
from linformer_kit.models.conversion import CONVERSION_OPTIONS, new_positions_field
from linformer_kit.models.convert import NewPositions, with_linformer_options
from linformer_kit.models.folder import check_target_dir, write_model_dir
from linformer_kit.models.folder_checks import check_model_dir, read_config_json
from linformer_kit.models.key_mapping import is_projection_key
from linformer_kit.models.loading import load_pretrained
from linformer_kit.models.modeling_linformer import LinformerPreTrainedModel
from linformer_kit.models.positions import POSITION_TABLE, check_new_positions, with_positions_for
from linformer_kit.nn.options import check_exact_length, option_field


@dataclass
class ExtendConfig:
    """What `linformer extend` does: read the Linformer at `source`, write it sized for `max_length` tokens.

    Checked on construction, before any weight is read: `source` is a Linformer directory with safetensors
    weights, `max_length` is above its longest input, and `output_dir` is new or empty (`overwrite`
    replaces it once the new one is complete; never the source's own directory).
    """

    source: str = field(metadata={"help": "local Linformer model directory (config.json + safetensors)"})
    output_dir: str = field(metadata={"help": "directory to write the longer model to"})
    max_length: int = field(
        metadata={"help": "the longest input of the new model: above the source's", "metavar": "N"}
    )
    new_positions: NewPositions = new_positions_field()
    exact_length: int | None = option_field(
        "exact_length", note="of the new model; none: the source's (e.g. 512: what the source read, exactly)"
    )
    overwrite: bool = field(
        default=False, metadata={"help": "replace output_dir if it exists and is not empty (all of it)"}
    )

    def __post_init__(self) -> None:
        check_model_dir(self.source, "source")
        config = read_config_json(self.source, "source")
        if config["model_type"] != "linformer":
            raise ValueError(
                f"source {self.source!r} is a {config['model_type']!r} model: `linformer convert SRC DST "
                "--max-length N` makes a Linformer of it (extend reads a Linformer longer)"
            )
        longest = longest_input(config)
        if (
            isinstance(self.max_length, bool)
            or not isinstance(self.max_length, int)
            or self.max_length <= longest
        ):
            raise ValueError(
                f"max_length must be an integer above the source's longest input ({longest}), got {self.max_length!r}"
            )
        check_new_positions(self.new_positions, extends=True)
        k = config.get("projected_length")
        check_exact_length(self.exact_length, k if isinstance(k, list) else [k], self.max_length)
        check_target_dir(self.source, self.output_dir, self.overwrite)


def extended(
    model: LinformerPreTrainedModel,
    max_length: int,
    new_positions: NewPositions = "copy",
    exact_length: int | None = None,
) -> LinformerPreTrainedModel:
    """`model` (any Linformer head) sized for `max_length` tokens, its options kept (module docstring) but
    `exact_length` where given, in eval mode. At or below its longest input: the model itself."""
    if max_length <= longest_input(model.config):
        return model.eval()
    options = {name: getattr(model.config, name) for name in CONVERSION_OPTIONS}
    if exact_length is not None:
        options["exact_length"] = exact_length
    longer, _ = with_linformer_options(model, **options, max_length=max_length, new_positions=new_positions)
    return longer


def shortened(model: LinformerPreTrainedModel, max_length: int) -> LinformerPreTrainedModel:
    """`model` reading at most `max_length` tokens, below its longest input L, in eval mode: E and F cut to
    their first max_length columns, the position table to its first rows. A Linformer's input of n tokens
    reads only those (E[:, :n], rows < n), so every input of at most max_length tokens gives the same
    output (test). What for: an export sized for the lengths it serves (`torch.export` of the window
    pads its blocks to the longest input under a symbolic n, nn/local.py `banded_attention`).

    With an exact_length T >= max_length every input it reads takes exact attention: the result is the same
    weights in full attention (no E, F, window or global tokens), which gives those outputs and exports.

    ValueError: max_length not in [2, L], or a projection other than "linear" (pooling and convolution are
    sized by L).
    """
    config = model.config
    longest = longest_input(config)
    if isinstance(max_length, bool) or not isinstance(max_length, int) or not 2 <= max_length <= longest:
        raise ValueError(
            f"max_length must be an integer in [2, {longest}] (the longest input), got {max_length!r}"
        )
    if max_length == longest:
        return model.eval()
    if config.projection != "linear":
        raise ValueError(
            f"projection {config.projection!r} is sized by the longest input ({longest}): only 'linear' E, F "
            "can be cut to a shorter one"
        )
    # every input it reads at most exact_length tokens: the same weights in full attention, which is what
    # exact_length runs for them (nn/exact_rows.py), and which exports (exact_length has no exported form)
    exact = config.exact_length is not None and config.exact_length >= max_length
    full = {"projected_length": None, "local_window": None, "global_tokens": 0, "exact_length": None,
            "long_layers": False, "long_adapter_rank": None}  # (read by no input it reads)  # fmt: skip
    target_config = type(config).from_dict(
        {
            **config.to_dict(),
            **(full if exact else {}),
            "max_position_embeddings": position_rows(config, max_length),
        }
    )
    target = type(model)(target_config)
    own = target.state_dict()
    state = {}
    for name, tensor in model.state_dict().items():
        if exact and (is_projection_key(name) or ".long_layer." in name or ".long_adapters." in name):
            continue  # E, F: full attention has none; long layers and adapters: no input it reads reaches them
        if name not in own or own[name].shape == tensor.shape:
            state[name] = tensor
        elif is_projection_key(name) or name.endswith(POSITION_TABLE):  # (k, L) -> (k, max_length); rows cut
            state[name] = (
                tensor[..., :max_length] if is_projection_key(name) else tensor[: own[name].shape[0]]
            )
        else:  # buffers of one entry per position (position_ids, token_type_ids): the target's own
            state[name] = own[name]
    # assign: the target takes these tensors (copies), in the model's dtype and device; then tied again
    target.load_state_dict({name: tensor.clone() for name, tensor in state.items()}, strict=True, assign=True)
    target.tie_weights()  # a head tied to the word embeddings shares them again (assign replaced both)
    return target.eval()


def extend_checkpoint(config: ExtendConfig) -> Path:
    """Read `config.source` with the head its config.json names (`head_of`), write it extended (with its
    tokenizer files and sentence-transformers pipeline, which then read max_length tokens) to output_dir
    (`write_model_dir`, models/folder.py)."""
    auto_class = auto_class_of(read_config_json(config.source, "source"))
    model = cast(LinformerPreTrainedModel, load_pretrained(auto_class, config.source, "source"))
    longer = extended(model, config.max_length, config.new_positions, config.exact_length)
    return write_model_dir(longer, config.output_dir, source=config.source, max_length=config.max_length,
                           overwrite=config.overwrite)  # fmt: skip


def encoder_at(path: str, length: int) -> torch.nn.Module:
    """The `AutoModel` at `path` reading up to `length` tokens, in eval mode.

    Above its longest input the position table is wrapped (position p takes the trained row of p mod
    that length: `convert --max-length`'s "copy"): a Linformer as `linformer extend` writes it (its
    options kept, E and F sized for `length`, new ones at their start: models/extend.py), any other encoder (BERT,
    RoBERTa) stays its own class and attention with the longer table (`with_positions_for`).
    Weights that do not fit the config are refused, never re-initialised (`load_pretrained`: ValueError),
    and the longer model takes every tensor of the original: only the buffers its config sizes (one
    entry per position: position_ids, token_type_ids) are its own.
    """
    from transformers import AutoConfig, AutoModel

    model = load_pretrained(AutoModel, path, "encoder", report_head=False)
    config = model.config
    if length <= longest_input(config):
        return model.eval()
    if config.model_type == "linformer":  # what `linformer extend` writes
        return extended(cast(LinformerPreTrainedModel, model), length)
    longer_config = AutoConfig.from_pretrained(path, max_position_embeddings=position_rows(config, length))
    longer = AutoModel.from_config(longer_config)
    state = with_positions_for(model.state_dict(), config, longer_config)
    sized = {  # saved buffers of one entry per position (older models): the longer model's own
        name: buffer
        for name, buffer in longer.named_buffers()
        if name in state and state[name].shape != buffer.shape
    }
    longer.load_state_dict({**state, **sized})  # strict: a missing, left-over or reshaped tensor raises
    return longer.eval()
