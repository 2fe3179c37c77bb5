"""`linformer finetune --preset NAME --tokenizer bytes|word|DIR`: a classifier trained from scratch.

The byte and word tokenizers (train/finetune/tokenizer_kinds.py), the checks made before any work, and two tiny
end-to-end runs (ListOps-style expressions with words, sentences with bytes) whose output directory
loads with the Auto classes and runs in a pipeline.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from tokenizers.pre_tokenizers import ByteLevel
from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

from linformer_kit.cli.main import main
from linformer_kit.models import LinformerForSequenceClassification
from linformer_kit.train import FinetuneConfig, finetune
from linformer_kit.train.data import SPECIAL_TOKENS
from linformer_kit.train.finetune.tokenizer_kinds import (
    BYTE_OFFSET,
    byte_to_unicode,
    byte_tokenizer,
    listops_tokenizer,
    word_tokenizer,
)

TINY_RUN = dict(preset="tiny", max_length=32, projected_length=8, max_steps=2, per_device_train_batch_size=8,
                disable_tqdm=True)  # fmt: skip


@pytest.fixture(scope="module")
def listops_tsv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """LRA ListOps' layout (Source, Target columns): `[MAX 2 9 ]` -> 9, nested one level at most."""
    rng = random.Random(0)
    folder = tmp_path_factory.mktemp("listops")

    def expression() -> tuple[str, int]:
        op = rng.choice(["MAX", "MIN"])
        args = [(str(d), d) for d in rng.sample(range(10), 2)]
        if rng.random() < 0.3:
            inner, value = expression()
            args.append((inner, value))
        pick = max if op == "MAX" else min
        return f"[{op} {' '.join(text for text, _ in args)} ]", pick(value for _, value in args)

    train = [expression() for _ in range(40)]
    seen = {label for _, label in train}
    dev = [row for row in (expression() for _ in range(30)) if row[1] in seen][:12]
    for name, rows in (("train", train), ("dev", dev)):
        lines = ["Source\tTarget", *(f"{text}\t{label}" for text, label in rows)]
        (folder / f"{name}.tsv").write_text("\n".join(lines) + "\n")
    return folder


# --- tokenizers ------------------------------------------------------------------------------------------


def test_byte_tokenizer_round_trips_text_one_id_per_byte(tmp_path: Path) -> None:
    tokenizer = byte_tokenizer()
    text = "héllo wörld ✓\t<s>\n"  # multi-byte characters, controls, and a special token's spelling
    ids = tokenizer(text)["input_ids"]
    assert len(ids) == len(text.encode()) + 2  # <s> ... </s>
    assert ids[1:-1] == [BYTE_OFFSET + b for b in text.encode()]  # "<s>" in the text is three bytes
    assert (ids[0], ids[-1]) == (tokenizer.bos_token_id, tokenizer.eos_token_id)
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    special = set(tokenizer.all_special_ids)
    assert special == set(range(len(SPECIAL_TOKENS)))  # RoBERTa's ids: pad 1, as pretrain's tokenizers
    assert tokenizer.pad_token_id == 1
    assert len(tokenizer) == len(SPECIAL_TOKENS) + 256
    assert not special & {BYTE_OFFSET + b for b in range(256)}
    assert set(byte_to_unicode().values()) == set(ByteLevel.alphabet())  # the pre-tokenizer's own symbols
    tokenizer.save_pretrained(tmp_path)
    loaded = AutoTokenizer.from_pretrained(tmp_path)
    assert loaded(text)["input_ids"] == ids
    assert loaded.decode(ids, skip_special_tokens=True) == text


def test_word_tokenizer_learns_the_words_of_a_tsv(listops_tsv: Path, tmp_path: Path) -> None:
    lines = (listops_tsv / "train.tsv").read_text().splitlines()[1:]
    tokenizer = word_tokenizer(line.split("\t")[0] for line in lines)
    vocab = tokenizer.get_vocab()
    assert [vocab[token] for token in SPECIAL_TOKENS] == list(range(len(SPECIAL_TOKENS)))
    assert {"[MAX", "[MIN", "]", "0", "9"} <= set(vocab)
    ids = tokenizer("[MAX 2 9 ] [SM 3 ]")["input_ids"]
    assert tokenizer.convert_ids_to_tokens(ids) == ["<s>", "[MAX", "2", "9", "]", "<unk>", "3", "]", "</s>"]
    assert tokenizer.decode(ids[:5], skip_special_tokens=True) == "[MAX 2 9 ]"
    tokenizer.save_pretrained(tmp_path)
    assert AutoTokenizer.from_pretrained(tmp_path)("[MAX 2 9 ]")["input_ids"] == ids[:4] + ids[-2:]


