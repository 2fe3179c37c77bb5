"""`LinformerOptions`: one definition, one default and one validation for every Linformer option."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from linformer_kit.nn import DEFAULT_OPTIONS, LinformerOptions, LinformerSelfAttention, SequenceProjection
from linformer_kit.nn.options import (
    CHOICES,
    check_projected_length,
    format_projected_length,
    parse_projected_length,
)


def _models():
    """linformer_kit.models, which needs transformers (an optional extra): without it the test skips, but
    our own package must import wherever transformers does."""
    pytest.importorskip("transformers")
    from linformer_kit import models

    return models


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("128", 128),
        (" 64 ", 64),
        ("256,256,128", [256, 256, 128]),
        ("none", None),
        ("None", None),
        ("none,128", [None, 128]),
        ("128, None", [128, None]),
    ],
)
def test_the_text_forms_of_k(text: str, want: object) -> None:
    assert parse_projected_length(text) == want
    assert parse_projected_length(format_projected_length(want)) == want  # the form read back
    options = LinformerOptions.from_text(projected_length=text)
    assert options.projected_length == (tuple(want) if isinstance(want, list) else want)


@pytest.mark.parametrize("text", ["", "128.0", "12,x", "full", "1,,2", "none,,128"])
def test_bad_text_forms_of_k_are_named(text: str) -> None:
    with pytest.raises(ValueError, match=rf"projected_length: expected an int.*got {text!r}"):
        LinformerOptions.from_text(projected_length=text)


BAD_VALUES = {
    "k = 0": ({"projected_length": 0}, ValueError, r"projected_length \(k=0\) must be >= 1"),
    "k < 0 in a list": ({"projected_length": [8, -1]}, ValueError, r"k=-1\) must be >= 1"),
    "empty list": ({"projected_length": []}, ValueError, r"projected_length: an empty list"),
    "float k": ({"projected_length": 8.0}, TypeError, r"projected_length must be an int, got 8.0"),
    "bool k": ({"projected_length": True}, TypeError, r"projected_length must be an int, got True"),
    "string k": ({"projected_length": "8"}, TypeError, r"projected_length must be an int, got '8'"),
    **{
        f"unknown {name}": ({name: "bogus"}, ValueError, rf"{name} must be one of .*got 'bogus'")
        for name in CHOICES
    },
    "length scaling of a pooled E": (
        {"projection": "mean", "projection_scaling": "length"}, ValueError,
        r"projection_scaling='length' applies to dense projections .*projection='mean'",
    ),
    "length scaling of a window start": (
        {"projection_scaling": "length"}, ValueError, r"projection_scaling='length'.*projection_init='random'",
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_VALUES)
def test_every_bad_value_is_named(case: str) -> None:
    values, error, match = BAD_VALUES[case]
    with pytest.raises(error, match=match):
        LinformerOptions(**values)


def test_per_layer_full_attention_and_numpy_ints_are_accepted_as_plain_values() -> None:
    np = pytest.importorskip("numpy")
    mixed = LinformerOptions(projected_length=[None, np.int64(8)])
    assert mixed.projected_length == (None, 8)
    assert type(mixed.projected_length[1]) is int  # saved as JSON by LinformerConfig
    mixed.check_model(32, 2)
    assert type(LinformerOptions(projected_length=np.int64(8)).projected_length) is int


def test_a_good_combination_is_accepted_and_frozen() -> None:
    options = LinformerOptions(projected_length=[8, 4], projection_scaling="length", projection_init="random")
    assert options.projected_length == (8, 4)  # a list becomes a tuple: hashable, immutable
    assert options.projected_lengths(2) == [8, 4]
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.sharing = "kv"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("options", "max_seq_len", "layers", "match"),
    [
        (LinformerOptions(projected_length=64), 32, 2, r"k=64\) must be between 1 and max_seq_len=32"),
        (LinformerOptions(projected_length=12, projection="mean"), 32, 2, r"'mean' pools.*k=12 must divide"),
        (LinformerOptions(projected_length=(8, 8, 8)), 32, 2, r"has 3 entries, expected one per layer"),
        (LinformerOptions(projected_length=(8, 4), sharing="layerwise"), 32, 2, r"layerwise.*single k"),
    ],
)
def test_options_against_a_model(
    options: LinformerOptions, max_seq_len: int, layers: int, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        options.check_model(max_seq_len, layers)


def test_the_same_check_and_message_wherever_k_is_given() -> None:
    want = r"projected_length \(k=40\) must be between 1 and max_seq_len=32"
    with pytest.raises(ValueError, match=want):
        check_projected_length(40, 32)
    with pytest.raises(ValueError, match=want):
        LinformerSelfAttention(16, 2, 32, 40)
    with pytest.raises(ValueError, match=want):
        SequenceProjection(32, 40)
    models = _models()
    with pytest.raises(ValueError, match=want):
        models.LinformerConfig(max_position_embeddings=34, projected_length=40)


def test_one_default_per_option() -> None:
    """The layer's, the model config's and the converter's defaults are the options' (one place)."""
    layer = inspect.signature(LinformerSelfAttention).parameters
    for field in dataclasses.fields(LinformerOptions):
        assert layer[field.name].default == getattr(DEFAULT_OPTIONS, field.name), field.name
    models = _models()
    config = models.LinformerConfig()
    assert config.linformer_options() == DEFAULT_OPTIONS
    convert = {f.name: f.default for f in dataclasses.fields(models.ConvertConfig)}
    for name in ("projected_length", "sharing", "projection", "projection_init"):
        assert convert[name] == getattr(DEFAULT_OPTIONS, name), name


@pytest.mark.parametrize("verb", ["pretrain", "convert"])
def test_every_verb_offers_the_same_linformer_flags_with_the_same_defaults(verb: str) -> None:
    pytest.importorskip("transformers")
    import importlib

    parser = importlib.import_module(f"linformer_kit.cli.{verb}").build_parser()
    actions = {action.dest: action for action in parser._actions}
    for name in ("sharing", "projection", "projection_init"):
        assert tuple(actions[name].choices) == CHOICES[name], (verb, name)
        assert actions[name].default == getattr(DEFAULT_OPTIONS, name), (verb, name)
