"""The local window and global tokens in the Hugging Face models: config, save / load, convert, attentions."""

from __future__ import annotations

import json

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import N, tiny_linformer_config, tiny_source
from tests.fixtures.tokenizers import write_tokenizer
from torch.testing import assert_close
from transformers import AutoModelForMaskedLM

from linformer_kit.cli.main import main
from linformer_kit.models import LinformerConfig, LinformerForMaskedLM, LinformerModel, from_bert


def test_per_layer_windows_reach_their_layers_and_survive_a_round_trip(tmp_path) -> None:
    config = tiny_linformer_config(local_window=[4, None], global_tokens=1)
    model = LinformerForMaskedLM(config).eval()
    layers = [layer.attention.self for layer in model.linformer.encoder.layer]
    assert [(layer.local_window, layer.global_tokens) for layer in layers] == [(4, 1), (None, 1)]
    model.save_pretrained(tmp_path)
    assert json.loads((tmp_path / "config.json").read_text())["local_window"] == [4, None]
    loaded = AutoModelForMaskedLM.from_pretrained(tmp_path).eval()
    input_ids, attention_mask = padded_batch(config.pad_token_id)
    with torch.no_grad():
        assert_close(loaded(input_ids, attention_mask=attention_mask).logits,
                     model(input_ids, attention_mask=attention_mask).logits)  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"local_window": [4, 4, 4]}, "local_window has 3 entries, expected one per layer"),
        ({"local_window": -2}, r"local_window \(w=-2\) must be >= 0"),
        ({"local_window": "16"}, "local_window must be an int"),
        ({"global_tokens": N + 1}, f"global_tokens={N + 1} must be at most max_seq_len={N}"),
        ({"global_tokens": -1}, "global_tokens must be >= 0"),
    ],
)
def test_bad_windows_in_a_config_are_value_errors(fields: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        tiny_linformer_config(**fields)


def test_output_attentions_are_slots_then_tokens() -> None:
    config = tiny_linformer_config(local_window=2, projected_length=8)
    model = LinformerModel(config).eval()
    input_ids, attention_mask = padded_batch(config.pad_token_id, n=20)
    with torch.no_grad():
        out = model(input_ids, attention_mask=attention_mask, output_attentions=True)
    assert [a.shape for a in out.attentions] == [(3, 4, 20, 8 + 20)] * 2
    real = attention_mask.bool()
    queries = real[:, None, :].expand(-1, 4, -1)  # (b, h, n): the real queries (a pad query is never read)
    near = (torch.arange(20)[:, None] - torch.arange(20)[None, :]).abs() <= 2  # (n, n): |i - j| <= w
    readable = torch.cat([torch.ones(3, 1, 20, 8, dtype=torch.bool), near & real[:, None, None, :]], dim=-1)
    for weights in out.attentions:  # a real query's weight is on the slots and its window's real tokens only
        mass = torch.where(readable, weights, 0.0).sum(-1)[queries]
        assert_close(mass, torch.ones_like(mass))
        own = weights[..., 8:].diagonal(dim1=-2, dim2=-1)  # (b, h, n): each query's weight on its own token
        assert (own[queries] > 0).all()


def test_from_bert_takes_the_window() -> None:
    """At k = n (identity slots) the conversion equals the source; a window beside those slots counts
    its keys twice, so the same conversion with a window must differ: the option reaches the layers."""
    source = tiny_source("bert", "Model")
    input_ids, attention_mask = padded_batch(0, n=N)
    with torch.no_grad():
        want = source(input_ids, attention_mask=attention_mask).last_hidden_state
        plain = from_bert(source, projected_length=N, projection_init="window")
        windowed = from_bert(source, projected_length=N, projection_init="window", local_window=2)
        got = plain(input_ids, attention_mask=attention_mask).last_hidden_state
        assert_close(got[attention_mask.bool()], want[attention_mask.bool()], rtol=1e-4, atol=1e-5)
        other = windowed(input_ids, attention_mask=attention_mask).last_hidden_state
    assert windowed.config.local_window == 2
    assert (other - got).abs().max() > 1e-3


def test_convert_cli_writes_the_window(tmp_path) -> None:
    tiny_source("roberta", "ForMaskedLM").save_pretrained(tmp_path / "src")
    write_tokenizer(tmp_path / "src")
    args = ["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--projected-length", "8"]
    assert main([*args, "--local-window", "16,none", "--global-tokens", "1"]) == 0
    config = LinformerConfig.from_pretrained(tmp_path / "dst")
    assert (config.local_window, config.global_tokens) == ([16, None], 1)


def test_convert_cli_refuses_a_bad_window_before_writing(tmp_path, capsys) -> None:
    tiny_source("roberta", "ForMaskedLM").save_pretrained(tmp_path / "src")
    args = ["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--projected-length", "8"]
    assert main([*args, "--local-window", "4,4,4"]) != 0
    assert (
        "local_window has 3 entries, expected one per layer (num_hidden_layers=2)" in capsys.readouterr().err
    )
    assert not (tmp_path / "dst").exists()
