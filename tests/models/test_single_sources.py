"""One definition each: the option names, the longest-input rule, the conversion options, the presets.

Each test fails when a new option, model type or preset reaches one place and not another.
"""

from __future__ import annotations

import dataclasses
from typing import get_args

import pytest
import transformers
from tests.fixtures.models import N, tiny_linformer_config, tiny_source

from linformer_kit.models import LinformerConfig, LinformerModel
from linformer_kit.models.config_rules import longest_input, position_rows
from linformer_kit.models.configuration_linformer import SAVED_OPTIONS
from linformer_kit.models.conversion import CONVERSION_OPTIONS, Conversion
from linformer_kit.models.convert import converted_config
from linformer_kit.models.presets import PRESETS, Preset
from linformer_kit.nn import SequenceProjection
from linformer_kit.nn.options import DEFAULT_OPTIONS, LinformerOptions
from linformer_kit.train.model_fields import NewModelFields

# a value other than the default for every option a config saves (two layers: one k / w per layer)
NOT_DEFAULT = {
    "projected_length": [8, 4],
    "sharing": "kv",
    "projection": "random",
    "projection_init": "random",
    "projection_scaling": "length",
    "short_inputs": "exact",
    "local_window": [2, None],
    "global_tokens": 1,
    "exact_length": 10,
}


def test_a_config_has_every_saved_option_with_the_options_default() -> None:
    # an option added to LinformerOptions is saved by LinformerConfig, or this fails (AttributeError)
    config = LinformerConfig()
    for name in SAVED_OPTIONS:
        assert getattr(config, name) == getattr(DEFAULT_OPTIONS, name), name
    assert set(NOT_DEFAULT) == set(SAVED_OPTIONS)  # the table above names every saved option
    assert set(CONVERSION_OPTIONS) <= set(SAVED_OPTIONS)


def test_every_saved_option_reaches_each_attention_layer() -> None:
    config = tiny_linformer_config(**NOT_DEFAULT)
    assert config.linformer_options() == LinformerOptions(**NOT_DEFAULT)
    for i, layer in enumerate(LinformerModel(config).encoder.layer):
        attention = layer.attention.self
        assert attention.projected_length == NOT_DEFAULT["projected_length"][i]
        assert attention.local_window == NOT_DEFAULT["local_window"][i]
        for name in ("sharing", "projection", "short_inputs", "global_tokens", "exact_length"):
            assert getattr(attention, name) == NOT_DEFAULT[name], name
        projections = [m for m in attention.modules() if isinstance(m, SequenceProjection)]
        assert projections
        assert {(p.scaling, p.init) for p in projections} == {("length", "random")}


@pytest.mark.parametrize("family", ["roberta", "roberta-prelayernorm", "bert"])
def test_longest_input_reads_a_config_object_and_its_json_alike(family: str) -> None:
    source = tiny_source(family, "Model").config
    converted = converted_config(source, projected_length=8)
    for config in (source, converted):
        assert longest_input(config) == longest_input(config.to_dict()) == N
        assert position_rows(config, longest_input(config)) == config.max_position_embeddings
        assert position_rows(config.to_dict(), 2 * N) == config.max_position_embeddings + N


def test_longest_input_of_a_linformer_follows_its_position_style() -> None:
    roberta = tiny_linformer_config()  # positions from pad_token_id + 1
    bert = tiny_linformer_config(position_style="bert", max_position_embeddings=N)
    assert longest_input(roberta) == longest_input(bert) == roberta.max_seq_len == bert.max_seq_len == N
    assert (
        longest_input({"model_type": "linformer", "max_position_embeddings": 514, "pad_token_id": 1}) == 512
    )


def test_conversion_takes_the_conversion_options_and_the_position_settings() -> None:
    taken = {field.name for field in dataclasses.fields(Conversion)}
    assert taken == {*CONVERSION_OPTIONS, "max_length", "new_positions"}
    assert set(NewModelFields().conversion_options()) == set(CONVERSION_OPTIONS)
    # the positional order of the old signatures: k, sharing, projection, projection_init
    assert Conversion(8, "kv", "mean", "random").options() == {
        **Conversion().options(), "projected_length": 8, "sharing": "kv", "projection": "mean",
        "projection_init": "random",
    }  # fmt: skip
    with pytest.raises(TypeError):
        Conversion(8, "kv", "mean", "random", None)  # max_length only by name


def test_a_conversion_keeps_the_rest_of_a_linformer_config() -> None:
    source = tiny_linformer_config(short_inputs="exact", layer_norm="pre", projected_length=None)
    target = converted_config(source, 8, "kv", "linear", max_length=2 * N)
    assert (target.short_inputs, target.layer_norm, target.projected_length) == ("exact", "pre", 8)
    assert target.max_seq_len == 2 * N
    assert source.projected_length is None  # the source config is not changed


def test_a_model_type_that_does_not_convert_is_named() -> None:
    config = transformers.GPT2Config(n_positions=N)
    with pytest.raises(ValueError, match="got 'gpt2'"):
        converted_config(config, 8)


def test_preset_choices_are_the_presets() -> None:
    assert get_args(Preset) == tuple(PRESETS)
