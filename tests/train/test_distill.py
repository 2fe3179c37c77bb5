"""`linformer distill` on a tiny random BERT teacher (nothing downloaded)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch.testing import assert_close

from linformer_kit.cli.main import main
from linformer_kit.models.convert import is_projection_key
from linformer_kit.train.distill import DistillConfig, DistillTrainer, distill
from tests.fixtures.models import tiny_source
from tests.fixtures.tokenizers import write_tokenizer

WORDS = ["hello", "world"]


@pytest.fixture
def teacher(tmp_path: Path) -> Path:
    folder = tmp_path / "teacher"
    model = tiny_source("bert", "Model")
    with torch.no_grad():  # sharp attention (a random init's is near uniform: rank 1, any k holds it)
        for layer in model.encoder.layer:
            layer.attention.self.query.weight.mul_(20)
            layer.attention.self.key.weight.mul_(20)
    model.save_pretrained(folder)
    write_tokenizer(folder)
    return folder


@pytest.fixture
def text(tmp_path: Path) -> Path:
    rng = random.Random(0)
    path = tmp_path / "train.txt"
    path.write_text("\n\n".join(" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(120)) + "\n")
    return path


def _config(teacher: Path, text: Path, out: Path, **overrides) -> DistillConfig:
    values = dict(
        teacher=str(teacher), train=[str(text)], output_dir=str(out), projected_length=8, local_window=2,
        attention_steps=6, end_to_end_steps=0, per_device_train_batch_size=4, logging_steps=1,
        save_steps=3, disable_tqdm=True, seed=0, max_eval_documents=8,
    )  # fmt: skip
    return DistillConfig(**{**values, **overrides})


def test_attention_transfer_trains_only_the_projections_and_its_loss_falls(teacher, text, tmp_path) -> None:
    config = _config(teacher, text, tmp_path / "out", projected_length=2, local_window=None, attention_steps=12,
                     attention_learning_rate=0.01, warmup_steps=0)  # fmt: skip
    result = distill(config)
    before = load_file(teacher / "model.safetensors")
    after = load_file(tmp_path / "out" / "model.safetensors")
    changed = {name for name in after if is_projection_key(name)}
    assert changed, "the student has projections"
    kept = {name: tensor for name, tensor in after.items() if not is_projection_key(name)}
    renamed = {name.removeprefix("bert."): tensor for name, tensor in before.items()}
    for name, tensor in kept.items():  # every other weight is the teacher's, bit for bit
        source = name.removeprefix("linformer.").replace("attention.self.dense", "attention.output.dense")
        if source in renamed:
            assert torch.equal(tensor, renamed[source]), name
    history = _stage_losses(tmp_path / "out" / "attention")
    assert history[-1] < history[0]
    assert set(result.fidelity) == {"drop-in", "attention"}


def _stage_losses(folder: Path) -> list[float]:
    checkpoints = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    state = json.loads((checkpoints[-1] / "trainer_state.json").read_text())
    return [log["loss"] for log in state["log_history"] if "loss" in log]


def test_a_full_attention_student_of_its_own_teacher_stays_equal_to_it(teacher, text, tmp_path) -> None:
    config = _config(teacher, text, tmp_path / "out", projected_length=None, local_window=None,
                     attention_steps=0, end_to_end_steps=3)  # fmt: skip
    result = distill(config)
    assert result.fidelity["end-to-end"] == pytest.approx(1.0, abs=1e-6)
    assert result.stage_losses["end-to-end"] == pytest.approx(0.0, abs=1e-10)


def test_end_to_end_changes_the_student_and_resume_is_exact(teacher, text, tmp_path, monkeypatch) -> None:
    options = dict(attention_steps=0, end_to_end_steps=6, learning_rate=1e-2)
    whole = distill(_config(teacher, text, tmp_path / "whole", **options))
    assert whole.fidelity["end-to-end"] != whole.fidelity["drop-in"]
    # a run cut after its checkpoint at step 3: its final files gone, as a kill would leave it
    distill(_config(teacher, text, tmp_path / "cut", **options))
    cut = tmp_path / "cut"
    shutil.rmtree(cut / "end-to-end" / "checkpoint-6")
    for name in ("model.safetensors", "stage.json", "config.json"):
        (cut / "end-to-end" / name).unlink()
    for path in cut.iterdir():
        if path.is_file():
            path.unlink()
    starts = []
    original = DistillTrainer.train

    def train(self, resume_from_checkpoint=None, **kwargs):
        starts.append(resume_from_checkpoint)
        return original(self, resume_from_checkpoint=resume_from_checkpoint, **kwargs)

    monkeypatch.setattr(DistillTrainer, "train", train)
    distill(_config(teacher, text, cut, resume=True, **options))
    assert starts == [str(cut / "end-to-end" / "checkpoint-3")]  # it resumed, not started again
    want, got = load_file(tmp_path / "whole" / "model.safetensors"), load_file(cut / "model.safetensors")
    for name in want:
        assert_close(got[name], want[name], rtol=0, atol=1e-6)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"projected_length": 64}, r"projected_length \(k=64\) must be between 1 and max_seq_len=32"),
        ({"local_window": [1, 2, 3]}, "local_window has 3 entries, expected one per layer"),
        ({"seq_len": 64}, "seq_len=64 is longer than the teacher's longest input 32"),
        ({"attention_steps": 0, "end_to_end_steps": 0}, "nothing to distil"),
    ],
)
def test_bad_options_are_refused_before_any_work(teacher, text, tmp_path, overrides, message) -> None:
    with pytest.raises(ValueError, match=message):  # values on construction, the teacher's in the preflight
        _config(teacher, text, tmp_path / "out", **overrides).preflight()
    assert not (tmp_path / "out").exists()


def test_a_teacher_convert_cannot_read_is_refused(tmp_path, text) -> None:
    folder = tmp_path / "gpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_positions": 32}))
    save_file({"wte.weight": torch.zeros(2, 2)}, folder / "model.safetensors")
    write_tokenizer(folder)  # a model folder in every other respect: the type is what is refused
    with pytest.raises(ValueError, match=r"teacher: .* is a 'gpt2' model; expected linformer, roberta"):
        _config(folder, text, tmp_path / "out").preflight()


def test_text_shorter_than_a_block_is_refused(teacher, tmp_path) -> None:
    short = tmp_path / "short.txt"
    short.write_text("hello world\n")
    with pytest.raises(ValueError, match="no block of seq_len=32 tokens"):
        distill(_config(teacher, short, tmp_path / "out", validation=[str(short)], examples="blocks"))


def test_cli_prints_the_fidelity_of_each_stage(teacher, text, tmp_path, capsys) -> None:
    args = ["distill", "--teacher", str(teacher), "--train", str(text), "--output-dir", str(tmp_path / "out"),
            "--projected-length", "8", "--local-window", "2", "--attention-steps", "2", "--end-to-end-steps", "0",
            "--disable-tqdm", "true", "--per-device-train-batch-size", "2"]  # fmt: skip
    assert main(args) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert line.startswith("distill done: fidelity")
    assert "drop-in" in line
    assert "attention" in line
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["config"]["local_window"] == 2


def test_resume_refuses_a_finished_stage_run_with_other_options(teacher, text, tmp_path) -> None:
    distill(_config(teacher, text, tmp_path / "out", attention_steps=2))
    for path in (tmp_path / "out").iterdir():  # as a kill after the stage would leave it
        if path.is_file():
            path.unlink()
    with pytest.raises(ValueError, match="finished with other options"):
        distill(_config(teacher, text, tmp_path / "out", attention_steps=2, attention_learning_rate=0.5,
                        resume=True))  # fmt: skip


def test_lora_end_to_end_trains_adapters_and_the_projections(teacher, text, tmp_path) -> None:
    config = _config(teacher, text, tmp_path / "out", attention_steps=0, end_to_end_steps=3, tune="lora",
                     learning_rate=1e-2)  # fmt: skip
    result = distill(config)
    saved = load_file(tmp_path / "out" / "model.safetensors")
    assert not any("lora" in name for name in saved)  # merged into the weights
    drop_in = _config(
        teacher, text, tmp_path / "drop", attention_steps=0, end_to_end_steps=1, learning_rate=1e-12
    )
    plain = load_file(Path(distill(drop_in).output_dir) / "model.safetensors")
    moved = {name for name in saved if is_projection_key(name) and not torch.equal(saved[name], plain[name])}
    assert moved, "E and F train under LoRA"
    assert result.fidelity["end-to-end"] != result.fidelity["drop-in"]