def test_listops_tokenizer_reads_the_release_format_as_lra_does(tmp_path: Path) -> None:
    """LRA's input pipeline deletes the release's parentheses: the saved tokenizer does it for every user."""
    release = "( ( ( [MAX 2 ) 9 ) ] )"  # [MAX 2 9 ] as the release's files write it
    tokenizer = listops_tokenizer([release, "( ( [SM 4 ) 7 ) ]"])
    assert "(" not in tokenizer.get_vocab()
    assert ")" not in tokenizer.get_vocab()
    tokens = tokenizer.convert_ids_to_tokens(tokenizer(release)["input_ids"])
    assert tokens == ["<s>", "[MAX", "2", "9", "]", "</s>"]
    tokenizer.save_pretrained(tmp_path)
    again = AutoTokenizer.from_pretrained(tmp_path)
    assert again(release)["input_ids"] == tokenizer("[MAX 2 9 ]")["input_ids"]


# --- checked before any work -----------------------------------------------------------------------------


def _config(data: Path, out: Path, **overrides) -> FinetuneConfig:
    fields = dict(train=str(data / "train.tsv"), validation=str(data / "dev.tsv"), output_dir=str(out),
                  text_column="Source", label_column="Target", tokenizer="word", **TINY_RUN)  # fmt: skip
    return FinetuneConfig(**{**fields, **overrides})


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"preset": None}, r"model: missing; .*--model.*--preset"),
        ({"model": "runs/mlm"}, r"model='runs/mlm' and preset='tiny': give one.*--model.*--preset"),
        ({"tokenizer": "chars"}, r"tokenizer must be one of \('bytes', 'word', 'listops'\) or a saved .* got 'chars'"),
        ({"tokenizer": None}, r"tokenizer: missing; .*--preset tiny.*\('bytes', 'word', 'listops'\)"),
        ({"preset": "huge"}, r"preset must be one of \('tiny', 'mini', 'lra', 'small', 'base'\), got 'huge'"),
        ({"classifier_pooling": "max"}, r"classifier_pooling must be one of \('cls', 'mean'\), got 'max'"),
        ({"projected_length": "64"}, r"projected_length \(k=64\) must be .* max_seq_len=32 \(max_length\)"),
        ({"max_length": 1}, r"max_length=1 must be an int >= 2"),
        ({"sharing": "rowwise"}, r"sharing must be one of .*'rowwise'"),
        ({"dropout": 1.5}, r"dropout=1.5 must be"),
        ({"attention_dropout": 1.0}, r"attention_dropout=1.0 must be"),
    ],
)  # fmt: skip
def test_new_model_options_are_checked_first(
    overrides: dict, message: str, listops_tsv: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=message):  # values on construction, a tokenizer folder: preflight
        _config(listops_tsv, tmp_path / "out", **overrides).preflight()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("attention_dropout", "expected"), [(None, 0.2), (0.0, 0.0), (0.05, 0.05)])
def test_attention_dropout_defaults_to_dropout(
    attention_dropout: float | None, expected: float, listops_tsv: Path, tmp_path: Path
) -> None:
    config = _config(listops_tsv, tmp_path / "out", dropout=0.2, attention_dropout=attention_dropout)
    model_config = config.new_model_config("tiny", 32, vocab_size=20, pad_token_id=1)
    assert (model_config.hidden_dropout_prob, model_config.attention_probs_dropout_prob) == (0.2, expected)


