"""The directory a run leaves behind is ready to publish: it loads, truncates, and holds no pickle or local path."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
import transformers
from torch.testing import assert_close
from transformers import AutoTokenizer, pipeline

from linformer_kit.train import FinetuneConfig, PretrainConfig, finetune, pretrain
from linformer_kit.train.publish import portable
from tests.exported import exported, onnx_runner
from tests.models.isolated import TEXT, outputs_without_linformer_kit

LONG_TEXT = " ".join(["the cat sat on a mat while one dog ran far away"] * 30)  # ~360 tokens, the limit is 32


@pytest.fixture(scope="module")
def pretrained(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 2-step tiny pretraining run with a checkpoint, its paths given absolute."""
    torch.set_num_threads(1)
    out = tmp_path_factory.mktemp("published") / "mlm"
    pretrain(PretrainConfig(
        train=[str(corpus / "train.txt")], validation=[str(corpus / "valid.txt")], output_dir=str(out),
        preset="tiny", seq_len=32, projected_length=8, per_device_train_batch_size=4, max_eval_blocks=8,
        max_steps=2, save_steps=2, disable_tqdm=True,
    ))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def finetuned(pretrained: Path, sentiment_csv: Path) -> Path:
    torch.set_num_threads(1)
    out = pretrained.parent / "clf"
    finetune(FinetuneConfig(
        model=str(pretrained), train=str(sentiment_csv / "train.csv"), validation=str(sentiment_csv / "dev.csv"),
        output_dir=str(out), max_steps=2, per_device_train_batch_size=8, disable_tqdm=True,
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
        # the tokenizer loads there too (with trust_remote_code, as the model) and gives the same ids
        assert got[f"{name}.tokens"].tolist() == AutoTokenizer.from_pretrained(directory)(TEXT)["input_ids"]


@pytest.mark.slow
def test_run_outputs_export_with_a_dynamic_length(pretrained: Path, finetuned: Path, tmp_path: Path) -> None:
    # what pretrain and finetune write (short_inputs="exact", k = 8, longest input 32) goes through
    # torch.export and ONNX Runtime with one graph for every length, n <= k and n > k alike
    tokenizer = AutoTokenizer.from_pretrained(pretrained)
    example = dict(
        tokenizer(["the cat sat on a mat while one dog", "a dog"], padding=True, return_tensors="pt")
    )
    texts = {  # padded length: below k, k + 1 (one row short), the longest input
        4: ["the cat sat", "a"],
        9: ["the cat sat on a mat while one dog", "a dog ran"],
        32: [LONG_TEXT, "the big red house"],
    }
    for directory, auto_class in (
        (pretrained, "AutoModelForMaskedLM"),
        (finetuned, "AutoModelForSequenceClassification"),
    ):
        model = getattr(transformers, auto_class).from_pretrained(directory).eval()
        assert model.config.short_inputs == "exact"
        graph = exported(model, example, model.config.max_seq_len)
        run = onnx_runner(model, example, model.config.max_seq_len, tmp_path / f"{directory.name}.onnx")
        for n, batch in texts.items():
            inputs = dict(
                tokenizer(batch, padding="max_length", truncation=True, max_length=n, return_tensors="pt")
            )
            assert inputs["attention_mask"][1].sum() < n  # padded
            with torch.no_grad():
                logits = model(**inputs).logits
                assert_close(graph(**inputs).logits, logits)
                assert_close(run(**inputs)[0], logits)


@pytest.mark.slow
def test_final_directories_hold_no_pickle_but_checkpoints_stay_resumable(
    pretrained: Path, finetuned: Path
) -> None:
    for directory in (pretrained, finetuned):
        files = {path.name for path in directory.iterdir() if path.is_file()}
        assert {
            "model.safetensors",
            "config.json",
            "metrics.json",
            "README.md",
            "modeling_linformer.py",
        } <= files
        assert not [name for name in files if name.endswith((".bin", ".pt", ".pth", ".pkl"))], files
    for weights in [*pretrained.glob("**/model.safetensors"), *finetuned.glob("**/model.safetensors")]:
        config_mode = (weights.parent / "config.json").stat().st_mode
        assert weights.stat().st_mode == config_mode, weights  # not safetensors' -rw-------
    # what Trainer reads to resume stays in the checkpoint (resume is tested in test_pretrain.py)
    assert (pretrained / "checkpoint-2" / "training_args.bin").is_file()
    assert (pretrained / "checkpoint-2" / "optimizer.pt").is_file()


def _strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [value] if isinstance(value, str) else []


@pytest.mark.slow
def test_metrics_and_card_hold_no_absolute_path(pretrained: Path, finetuned: Path, corpus: Path) -> None:
    for directory in (pretrained, finetuned):
        metrics = json.loads((directory / "metrics.json").read_text())
        strings = _strings(metrics)
        assert not [s for s in strings if os.path.isabs(s)], strings
        card = (directory / "README.md").read_text()
        for local in (str(directory.parent), str(corpus), os.getcwd()):
            assert local not in card
            assert local not in json.dumps(metrics)
    assert json.loads((pretrained / "metrics.json").read_text())["config"]["train"] == ["train.txt"]


@pytest.mark.slow
def test_model_cards_say_what_how_on_what_and_how_to_load(pretrained: Path, finetuned: Path) -> None:
    metrics = json.loads((pretrained / "metrics.json").read_text())
    card = (pretrained / "README.md").read_text()
    assert card.startswith("---\nlibrary_name: transformers\npipeline_tag: fill-mask\n")
    assert "k = 8 projected keys" in card
    assert "`train.txt`" in card  # on what
    assert "| optimizer steps | 2 |" in card  # how
    assert f"| validation perplexity | {metrics['perplexity']:.4g} |" in card  # results
    assert "AutoModelForMaskedLM.from_pretrained(path, trust_remote_code=True)" in card  # how to load

    card = (finetuned / "README.md").read_text()
    assert "pipeline_tag: text-classification" in card
    assert "validation accuracy" in card
    assert "| started from | `mlm` |" in card
    assert "AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)" in card


def test_portable_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = {"train": ["data/a.txt", str(tmp_path / "data" / "b.txt"), "/elsewhere/c.txt"], "hub": "glue:sst2",
              "callbacks": [object()], "k": [8, None]}  # fmt: skip
    assert portable(config) == {
        "train": ["data/a.txt", "data/b.txt", "c.txt"],  # as given / under the working directory / elsewhere
        "hub": "glue:sst2",
        "callbacks": ["object"],
        "k": [8, None],
    }


@pytest.mark.slow
@pytest.mark.parametrize("run", ["pretrained", "finetuned"])
def test_the_cards_load_snippet_runs_in_a_clean_interpreter_without_prompts(run: str, request) -> None:
    import re
    import subprocess
    import sys

    folder = request.getfixturevalue(run)
    card = (folder / "README.md").read_text()
    snippet = re.search(r"```python\n(.*?)```", card, re.S).group(1)
    snippet = snippet.replace('"path/to/this/directory"', repr(str(folder)))
    done = subprocess.run([sys.executable, "-c", snippet + "\nprint(type(model).__name__)"], cwd=folder,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("MaskedLM" if run == "pretrained" else "SequenceClassification")
    assert "Sharing this directory" in card
    assert "arXiv:2006.04768" in card
