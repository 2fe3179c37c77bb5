"""The directory a run leaves behind is ready to publish: it loads, truncates, and holds no pickle or local path."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import transformers
from transformers import AutoTokenizer, pipeline

from linformer_kit.train import FinetuneConfig, PretrainConfig, finetune, pretrain
from tests.models.isolated import outputs_without_linformer_kit

LONG_TEXT = " ".join(["the cat sat on a mat while one dog ran far away"] * 30)  # ~360 tokens, the limit is 32


@pytest.fixture(scope="module")
def pretrained(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-step tiny pretraining run with a checkpoint, its paths given absolute."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("published") / "mlm"
    pretrain(PretrainConfig(
        train=[str(corpus / "train.txt")], validation=[str(corpus / "valid.txt")], output_dir=str(out),
        preset="tiny", seq_len=32, projected_length=8, batch_size=4, max_eval_blocks=8, max_steps=2,
        save_steps=2, progress=False,
    ))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def finetuned(pretrained: Path, sentiment_csv: Path) -> Path:
    torch.set_num_threads(1)
    out = pretrained.parent / "clf"
    finetune(FinetuneConfig(
        model=str(pretrained), train=str(sentiment_csv / "train.csv"), validation=str(sentiment_csv / "dev.csv"),
        output_dir=str(out), max_steps=2, batch_size=8, progress=False,
    ))  # fmt: skip
    return out


@pytest.mark.slow
def test_tokenizers_carry_the_models_longest_input(pretrained: Path, finetuned: Path) -> None:
    for directory in (pretrained, finetuned):
        assert AutoTokenizer.from_pretrained(directory).model_max_length == 32


@pytest.mark.slow
def test_pipelines_truncate_over_long_inputs(pretrained: Path, finetuned: Path) -> None:
    features = pipeline("feature-extraction", model=str(pretrained))(LONG_TEXT, truncation=True)
    assert len(features[0]) == 32  # tokens kept: the model's longest input

    masked = LONG_TEXT.replace("dog", "<mask>", 1)
    predictions = pipeline("fill-mask", model=str(pretrained))(masked, tokenizer_kwargs={"truncation": True})
    assert len(predictions) == 5

    (label,) = pipeline("text-classification", model=str(finetuned))(LONG_TEXT, truncation=True)
    assert label["label"] in {"0", "1"}


@pytest.mark.slow
def test_run_outputs_load_without_linformer_kit(pretrained: Path, finetuned: Path, tmp_path: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(pretrained)
    inputs = dict(tokenizer(["the cat sat on a mat", "a dog"], padding=True, return_tensors="pt"))
    models = {
        "mlm": (pretrained, "AutoModelForMaskedLM", inputs),
        "classifier": (finetuned, "AutoModelForSequenceClassification", inputs),
    }
    got = outputs_without_linformer_kit(tmp_path, models)

    for name, (directory, auto_class, _) in models.items():
        model = getattr(transformers, auto_class).from_pretrained(directory).eval()
        with torch.no_grad():
            assert torch.equal(got[name], model(**inputs).logits), name
