"""Sequence-length schedule (train/schedule.py): short blocks first, cut from full-length batches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from linformer_kit.train import PretrainConfig, pretrain
from linformer_kit.train.curve import read_curve
from linformer_kit.train.schedule import check_schedule, cut_blocks, length_at, parse_schedule
from tests.fixtures.weights import assert_same_weights
from tests.train.test_pretrain import CrashAfter


def test_text_forms() -> None:
    assert parse_schedule("128:0.5,512:0.5", 512) == [(128, 0.5), (512, 0.5)]
    assert parse_schedule("auto", 512) == [(128, 0.5), (512, 0.5)]
    assert parse_schedule("auto", 128) == [(128, 1.0)]  # 128/4 < 64: already short
    assert parse_schedule("none", 512) == [(512, 1.0)]


@pytest.mark.parametrize(
    ("phases", "message"),
    [
        ([(128, 0.5), (512, 0.4)], r"fractions \[0.5, 0.4\] sum to 0.9, not 1"),
        ([(512, 0.5), (128, 0.5)], "last phase has length 128, but it must end at seq_len=512"),
        ([(100, 0.5), (512, 0.5)], "length 100 must divide seq_len=512"),
        ([(1024, 0.5), (512, 0.5)], "length 1024 must be an int between 8 and seq_len=512"),
        ([(128, 0.0), (512, 1.0)], r"fraction 0.0 of length 128 must be in \(0, 1\]"),
        ([], "no phase"),
    ],
)
def test_bad_schedules_are_named(phases, message) -> None:
    with pytest.raises(ValueError, match=message):
        check_schedule(phases, 512)


def test_bad_text_is_named() -> None:
    with pytest.raises(ValueError, match=r"LENGTH:FRACTION pairs.*got '128-0\.5'"):
        parse_schedule("128-0.5", 512)


def test_phase_boundaries_follow_the_fractions() -> None:
    phases = [(128, 0.5), (512, 0.5)]
    assert [length_at(phases, step, 10) for step in range(11)] == [128] * 5 + [512] * 6
    assert length_at(phases, 0, 0) == 512  # no training step: evaluation at the full length


def test_cut_blocks_keeps_every_token_in_order() -> None:
    batch = {"input_ids": torch.arange(16).view(2, 8), "labels": torch.arange(16).view(2, 8) + 100, "n": 3}
    cut = cut_blocks(batch, 4)
    assert cut["input_ids"].tolist() == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert torch.equal(cut["labels"], cut["input_ids"] + 100)
    assert cut["n"] == 3


def test_pretrain_config_reads_every_form(tmp_path: Path, corpus: Path) -> None:
    common = dict(
        output_dir=str(tmp_path / "out"), train=[str(corpus / "train.txt")], seq_len=32, projected_length=8
    )
    assert PretrainConfig(**common).seq_len_schedule == [[32, 1.0]]  # auto: 32/4 is already short
    words = PretrainConfig(**common, seq_len_schedule=["16:0.25", "32:0.75"]).seq_len_schedule
    assert words == PretrainConfig(**common, seq_len_schedule="16:0.25,32:0.75").seq_len_schedule
    assert words == PretrainConfig(**common, seq_len_schedule=[[16, 0.25], [32, 0.75]]).seq_len_schedule
    with pytest.raises(ValueError, match="must end at seq_len=32"):
        PretrainConfig(**common, seq_len_schedule="16:1")


@pytest.mark.slow
def test_schedule_trains_short_blocks_first_and_resumes_exactly_in_phase_two(
    corpus: Path, tmp_path: Path
) -> None:
    common = dict(train=[str(corpus / "train.txt")], preset="tiny", seq_len=32, projected_length=8,
                  per_device_train_batch_size=4, max_steps=8, save_steps=3, max_eval_blocks=4, logging_steps=1,
                  disable_tqdm=True, seq_len_schedule="16:0.5,32:0.5")  # fmt: skip
    straight = pretrain(PretrainConfig(output_dir=str(tmp_path / "straight"), **common))
    history = json.loads((Path(straight.output_dir) / "metrics.json").read_text())["log_history"]
    lengths = [entry["seq_len"] for entry in history if "loss" in entry]  # logged after each step
    assert lengths == [16, 16, 16, 16, 32, 32, 32, 32]  # the first half of the 8 steps at 16

    constant = pretrain(
        PretrainConfig(output_dir=str(tmp_path / "constant"), **{**common, "seq_len_schedule": "none"})
    )
    scheduled, unscheduled = (
        load_file(Path(r.output_dir) / "model.safetensors") for r in (straight, constant)
    )
    assert not torch.equal(scheduled["lm_head.dense.weight"], unscheduled["lm_head.dense.weight"])

    killed = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt, match="simulated kill"):
        pretrain(PretrainConfig(output_dir=killed, **common), callbacks=[CrashAfter(7)])
    assert sorted(p.name for p in Path(killed).glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-6"]
    resumed = pretrain(PretrainConfig(output_dir=killed, resume=True, **common))  # from step 6, in phase 2

    assert_same_weights(Path(resumed.output_dir), Path(straight.output_dir), atol=1e-6)
    assert resumed.eval_loss == pytest.approx(straight.eval_loss, abs=1e-5)
    # the curve on disk (written as it grows) holds each step once: what the killed run logged after
    # its checkpoint was dropped, and the resumed run logged it again
    curve = [e for e in read_curve(killed) if "loss" in e]
    assert [e["step"] for e in curve] == list(range(1, 9))
    assert [e["seq_len"] for e in curve] == lengths


@pytest.mark.slow
def test_a_finished_run_extended_by_resume_is_the_longer_run(corpus: Path, tmp_path: Path) -> None:
    # recipes/reproduction/cpu-paper.yaml continues cpu-paper-7500's runs this way: the same switch step
    # (4 = 0.8 x 5 = 0.5 x 8) and a constant lr, so the longer recipe's first steps are the shorter one's
    common = dict(train=[str(corpus / "train.txt")], preset="tiny", seq_len=32, projected_length=8,
                  per_device_train_batch_size=4, max_eval_blocks=4, logging_steps=1, disable_tqdm=True,
                  lr_scheduler_type="constant_with_warmup", warmup_steps=2)  # fmt: skip
    longer = dict(common, max_steps=8, seq_len_schedule="16:0.5,32:0.5")
    straight = pretrain(PretrainConfig(output_dir=str(tmp_path / "straight"), **longer))
    extended = str(tmp_path / "extended")
    pretrain(PretrainConfig(output_dir=extended, max_steps=5, seq_len_schedule="16:0.8,32:0.2", save_steps=5,
                            **common))  # fmt: skip
    (Path(extended) / "metrics.json").unlink()  # finished: only its checkpoint is carried on
    resumed = pretrain(PretrainConfig(output_dir=extended, resume=True, **longer))

    assert resumed.resumed_from_step == 5
    assert_same_weights(Path(resumed.output_dir), Path(straight.output_dir), atol=1e-6)
    assert [e["seq_len"] for e in read_curve(extended) if "loss" in e] == [16] * 4 + [32] * 4


@pytest.mark.slow
@pytest.mark.parametrize(("positions", "highest"), [("restart", 1 + 16), ("keep", 1 + 32)])
def test_short_blocks_restart_or_keep_their_positions(
    corpus: Path, tmp_path: Path, positions, highest
) -> None:
    from transformers import TrainerCallback

    seen: list[int] = []

    class Watch(TrainerCallback):  # the position ids the embedding looks up during the first (short) phase
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            def hook(module, inputs):
                if not seen:
                    seen.append(int(inputs[0].max()))

            model.linformer.embeddings.position_embeddings.register_forward_pre_hook(hook)

    pretrain(PretrainConfig(output_dir=str(tmp_path / "out"), train=[str(corpus / "train.txt")], preset="tiny",
                            seq_len=32, projected_length=8, per_device_train_batch_size=4, max_steps=2,
                            max_eval_blocks=4, disable_tqdm=True, seq_len_schedule="16:0.5,32:0.5",
                            short_block_positions=positions), callbacks=[Watch()])  # fmt: skip
    assert seen == [highest]  # RoBERTa numbering: positions pad+1 .. pad+L (restart) or .. pad+n (keep)


def test_short_inputs_exact_reaches_the_new_model(tmp_path: Path, corpus: Path) -> None:
    # with a length schedule, the phases of at most k tokens then train exact attention
    common = dict(
        output_dir=str(tmp_path / "out"), train=[str(corpus / "train.txt")], seq_len=32, projected_length=16
    )
    assert PretrainConfig(**common).model_config().short_inputs == "exact"  # pretrain's default
    assert (
        PretrainConfig(**common, short_inputs="project").model_config().short_inputs == "project"
    )  # the paper's
    with pytest.raises(ValueError, match="short_inputs must be one of"):
        PretrainConfig(**common, short_inputs="never").model_config()
