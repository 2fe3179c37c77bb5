"""Branching a run from a trunk's checkpoint (reproduction/branch.py) ends where training from step 0 ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linformer_kit.reproduction.branch import _moved_optimizer, branched_from, exact_steps, start_branch
from linformer_kit.train import PretrainConfig, pretrain
from tests.fixtures.weights import assert_same_weights

# 8 steps: 4 at 16-token blocks (attended exactly by k = 16), then 4 at n = 32 (projected)
COMMON = dict(preset="tiny", seq_len=32, seq_len_schedule="16:0.5,32:0.5", per_device_train_batch_size=4,
              max_steps=8, save_steps=2, save_total_limit=1, max_eval_blocks=4, learning_rate=2e-3,
              disable_tqdm=True)  # fmt: skip


def config(corpus: Path, out: Path, **options) -> PretrainConfig:
    return PretrainConfig(output_dir=str(out), train=[str(corpus / "train.txt")], **{**COMMON, **options})


def branch(corpus: Path, out: Path, kept: Path, **options):
    """What the study does: write the branch's start from the trunk's `kept`, then resume `pretrain` from it
    (`linformer pretrain ... --resume true`)."""
    run = config(corpus, out, resume=True, **options)
    start_branch(run, kept)
    return pretrain(run)


def losses(result) -> list[float]:
    history = json.loads((Path(result.output_dir) / "metrics.json").read_text())["log_history"]
    return [entry["loss"] for entry in history if "loss" in entry]


@pytest.mark.slow
@pytest.mark.parametrize("sharing", ["headwise", "kv", "layerwise"])
def test_a_branch_from_the_full_attention_trunk_equals_the_run_from_step_0(
    corpus: Path, tmp_path: Path, sharing: str
) -> None:
    trunk = pretrain(config(corpus, tmp_path / "full", projected_length=None, keep_checkpoint=4))
    kept = Path(trunk.output_dir) / "trunk-4"
    assert sorted(p.name for p in Path(trunk.output_dir).glob("checkpoint-*")) == ["checkpoint-8"]  # rotated
    assert json.loads((kept / "trainer_state.json").read_text())["global_step"] == 4

    straight = pretrain(config(corpus, tmp_path / "straight", projected_length=16, sharing=sharing))
    branched = branch(corpus, tmp_path / "branch", kept, projected_length=16, sharing=sharing)

    assert branched.steps == straight.steps == 8
    assert branched.resumed_from_step == 4  # the Trainer resumed the written checkpoint-4
    assert branched_from(branched.output_dir) == {"trunk": "full", "checkpoint": "trunk-4", "step": 4}
    assert_same_weights(Path(branched.output_dir), Path(straight.output_dir))
    assert branched.eval_loss == straight.eval_loss
    assert losses(branched) == losses(straight)  # the trunk's half of the curve too


@pytest.mark.slow
def test_a_linformer_trunk_branches_full_attention_and_per_layer_k(corpus: Path, tmp_path: Path) -> None:
    """The other direction (Figure 3d's runs): the trunk has E, F (never stepped), the branch drops
    them (full attention) or keeps layer 1 exact; each ends where its run from step 0 ends."""
    trunk = pretrain(config(corpus, tmp_path / "k16", projected_length=16, keep_checkpoint=4))
    kept = Path(trunk.output_dir) / "trunk-4"
    for name, k in (("full", None), ("per-layer", [32, 16])):
        straight = pretrain(config(corpus, tmp_path / f"{name}-straight", projected_length=k))
        branched = branch(corpus, tmp_path / name, kept, projected_length=k)
        assert branched_from(branched.output_dir) == {"trunk": "k16", "checkpoint": "trunk-4", "step": 4}
        assert branched.resumed_from_step == 4  # started at the trunk's step, not from step 0
        assert_same_weights(Path(branched.output_dir), Path(straight.output_dir))
        assert losses(branched) == losses(straight)


def test_exact_steps_end_at_the_first_phase_longer_than_the_smallest_k() -> None:
    schedule = [(128, 0.75), (512, 0.25)]
    exact = {"projected_length": 128, "short_inputs": "exact", "num_hidden_layers": 2}
    assert exact_steps(exact, schedule, 12000) == 9000
    assert exact_steps({**exact, "projected_length": [512, 128]}, schedule, 12000) == 9000
    assert exact_steps({**exact, "projected_length": 64}, schedule, 12000) == 0  # n = 128 > k from step 1
    assert exact_steps({**exact, "short_inputs": "project"}, schedule, 12000) == 0  # E, F used at every n
    assert exact_steps({**exact, "projected_length": None}, schedule, 12000) == 12000


def test_the_optimizer_state_moves_by_name_and_new_weights_start_without() -> None:
    state = {"state": {0: {"step": 1}, 1: {"step": 2}, 2: {"step": 3}},
             "param_groups": [{"lr": 1, "params": [0, 1]}, {"lr": 2, "params": [2]}]}  # fmt: skip
    moved = _moved_optimizer(state, [["a", "b"], ["c"]], [["a", "E", "b"], ["c"]])
    assert moved["param_groups"] == [{"lr": 1, "params": [0, 1, 2]}, {"lr": 2, "params": [3]}]
    assert moved["state"] == {0: {"step": 1}, 2: {"step": 2}, 3: {"step": 3}}  # E (index 1): none


def test_a_branch_past_the_exact_phase_is_refused_before_any_work(corpus: Path, tmp_path: Path) -> None:
    pretrain(config(corpus, tmp_path / "full", projected_length=None, max_steps=6, save_steps=6,
                    seq_len_schedule="16:0.5,32:0.5", keep_checkpoint=6))  # fmt: skip
    kept = tmp_path / "full" / "trunk-6"
    with pytest.raises(
        ValueError, match=r"step 6, but this run attends every block exactly only in its first 3"
    ):
        start_branch(config(corpus, tmp_path / "late", projected_length=16, max_steps=6), kept)
    with pytest.raises(ValueError, match=r"max_steps=8 differs from the trunk's 6"):
        start_branch(config(corpus, tmp_path / "longer", projected_length=16), kept)
    with pytest.raises(ValueError, match=r"hidden_size=128 differs from the trunk's 64"):
        start_branch(
            config(corpus, tmp_path / "wider", preset="mini", projected_length=32, max_steps=6), kept
        )
    assert not (tmp_path / "late").exists()


def test_keep_checkpoint_must_be_a_saved_step(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"keep_checkpoint=3 is never saved: it must be a multiple of save_steps=2"
    ):
        config(corpus, tmp_path / "out", projected_length=None, keep_checkpoint=3)
    with pytest.raises(ValueError, match=r"keep_checkpoint=10 is never saved"):
        config(corpus, tmp_path / "out", projected_length=None, keep_checkpoint=10)