def test_tokenizer_folder_must_hold_a_tokenizer(listops_tsv: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"not a saved tokenizer folder \(no tokenizer_config.json\)"):
        _config(listops_tsv, tmp_path / "out", tokenizer=str(tmp_path)).preflight()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"tokenizer": "bytes"}, r"tokenizer: apply to a new model \(--preset\) only"),
        ({"sharing": "kv", "layer_norm": "pre"}, r"sharing, layer_norm: apply to a new model \(--preset\)"),
    ],
)  # fmt: skip
def test_new_model_fields_with_a_model_directory(
    overrides: dict, message: str, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    data = dict(train=str(sentiment_csv / "train.csv"), validation=str(sentiment_csv / "dev.csv"))
    with pytest.raises(ValueError, match=message):
        FinetuneConfig(model=str(tiny_model_dir), output_dir=str(tmp_path / "out"), **data, **overrides)


# --- end to end ------------------------------------------------------------------------------------------


def test_listops_from_scratch_with_words(listops_tsv: Path, tmp_path: Path) -> None:
    out = tmp_path / "listops"
    result = finetune(_config(listops_tsv, out, classifier_pooling="mean"))
    assert result.steps == 2
    labels = {line.split("\t")[1] for line in (listops_tsv / "train.tsv").read_text().splitlines()[1:]}
    assert result.num_labels == len(labels)

    tokenizer = AutoTokenizer.from_pretrained(out)
    model = AutoModelForSequenceClassification.from_pretrained(out)
    assert isinstance(model, LinformerForSequenceClassification)
    assert model.config.classifier_pooling == "mean"
    assert (model.config.vocab_size, model.config.pad_token_id) == (len(tokenizer), tokenizer.pad_token_id)
    assert model.config.max_seq_len == tokenizer.model_max_length == 32  # positions sized to max_length
    assert model.config.hidden_size == 64  # the tiny preset
    tokens = tokenizer.convert_ids_to_tokens(tokenizer("[MAX 2 9 ]")["input_ids"])
    assert tokens == ["<s>", "[MAX", "2", "9", "]", "</s>"]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["config"]["preset"] == "tiny"
    assert metrics["config"]["tokenizer"] == "word"
    assert "random initialisation" in (out / "README.md").read_text()


def test_sentences_from_scratch_with_bytes_through_the_cli(tmp_path: Path, capsys) -> None:
    rows = [("the film was good", 1), ("the food was bad", 0), ("héllo wörld, good ✓", 1), ("bad bad", 0)] * 4
    for split in ("train", "dev"):
        lines = ["sentence\tlabel", *(f"{text}\t{label}" for text, label in rows)]
        (tmp_path / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "bytes"
    code = main(["finetune", "--preset", "tiny", "--tokenizer", "bytes", "--classifier_pooling", "mean",
                 "--train", str(tmp_path / "train.tsv"), "--validation", str(tmp_path / "dev.tsv"),
                 "--max-length", "64", "--projected-length", "16", "--output-dir", str(out),
                 "--max-steps", "2", "--batch-size", "8", "--no-progress"])  # fmt: skip
    assert code == 0
    assert "finetune done: 2 steps" in capsys.readouterr().out

    tokenizer = AutoTokenizer.from_pretrained(out)
    assert len(tokenizer("héllo")["input_ids"]) == len("héllo".encode()) + 2
    classify = pipeline("text-classification", model=str(out))
    prediction = classify("héllo wörld, this was good ✓")[0]
    assert prediction["label"] in ("0", "1")
    assert AutoModelForSequenceClassification.from_pretrained(out).config.max_seq_len == 64


def test_mean_pooling_on_a_pretrained_model(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    """`--classifier_pooling mean` sets it on a loaded model (its classifier is new anyway)."""
    out = tmp_path / "mean"
    finetune(FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                            validation=str(sentiment_csv / "dev.csv"), output_dir=str(out), max_steps=1,
                            per_device_train_batch_size=8, max_eval_samples=8, classifier_pooling="mean",
                            disable_tqdm=True))  # fmt: skip
    assert json.loads((out / "config.json").read_text())["classifier_pooling"] == "mean"


def test_a_saved_tokenizer_folder_for_a_new_model(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bpe"
    finetune(FinetuneConfig(preset="tiny", tokenizer=str(tiny_model_dir), output_dir=str(out),
                            train=str(sentiment_csv / "train.csv"), validation=str(sentiment_csv / "dev.csv"),
                            max_length=32,
                            projected_length=8, max_steps=1, per_device_train_batch_size=8,
                            max_eval_samples=8, disable_tqdm=True))  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(out)
    assert (model.config.vocab_size, model.config.pad_token_id) == (len(tokenizer), tokenizer.pad_token_id)
    saved = AutoTokenizer.from_pretrained(out)
    assert saved("the cat sat")["input_ids"] == tokenizer("the cat sat")["input_ids"]


def test_a_dev_label_unseen_in_train_stops_before_training(listops_tsv: Path, tmp_path: Path) -> None:
    dev = tmp_path / "dev.tsv"
    dev.write_text((listops_tsv / "dev.tsv").read_text() + "[MAX 1 12 ]\t12\n")
    config = _config(listops_tsv, tmp_path / "out", validation=str(dev))
    with pytest.raises(ValueError, match=r"validation: labels \[12\] never occur in train"):
        finetune(config)
    assert not (tmp_path / "out" / "model.safetensors").exists()
