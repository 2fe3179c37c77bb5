"""`linformer finetune` on a tiny CSV whose label is one word: accuracy well above chance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from linformer_kit.cli.main import main
from linformer_kit.models import LinformerConfig, LinformerForMaskedLM, LinformerForSequenceClassification


@pytest.mark.slow
def test_finetune_learns_a_one_word_rule(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys, transformers_log
) -> None:
    out = tmp_path / "clf"
    code = main(["finetune", "--model", str(tiny_model_dir), "--train", str(sentiment_csv / "train.csv"),
                 "--validation", str(sentiment_csv / "dev.csv"), "--output-dir", str(out), "--max-steps", "60",
                 "--batch-size", "16", "--learning-rate", "3e-3", "--no-progress"])  # fmt: skip
    assert code == 0
    captured = capsys.readouterr()
    summary = captured.out.strip().splitlines()[-1]
    # transformers' load report (a table in terminal escape codes) gives way to one line of ours
    assert "LOAD REPORT" not in captured.out + captured.err
    assert not [line for line in transformers_log if "LOAD REPORT" in line]  # capsys cannot see its logger
    assert "\x1b[" not in captured.out + captured.err
    assert "new task head (4 tensors, trained from scratch: classifier." in captured.out
    assert "dev accuracy" in summary
    assert "F1" in summary
    assert str(out) in summary

    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.85, metrics  # chance is ~0.5
    assert metrics["f1"] >= 0.8
    assert metrics["num_labels"] == 2
    assert metrics["eval_examples"] == 48
    model = AutoModelForSequenceClassification.from_pretrained(out)
    assert isinstance(model, LinformerForSequenceClassification)
    assert model.config.id2label == {0: "0", 1: "1"}
    assert model.config.short_inputs == "exact"  # finetuning's default, saved with the classifier


@pytest.mark.slow
def test_finetune_sentence_pairs_from_jsonl(tiny_model_dir: Path, tmp_path: Path) -> None:
    """QNLI/QQP-style pairs with string labels: label 'same' iff both sentences share their first word."""
    from linformer_kit.train import FinetuneConfig, finetune

    rows = [{"a": f"{w} cat sat", "b": f"{v} dog ran", "y": "same" if w == v else "different"}
            for w in ("red", "big", "small", "one") for v in ("red", "big", "small", "one")] * 4  # fmt: skip
    for split in ("train", "dev"):
        (tmp_path / f"{split}.jsonl").write_text("\n".join(json.dumps(row) for row in rows))
    result = finetune(FinetuneConfig(
        model=str(tiny_model_dir), train=str(tmp_path / "train.jsonl"), validation=str(tmp_path / "dev.jsonl"),
        output_dir=str(tmp_path / "pairs"), text_column="a", text_pair_column="b", label_column="y",
        max_steps=2, per_device_train_batch_size=8, disable_tqdm=True, short_inputs="project",
    ))  # fmt: skip
    assert result.num_labels == 2
    assert result.eval_examples == 64
    saved = json.loads((tmp_path / "pairs" / "config.json").read_text())
    assert set(saved["label2id"]) == {"different", "same"}
    assert saved["short_inputs"] == "project"
    # the metrics are the saved classifier's on the dev rows, each read as a pair (both sentences): the
    # written predictions and the accuracy equal a recomputation, one row at a time
    model = AutoModelForSequenceClassification.from_pretrained(tmp_path / "pairs").eval()
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "pairs")
    pairs = [tokenizer(row["a"], row["b"], return_tensors="pt") for row in rows]
    with torch.no_grad():
        guesses = [int(model(**pair).logits.argmax(-1)) for pair in pairs]
    labels = [saved["label2id"][row["y"]] for row in rows]
    written = [
        json.loads(line) for line in (tmp_path / "pairs" / "eval_predictions.jsonl").read_text().splitlines()
    ]
    assert [w["tokens"] for w in written] == [pair["input_ids"].shape[-1] for pair in pairs]
    assert [(w["label"], w["predicted"]) for w in written] == list(zip(labels, guesses))
    assert result.accuracy == pytest.approx(sum(g == y for g, y in zip(guesses, labels)) / len(rows))


def test_tune_classifier_trains_the_head_on_a_frozen_encoder(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, caplog
) -> None:
    """`tune="classifier"` (a probe): the saved encoder equals the pretrained one, the head has moved."""
    from safetensors.torch import load_file
    from transformers import TrainerCallback

    from linformer_kit.train import FinetuneConfig, finetune

    class HeadAtStart(TrainerCallback):  # the new head's weights before the first step
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.head = {f"classifier.{k}": v.clone() for k, v in model.classifier.state_dict().items()}

    start = HeadAtStart()
    out = tmp_path / "probe"
    caplog.set_level("INFO", logger="linformer_kit.train.finetune")
    finetune(FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                            validation=str(sentiment_csv / "dev.csv"), output_dir=str(out), max_steps=3,
                            per_device_train_batch_size=8, max_eval_samples=8, learning_rate=1e-2,
                            tune="classifier", disable_tqdm=True), callbacks=[start])  # fmt: skip
    assert "tune=classifier: training the task head" in caplog.text
    pretrained, probed = load_file(tiny_model_dir / "model.safetensors"), load_file(out / "model.safetensors")
    encoder = [key for key in probed if not key.startswith("classifier.")]
    assert len(encoder) > 10
    for key in encoder:
        torch.testing.assert_close(probed[key], pretrained[key], rtol=0, atol=0, msg=key)
    head = [key for key in probed if key.startswith("classifier.")]
    assert sorted(head) == sorted(start.head)
    assert any(not torch.equal(probed[k], start.head[k]) for k in head)  # three steps at lr 1e-2 move it


def test_tune_must_be_a_known_choice(tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path) -> None:
    from linformer_kit.train import FinetuneConfig

    with pytest.raises(
        ValueError, match=r"tune must be one of \('all', 'classifier', 'all-but-projections'\), got 'encoder'"
    ):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path / "x"),
                       tune="encoder")  # fmt: skip


def test_tune_all_but_projections_keeps_e_and_f(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    """E and F are saved as loaded, every other encoder weight trains; a model without E, F is refused."""
    from safetensors.torch import load_file

    from linformer_kit.train import FinetuneConfig, finetune

    def run(model: Path, out: str) -> Path:
        finetune(FinetuneConfig(model=str(model), train=str(sentiment_csv / "train.csv"),
                                validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path / out),
                                max_steps=3, per_device_train_batch_size=8, max_eval_samples=8,
                                learning_rate=1e-2, tune="all-but-projections", disable_tqdm=True))  # fmt: skip
        return tmp_path / out / "model.safetensors"

    pretrained, tuned = (
        load_file(tiny_model_dir / "model.safetensors"),
        load_file(run(tiny_model_dir, "tuned")),
    )
    projections = [
        key for key in pretrained if key.endswith(("key_projection.weight", "value_projection.weight"))
    ]
    assert len(projections) == 4  # E and F of both layers
    for key in projections:
        torch.testing.assert_close(tuned[key], pretrained[key], rtol=0, atol=0, msg=key)
    others = [key for key in pretrained if key in tuned and key not in projections]
    queries = [key for key in others if key.endswith("query.weight")]
    assert len(queries) == 2  # both layers': an empty selection would pass the next line
    assert all(not torch.equal(tuned[key], pretrained[key]) for key in queries)

    full = tmp_path / "full"  # the same model with full attention: no E, F
    config = LinformerConfig.from_pretrained(tiny_model_dir)
    config.projected_length = None
    LinformerForMaskedLM(config).save_pretrained(full)
    AutoTokenizer.from_pretrained(tiny_model_dir).save_pretrained(full)
    with pytest.raises(ValueError, match=r"tune='all-but-projections' needs learned projections \(E, F\)"):
        run(full, "refused")
    assert not (tmp_path / "refused" / "model.safetensors").exists()
