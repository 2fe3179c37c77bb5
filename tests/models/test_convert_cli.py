"""`linformer convert SRC DST`: writes a ready-to-use model directory."""

import json
from typing import get_args

import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import tiny_source
from tests.fixtures.tokenizers import write_tokenizer
from torch.testing import assert_close
from transformers import (
    AutoModelForMaskedLM,
    AutoModelForSequenceClassification,
    AutoTokenizer,
)

from linformer_kit.cli import convert as convert_cli
from linformer_kit.cli.arguments import parse_config
from linformer_kit.cli.main import main
from linformer_kit.models import ConvertConfig, from_roberta, parse_projected_length
from linformer_kit.models.convert import NewPositions
from linformer_kit.nn import PROJECTION_INITS, PROJECTION_KINDS, SHARING_MODES


def test_convert_roberta_directory(tmp_path, capsys):
    source = tiny_source("roberta", "ForMaskedLM")
    source.save_pretrained(tmp_path / "src")
    write_tokenizer(tmp_path / "src")
    args = [
        "convert",
        str(tmp_path / "src"),
        str(tmp_path / "dst"),
        "--projected-length",
        "8",
        "--sharing",
        "kv",
    ]
    assert main(args) == 0
    assert "wrote a Linformer" in capsys.readouterr().out

    dst = tmp_path / "dst"
    config = json.loads((dst / "config.json").read_text())
    assert (config["model_type"], config["projected_length"], config["sharing"]) == ("linformer", 8, "kv")
    assert (dst / "model.safetensors").is_file()
    assert (dst / "tokenizer_config.json").is_file()
    assert (dst / "vocab.txt").is_file()
    tokenizer = AutoTokenizer.from_pretrained(dst)
    assert tokenizer("hello world")["input_ids"][0] == 2  # [CLS]
    assert tokenizer.model_max_length == source.config.max_position_embeddings - 2  # the longest input

    loaded = AutoModelForMaskedLM.from_pretrained(dst)
    expected = from_roberta(source, projected_length=8, sharing="kv")
    input_ids, attention_mask = padded_batch(source.config.pad_token_id)
    with torch.no_grad():
        assert_close(loaded(input_ids, attention_mask=attention_mask).logits,
                     expected(input_ids, attention_mask=attention_mask).logits)  # fmt: skip


def test_convert_bert_classifier_with_per_layer_k(tmp_path):
    tiny_source("bert", "ForSequenceClassification").save_pretrained(tmp_path / "src")
    assert main(["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--projected-length", "8,4"]) == 0
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "dst")
    assert model.config.position_style == "bert"
    assert model.config.projected_length == [8, 4]
    assert model.linformer.encoder.layer[1].attention.self.projected_length == 4


def test_convert_refuses_pickled_source(tmp_path, capsys):
    source = tiny_source("roberta", "Model")
    source.config.save_pretrained(tmp_path / "src")
    torch.save(source.state_dict(), tmp_path / "src" / "pytorch_model.bin")
    assert main(["convert", str(tmp_path / "src"), str(tmp_path / "dst")]) == 2
    err = capsys.readouterr().err
    assert "linformer convert: error: " in err
    assert "no .safetensors weights" in err
    assert not (tmp_path / "dst").exists()


def test_convert_reports_bad_k(tmp_path, capsys):
    tiny_source("roberta", "Model").save_pretrained(tmp_path / "src")
    assert main(["convert", str(tmp_path / "src"), str(tmp_path / "dst"), "--projected-length", "999"]) == 2
    assert "projected_length (k=999)" in capsys.readouterr().err


def test_projected_length_parsing(capsys):
    assert parse_projected_length("128") == 128
    assert parse_projected_length("256,128") == [256, 128]
    assert parse_projected_length("none") is None
    assert main(["convert", "a", "b", "--projected-length", "big"]) == 2  # checked before SRC and DST
    err = capsys.readouterr().err
    assert "linformer convert: error: projected_length: expected an int" in err
    assert "expected an int, 'none', or a comma-separated list of them (one per layer), got 'big'" in err


def test_cli_defaults_and_choices_are_the_configs(tmp_path):
    """One source: the parser reads ConvertConfig's defaults and the library's Literal choices."""
    tiny_source("roberta", "Model").save_pretrained(tmp_path / "a")  # the config checks the source's files
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    parser = convert_cli.build_parser()
    parsed = parse_config(parser, [a, b, "--projected-length", "8"])  # the default 256 > the tiny model's 32
    assert parsed == ConvertConfig(source=a, output_dir=b, projected_length=8)
    choices = {action.dest: action.choices for action in parser._actions if action.choices}
    assert choices == {
        "sharing": SHARING_MODES,
        "projection": PROJECTION_KINDS,
        "projection_init": PROJECTION_INITS,
        "new_positions": get_args(NewPositions),
    }
