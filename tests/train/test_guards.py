"""What a long run survives (train/guards.py): preemption, a non-finite loss, a full disk, a double submit."""

from __future__ import annotations

import errno
import json
import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file
from transformers import TrainerCallback

from linformer_kit.cli.main import main
from linformer_kit.cli.pretrain import summary
from linformer_kit.stopped import DiskFull, NonFiniteLoss, Preempted
from linformer_kit.train import FinetuneConfig, PretrainConfig, pretrain
from linformer_kit.train.guards import GuardedTrainer, tied_copies
from tests.fixtures.weights import assert_same_weights

RUN = dict(preset="tiny", seq_len=32, projected_length=8, per_device_train_batch_size=4, max_steps=8, save_steps=3,
           max_eval_blocks=4, disable_tqdm=True)  # fmt: skip


@pytest.fixture(scope="module")
def straight(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The uninterrupted 8-step run every interrupted one must end equal to."""
    out = tmp_path_factory.mktemp("straight") / "out"
    pretrain(PretrainConfig(train=[str(corpus / "train.txt")], output_dir=str(out), **RUN))
    return out


class At(TrainerCallback):
    """Calls `action(state)` at the start of optimizer step `step` (1-based)."""

    def __init__(self, step: int, action) -> None:
        self.step, self.action = step, action

    def on_step_begin(self, args, state, control, **kwargs):
        if state.global_step + 1 == self.step:
            self.action(state)


@pytest.mark.slow
def test_sigterm_saves_at_the_end_of_the_step_and_resume_is_exact(
    corpus, straight, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    config = dict(train=[str(corpus / "train.txt")], output_dir=str(out), **RUN)
    sigterm = At(5, lambda state: os.kill(os.getpid(), signal.SIGTERM))  # arrives during step 5
    with pytest.raises(Preempted, match=r"SIGTERM received: stopped after step 5 .*checkpoint-5.*--resume"):
        pretrain(PretrainConfig(**config), callbacks=[sigterm])
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-5"]
    assert not (out / "model.safetensors").exists()
    assert not (out / "metrics.json").exists()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone with the run
    warned: list[str] = []
    monkeypatch.setattr(
        transformers.trainer.logger, "warning", lambda message, *a, **k: warned.append(message)
    )
    resumed = pretrain(PretrainConfig(**config, resume=True))
    assert_same_weights(out, straight, atol=1e-6)
    # the tied MLM decoder is saved once, as the word embeddings: its name is not reported missing
    assert not [message for message in warned if "missing keys" in message], warned
    # the Trainer's training loss covers steps 6-8 only, and the run says so
    assert resumed.resumed_from_step == 5
    assert "train loss " in summary(resumed)
    assert "(steps 6-8, resumed at step 5)" in summary(resumed)
    assert "training loss (mean over steps 6-8, after a resume)" in (out / "README.md").read_text()


def test_only_tied_copies_are_dropped_from_the_missing_keys(tiny_model_dir, tmp_path, monkeypatch) -> None:
    model = transformers.AutoModelForMaskedLM.from_pretrained(tiny_model_dir)
    trainer = GuardedTrainer(model=model, args=transformers.TrainingArguments(str(tmp_path), report_to=[]))
    warned: list[str] = []
    monkeypatch.setattr(
        transformers.trainer.logger, "warning", lambda message, *a, **k: warned.append(message)
    )
    saved = {
        key: value for key, value in model.state_dict().items() if not key.startswith("lm_head.decoder.")
    }
    trainer._issue_warnings_after_load(model.load_state_dict(saved, strict=False))
    assert warned == []  # the decoder is the word embeddings (and lm_head.bias): loaded through them

    del saved["lm_head.dense.weight"]  # really missing: still reported
    trainer._issue_warnings_after_load(model.load_state_dict(saved, strict=False))
    (message,) = warned
    assert "lm_head.dense.weight" in message
    assert "decoder" not in message
    assert (
        tied_copies(model, ["lm_head.decoder.weight", "linformer.embeddings.word_embeddings.weight"]) == set()
    )


@pytest.mark.slow
def test_non_finite_loss_stops_before_the_update_and_leaves_the_last_checkpoint(corpus, tmp_path) -> None:
    out = tmp_path / "out"

    grabbed = {}

    class Grab(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            grabbed["model"] = model

    def poison(state) -> None:  # what a blow-up looks like to the loss: a NaN in a weight the loss reads
        with torch.no_grad():
            grabbed["model"].lm_head.bias.fill_(math.nan)

    checkpoint_before = None

    class Remember(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            nonlocal checkpoint_before
            if state.global_step == 4:
                checkpoint_before = (out / "checkpoint-3" / "model.safetensors").read_bytes()

    with pytest.raises(
        NonFiniteLoss, match=r"loss of step 5 is nan \(learning rate [\d.e-]+\).*--resume from .*checkpoint-3"
    ):
        pretrain(PretrainConfig(train=[str(corpus / "train.txt")], output_dir=str(out), **RUN),
                 callbacks=[Grab(), Remember(), At(5, poison)])  # fmt: skip
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-3"]
    assert (out / "checkpoint-3" / "model.safetensors").read_bytes() == checkpoint_before
    assert all(
        torch.isfinite(t).all() for t in load_file(out / "checkpoint-3" / "model.safetensors").values()
    )
    assert NonFiniteLoss.exit_status == 65


@pytest.mark.slow
def test_a_full_disk_is_named_and_the_previous_checkpoint_resumes(
    corpus, straight, tmp_path, monkeypatch
) -> None:
    out = tmp_path / "out"
    config = dict(train=[str(corpus / "train.txt")], output_dir=str(out), **RUN)
    real_save = transformers.modeling_utils.safe_save_file

    def full_at_checkpoint_6(tensors, filename, *args, **kwargs):
        if "checkpoint-6" in str(filename):
            Path(filename).write_bytes(b"\0" * 64)  # a few bytes made it before the disk filled
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(tensors, filename, *args, **kwargs)

    monkeypatch.setattr(transformers.modeling_utils, "safe_save_file", full_at_checkpoint_6)
    with pytest.raises(
        DiskFull, match=rf"no space left on the device of '{out}'.*checkpoint-3 is complete.*--resume"
    ):
        pretrain(PretrainConfig(**config))
    monkeypatch.undo()
    pretrain(PretrainConfig(**config, resume=True))  # the cut-off checkpoint-6 is skipped
    assert_same_weights(out, straight, atol=1e-6)


def _argv(corpus: Path, out: Path, *extra: str) -> list[str]:
    return ["pretrain", "--train", str(corpus / "train.txt"), "--output-dir", str(out), "--preset", "tiny",
            "--seq-len", "32", "--projected-length", "8", "--batch-size", "4", "--max-eval-blocks", "4",
            "--no-progress", *extra]  # fmt: skip


@pytest.mark.slow
def test_double_submit_is_refused_and_a_real_sigterm_exits_75_with_a_checkpoint(
    corpus, tmp_path, capsys
) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = _argv(corpus, out, "--max-steps", "100000", "--save-steps", "100000", "--logging-steps", "1")
    first = subprocess.Popen([sys.executable, "-m", "linformer_kit.cli.main", *argv], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.time() + 120
        while not (out / "log_history.jsonl").is_file() or not (out / "log_history.jsonl").read_text():
            if first.poll() is not None or time.time() > deadline:
                pytest.fail(f"the first run never logged: {first.communicate()[1][-2000:]}")
            time.sleep(0.2)
        owner = json.loads((out / ".lock").read_text())
        assert (owner["pid"], owner["host"]) == (first.pid, socket.gethostname())

        code = main(_argv(corpus, out, "--max-steps", "4"))  # a second run into the same directory
        assert code == 2
        assert f"in use by another run (pid {first.pid}" in capsys.readouterr().err

        first.send_signal(signal.SIGTERM)
        _, stderr = first.communicate(timeout=120)
    finally:
        first.kill()
    assert first.returncode == 75, stderr[-2000:]
    assert "SIGTERM received" in stderr
    checkpoints = list(out.glob("checkpoint-*"))
    assert len(checkpoints) == 1
    assert (checkpoints[0] / "trainer_state.json").is_file()
    assert not (out / ".lock").exists()  # released on the way out


def test_a_lock_left_by_a_killed_run_is_taken_over(corpus, tmp_path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (out / ".lock").write_text(json.dumps({"host": socket.gethostname(), "pid": dead.pid, "since": "then"}))
    result = pretrain(PretrainConfig(train=[str(corpus / "train.txt")], output_dir=str(out),
                                     **{**RUN, "max_steps": 1, "save_steps": 10}))  # fmt: skip
    assert result.steps == 1
    assert not (out / ".lock").exists()


def test_finetune_names_the_truncated_weights_file(tiny_model_dir, sentiment_csv, tmp_path) -> None:
    import shutil

    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    os.truncate(model / "model.safetensors", 700)
    with pytest.raises(
        ValueError, match=rf"'{model / 'model.safetensors'}' \(truncated or corrupt\?\): it is truncated"
    ):
        FinetuneConfig(model=str(model), train=str(sentiment_csv / "train.csv"),
                       validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path / "out")).preflight()  # fmt: skip


@pytest.mark.slow
def test_resume_of_a_finished_run_changes_nothing(corpus, straight, tmp_path) -> None:
    import shutil

    out = Path(shutil.copytree(straight, tmp_path / "out"))
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.warns(UserWarning, match=r"holds a finished run \(8 steps.*nothing to do"):
        result = pretrain(
            PretrainConfig(train=[str(corpus / "train.txt")], output_dir=str(out), **RUN, resume=True)
        )
    assert result.steps == 8
    assert result.perplexity == json.loads((straight / "metrics.json").read_text())["perplexity"]
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
