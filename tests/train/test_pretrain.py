"""`linformer pretrain` end to end on a few KB of text: loss falls, the output loads, resume is exact."""

from __future__ import annotations

import json
import logging
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForMaskedLM, AutoTokenizer, TrainerCallback

from linformer_kit.cli.main import main
from linformer_kit.models import LinformerForMaskedLM
from linformer_kit.train import PretrainConfig, pretrain
from linformer_kit.train.pretrain import ResumableMaskingCollator
from tests.fixtures.weights import assert_same_weights

TINY = ["--preset", "tiny", "--seq-len", "32", "--batch-size", "4", "--no-progress", "--max-eval-blocks", "8"]


def logged_losses(output_dir: Path) -> list[float]:
    checkpoint = max(output_dir.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    history = json.loads((checkpoint / "trainer_state.json").read_text())["log_history"]
    return [entry["loss"] for entry in history if "loss" in entry]


@pytest.mark.slow
def test_pretrain_end_to_end_loss_falls_and_output_loads(corpus: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "mlm"
    code = main(["pretrain", "--train", str(corpus / "train.txt"), "--validation", str(corpus / "valid.txt"),
                 "--output-dir", str(out), "--projected-length", "8", "--max-steps", "40", "--save-steps", "40",
                 "--logging-steps", "5", "--learning-rate", "2e-3", *TINY])  # fmt: skip
    assert code == 0
    lines = capsys.readouterr().out.strip().splitlines()
    summary = lines[-1]
    start = next(line for line in lines if line.startswith("pretrain: "))  # what will run, before it runs
    parameters = AutoModelForMaskedLM.from_pretrained(out).num_parameters()
    assert f"{parameters / 1e6:.2f} M parameters" in start
    assert "k=8 headwise linear (window start)" in start
    assert "tokens/step" in start
    assert "40 steps" in start
    assert start.endswith("cpu, fp32")
    assert "perplexity" in summary
    assert "no-context floor" in summary
    assert "tokens/s" in summary
    assert str(out) in summary

    losses = logged_losses(out)
    assert losses[-1] < losses[0] - 0.5, losses  # learning, not noise
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] == 40
    assert metrics["perplexity"] == pytest.approx(torch.tensor(metrics["eval_loss"]).exp().item(), rel=1e-5)
    assert metrics["tokens_per_second"] > 0
    # the floor is a distribution over the scorable tokens: above 1, below uniform over the vocabulary
    assert 1 < metrics["no_context_perplexity"] < len(AutoTokenizer.from_pretrained(out))

    assert (out / "model.safetensors").is_file()
    model = AutoModelForMaskedLM.from_pretrained(out)
    assert isinstance(model, LinformerForMaskedLM)
    assert model.config.projected_length == 8
    assert model.config.max_seq_len == 32
    tokenizer = AutoTokenizer.from_pretrained(out)
    batch = tokenizer(["the cat sat on the <mask>"], return_tensors="pt")
    assert model(**batch).logits.shape == (1, batch["input_ids"].shape[1], model.config.vocab_size)


@pytest.mark.parametrize(
    ("k", "said"), [(16, "k=16 headwise"), ([None, 16], "k=none,16 headwise"), ([16, 16], "k=16 headwise")]
)
def test_the_start_line_gives_k_per_layer_as_the_flag_takes_it(corpus: Path, tmp_path: Path, k, said) -> None:
    from linformer_kit.train.pretrain import start_line

    config = PretrainConfig(output_dir=str(tmp_path), train=[str(corpus / "train.txt")], preset="tiny",
                            seq_len=32, projected_length=k)  # fmt: skip
    model = LinformerForMaskedLM(config.model_config(vocab_size=64))
    assert said in start_line(config, model, train_blocks=10, eval_blocks=2)


@pytest.mark.slow
def test_full_attention_baseline_and_conversion(corpus: Path, tmp_path: Path) -> None:
    """projected_length=None trains the quadratic baseline; init_from converts it to k with window E/F."""
    common = dict(train=[str(corpus / "train.txt")], preset="tiny", seq_len=32, per_device_train_batch_size=4,
                  max_eval_blocks=8, disable_tqdm=True)  # fmt: skip
    full = pretrain(
        PretrainConfig(output_dir=str(tmp_path / "full"), projected_length=None, max_steps=4, **common)
    )
    assert AutoModelForMaskedLM.from_pretrained(full.output_dir).config.projected_length is None

    common.pop("preset")  # the converted model keeps the shape of init_from
    converted = pretrain(PretrainConfig(output_dir=str(tmp_path / "k8"), init_from=full.output_dir,
                                        projected_length=8, max_steps=0, **common))  # fmt: skip
    assert converted.reinitialized
    assert all("projection" in name for name in converted.reinitialized)
    source = load_file(Path(full.output_dir) / "model.safetensors")
    target = load_file(Path(converted.output_dir) / "model.safetensors")
    for name, tensor in source.items():  # every shared weight copied unchanged
        torch.testing.assert_close(target[name], tensor)
    assert AutoModelForMaskedLM.from_pretrained(converted.output_dir).config.projected_length == 8


@pytest.mark.parametrize(
    ("new_positions", "line"),
    [("copy", "position p takes the trained row of p mod 32"), ("random", "positions 32-63 start new")],
)
def test_init_from_with_a_longer_seq_len_extends_the_positions(
    new_positions: str, line: str, corpus: Path, tiny_model_dir: Path, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    # tiny_model_dir reads 32 tokens; --seq-len 64 wraps its position table (models/convert.py)
    with caplog.at_level(logging.INFO, logger="linformer_kit"):
        result = pretrain(PretrainConfig(
            output_dir=str(tmp_path / "long"), train=[str(corpus / "train.txt")], init_from=str(tiny_model_dir),
            seq_len=64, projected_length=8, per_device_train_batch_size=2, max_steps=0, max_eval_blocks=2,
            disable_tqdm=True, new_positions=new_positions,
        ))  # fmt: skip
    assert f"positions extended from 32 to 64: {line}" in caplog.text
    table = load_file(Path(result.output_dir) / "model.safetensors")[
        "linformer.embeddings.position_embeddings.weight"
    ]
    trained = load_file(tiny_model_dir / "model.safetensors")[
        "linformer.embeddings.position_embeddings.weight"
    ]
    torch.testing.assert_close(table[: 2 + 32], trained)  # max_steps=0: the converted model as saved
    assert torch.equal(table[2 + 32 :], trained[2:]) == (new_positions == "copy")
    saved = json.loads((Path(result.output_dir) / "config.json").read_text())
    assert saved["max_position_embeddings"] == 64 + 2  # RoBERTa numbering: pad_token_id 1
    assert AutoTokenizer.from_pretrained(result.output_dir).model_max_length == 64


def test_new_positions_needs_a_longer_seq_len(corpus: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    fields = dict(output_dir=str(tmp_path / "out"), train=[str(corpus / "train.txt")], new_positions="random")
    with pytest.raises(
        ValueError, match=r"new_positions='random' starts the positions .* nothing is extended"
    ):
        PretrainConfig(**fields, init_from=str(tiny_model_dir), seq_len=32, projected_length=8).preflight()
    with pytest.raises(ValueError, match=r"new_positions='random' .* nothing is extended"):
        PretrainConfig(**fields, preset="tiny", seq_len=32, projected_length=8)
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_projection_init_window_is_the_default_and_random_is_the_papers(corpus: Path, tmp_path: Path) -> None:
    common = dict(train=[str(corpus / "train.txt")], preset="tiny", seq_len=32, projected_length=8,
                  max_eval_blocks=4, max_steps=0, disable_tqdm=True)  # fmt: skip
    window = pretrain(PretrainConfig(output_dir=str(tmp_path / "window"), **common))
    random = pretrain(PretrainConfig(output_dir=str(tmp_path / "random"), projection_init="random", **common))
    windows = load_file(Path(window.output_dir) / "model.safetensors")
    gaussian = load_file(Path(random.output_dir) / "model.safetensors")
    slot_of = torch.arange(32) * 8 // 32  # position t -> slot t // 4: E[j, t] = 1/4 on its window
    expected = (slot_of[None, :] == torch.arange(8)[:, None]).float() / 4  # (k, n)
    projections = [name for name in windows if "projection" in name]
    assert len(projections) == 4  # key and value E of each of the 2 layers (headwise)
    for name in projections:
        torch.testing.assert_close(windows[name], expected)
        assert gaussian[name].std() > 0.1  # random: N(0, 1/n) (std 0.18 here), not windows
        assert gaussian[name].min() < 0
    saved = json.loads((Path(random.output_dir) / "config.json").read_text())
    assert saved["projection_init"] == "random"


class CrashAfter(TrainerCallback):
    """Stands in for SIGKILL: stop the process's training abruptly after `step` optimizer steps."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt(f"simulated kill after step {self.step}")


def test_masks_are_a_function_of_seed_and_batch_alone(tiny_model_dir: Path) -> None:
    """A resumed run's first batch is the collator's first call in that process: its masks must not
    depend on what the collator saw before (transformers 5.24 replaced a generator set from outside)."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(len(tokenizer.all_special_ids), len(tokenizer), (2, 4, 32), generator=generator)
    first, second = ([{"input_ids": row} for row in batch.tolist()] for batch in ids)

    def masks(seed: int, batches: list) -> list[torch.Tensor]:
        collator = ResumableMaskingCollator(tokenizer, mlm_probability=0.15, seed=seed)
        return [collator(batch)["input_ids"] for batch in batches]

    straight = masks(42, [first, second])
    resumed = masks(42, [second])
    torch.testing.assert_close(resumed[0], straight[1], rtol=0, atol=0)
    assert not torch.equal(masks(43, [second])[0], straight[1])  # the seed matters
    assert not torch.equal(straight[1], ids[1])  # something was masked


@pytest.mark.slow
def test_resume_after_kill_gives_the_uninterrupted_weights(corpus: Path, tmp_path: Path) -> None:
    common = dict(train=[str(corpus / "train.txt")], preset="tiny", seq_len=32, projected_length=8,
                  per_device_train_batch_size=4, max_steps=8, save_steps=3, max_eval_blocks=4,
                  disable_tqdm=True)  # fmt: skip
    straight = pretrain(PretrainConfig(output_dir=str(tmp_path / "straight"), **common))

    killed = str(tmp_path / "killed")
    with pytest.raises(KeyboardInterrupt, match="simulated kill"):
        pretrain(PretrainConfig(output_dir=killed, **common), callbacks=[CrashAfter(5)])
    assert sorted(p.name for p in Path(killed).glob("checkpoint-*")) == ["checkpoint-3"]  # step 4-5 are lost
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the crashed run took its handler with it
    resumed = pretrain(PretrainConfig(output_dir=killed, resume=True, **common))

    assert resumed.steps == straight.steps == 8
    assert_same_weights(Path(resumed.output_dir), Path(straight.output_dir), atol=1e-6)
    assert resumed.eval_loss == pytest.approx(straight.eval_loss, abs=1e-5)


def test_progress_bars_say_what_they_count(corpus: Path, tmp_path: Path, capsys) -> None:
    tiny = [flag for flag in TINY if flag != "--no-progress"]
    code = main(["pretrain", "--train", str(corpus / "train.txt"), "--validation", str(corpus / "valid.txt"),
                 "--output-dir", str(tmp_path / "mlm"), "--projected-length", "8", "--max-steps", "2", *tiny])  # fmt: skip
    assert code == 0
    bars = capsys.readouterr().err
    assert "train (steps): 100%" in bars
    assert "evaluate (batches)" in bars
