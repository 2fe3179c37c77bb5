"""`linformer distill` on a tiny random BERT teacher (nothing downloaded)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file
from torch.testing import assert_close

from linformer_kit.cli.main import main
from linformer_kit.models.convert import is_projection_key
from linformer_kit.train.distill import DistillConfig, DistillTrainer, distill
from linformer_kit.train.distill.data import split_texts, train_examples
from linformer_kit.train.distill.losses import attention_layers
from linformer_kit.train.distill.trainer import attention_dropout
from tests.fixtures.models import tiny_source
from tests.fixtures.tokenizers import write_tokenizer

WORDS = ["hello", "world"]
# the fidelity tests' vocabulary: every word its own token, documents of many lengths
MANY_WORDS = ["hello", "world", "cat", "dog", "sat", "ran", "on", "the", "mat", "park", "red", "blue", "big",
              "small", "and", "or", "fast", "slow", "tree", "house"]  # fmt: skip


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


def _word_teacher(folder: Path, head: str = "Model") -> Path:
    """A teacher whose attention decides its embeddings (sharp, and large against the residual: a random
    init's is near uniform and small, so any attention would keep them), with a tokenizer that gives every
    word of MANY_WORDS its own id."""
    model = tiny_source("bert", head)
    with torch.no_grad():
        for layer in model.base_model.encoder.layer:
            for linear in (layer.attention.self.query, layer.attention.self.key, layer.attention.self.value,
                           layer.attention.output.dense):  # fmt: skip
                linear.weight.mul_(20)
    model.save_pretrained(folder)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    transformers.BertTokenizer(vocab={w: i for i, w in enumerate([*specials, *MANY_WORDS])}).save_pretrained(
        folder
    )
    return folder


@pytest.fixture
def word_teacher(tmp_path: Path) -> Path:
    return _word_teacher(tmp_path / "word-teacher")


@pytest.fixture
def word_text(tmp_path: Path) -> Path:
    rng = random.Random(0)
    path = tmp_path / "words.txt"
    documents = (" ".join(rng.choice(MANY_WORDS) for _ in range(rng.randint(4, 40))) for _ in range(120))
    path.write_text("\n\n".join(documents) + "\n")
    return path


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
    assert result.train_examples == 112  # 120 documents, the last 8 held out (max_eval_documents)
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert (metrics["train_examples"], metrics["eval_documents"]) == (112, 8)


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


def test_a_stage_trains_with_attention_dropout_and_the_saved_student_keeps_the_teachers(
    teacher, text, tmp_path, monkeypatch
) -> None:
    """attention_dropout (0 by default) is every attention layer's while a stage trains, and only then: the
    saved student's layers and config keep the teacher's 0.1. It is in the options a resume compares unless it
    is the teacher's, so a stage that ran at the teacher's (as every stage before the option did) is refused at
    the default, naming the flag that reuses it, and reused with it."""
    config = json.loads((teacher / "config.json").read_text())
    (teacher / "config.json").write_text(json.dumps(config | {"attention_probs_dropout_prob": 0.1}))
    seen = []
    original = DistillTrainer.train

    def train(self, *args, **kwargs):
        seen.append({layer.dropout for layer in attention_layers(self.model)})
        return original(self, *args, **kwargs)

    monkeypatch.setattr(DistillTrainer, "train", train)
    steps = dict(attention_steps=1, end_to_end_steps=1)
    distill(_config(teacher, text, tmp_path / "out", **steps))
    assert seen == [{0.0}, {0.0}]  # attention transfer, end to end
    for stage in ("attention", "end-to-end"):
        options = json.loads((tmp_path / "out" / stage / "stage.json").read_text())["options"]
        assert options["attention_dropout"] == 0.0
    saved = transformers.AutoModel.from_pretrained(tmp_path / "out")
    assert saved.config.attention_probs_dropout_prob == 0.1
    assert {layer.dropout for layer in attention_layers(saved)} == {0.1}
    with attention_dropout(saved, 0.3):  # the stage's, inside the block; the model's own after it
        assert {layer.dropout for layer in attention_layers(saved)} == {0.3}
    assert {layer.dropout for layer in attention_layers(saved)} == {0.1}

    distill(_config(teacher, text, tmp_path / "before", attention_dropout=0.1, **steps))  # the teacher's
    assert seen[2:] == [{0.1}, {0.1}]
    options = json.loads((tmp_path / "before" / "end-to-end" / "stage.json").read_text())["options"]
    assert "attention_dropout" not in options  # as a stage run before the option
    with pytest.raises(
        ValueError, match=r"finished with other options .* give --attention-dropout 0.1 to reuse"
    ):
        distill(_config(teacher, text, tmp_path / "default", stages_from=str(tmp_path / "before"), **steps))
    distill(_config(teacher, text, tmp_path / "pinned", stages_from=str(tmp_path / "before"),
                    attention_dropout=0.1, **steps))  # fmt: skip
    assert len(seen) == 4  # reused, not trained again


@pytest.mark.parametrize(("tune", "learning_rate"), [("all", 3e-3), ("lora", 1e-2)])
def test_end_to_end_raises_the_fidelity_above_the_drop_in(
    word_teacher, word_text, tmp_path, tune, learning_rate
) -> None:
    """k = 2 alone: the drop-in keeps little of the teacher's embeddings (0.62, below two different documents'
    0.66); 6 steps raise it to 0.78 (all) / 0.79 (LoRA); a loss that pulled the wrong way would lower it."""
    config = _config(word_teacher, word_text, tmp_path / "out", projected_length=2, local_window=None,
                     attention_steps=0, end_to_end_steps=6, learning_rate=learning_rate, tune=tune)  # fmt: skip
    result = distill(config)
    assert result.fidelity["end-to-end"] > result.fidelity["drop-in"] + 0.05
    assert result.fidelity["end-to-end"] > result.different_documents > result.fidelity["drop-in"]


def test_a_masked_lm_teacher_adds_the_kl_of_its_predictions(tmp_path, word_text) -> None:
    teacher = _word_teacher(tmp_path / "mlm-teacher", head="ForMaskedLM")
    options = dict(projected_length=2, local_window=None, attention_steps=0, end_to_end_steps=1,
                   embedding_weight=0.0)  # fmt: skip
    first_step = {  # the loss of step 1, before any update: the same student, with and without the KL term
        weight: distill(
            _config(teacher, word_text, tmp_path / f"out-{weight}", logits_weight=weight, **options)
        )
        for weight in (0.0, 1.0)
    }
    assert first_step[1.0].stage_losses["end-to-end"] > first_step[0.0].stage_losses["end-to-end"] + 1e-3
    same = _config(teacher, word_text, tmp_path / "same", projected_length=None, local_window=None,
                   attention_steps=0, end_to_end_steps=1, logits_weight=1.0)  # fmt: skip
    assert distill(same).stage_losses["end-to-end"] == pytest.approx(0.0, abs=1e-10)  # KL(p || p) = 0


def test_held_out_documents_default_to_the_last_train_ones_two_at_least(word_teacher, tmp_path) -> None:
    five = tmp_path / "five.txt"
    five.write_text("\n\n".join(f"the cat sat {i}" for i in range(5)) + "\n")
    config = _config(word_teacher, five, tmp_path / "out")
    texts, documents, _ = split_texts(config)
    # a tenth of 5 documents rounds to 0, and the baseline compares 2
    assert [d.strip() for d in documents] == ["the cat sat 3", "the cat sat 4"]
    assert [d.strip() for d in texts["text"]] == [f"the cat sat {i}" for i in range(3)]


def test_a_single_held_out_document_is_refused_before_any_training(word_teacher, word_text, tmp_path) -> None:
    one = tmp_path / "one.txt"
    one.write_text("the cat sat on the mat\n")
    with pytest.raises(ValueError, match=r"validation: 1 held-out document.*needs at least 2"):
        distill(_config(word_teacher, word_text, tmp_path / "out", validation=[str(one)]))
    assert not list((tmp_path / "out").glob("*/checkpoint-*"))


def test_train_examples_are_documents_or_full_blocks_with_their_attention_masks(
    word_teacher, word_text
) -> None:
    import datasets

    tokenizer = transformers.AutoTokenizer.from_pretrained(word_teacher)
    texts = datasets.Dataset.from_dict({"text": word_text.read_text().split("\n\n")[:20]})
    documents = train_examples(texts, tokenizer, 16, "documents")
    assert documents.column_names == ["input_ids", "attention_mask"]
    lengths = [len(row) for row in documents["input_ids"]]
    assert max(lengths) == 16  # truncated
    assert min(lengths) < 16  # short documents kept whole
    assert [sum(mask) for mask in documents["attention_mask"]] == lengths
    blocks = train_examples(texts, tokenizer, 16, "blocks")
    assert blocks.column_names == ["input_ids", "attention_mask"]
    assert all(len(row) == 16 for row in blocks["input_ids"])
    assert all(mask == [1] * 16 for mask in blocks["attention_mask"])


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"max_eval_documents": 1}, r"max_eval_documents=1 must be an int >= 2 \(fidelity's baseline"),
        ({"projected_length": 64}, r"projected_length \(k=64\) must be between 1 and max_seq_len=32"),
        ({"local_window": [1, 2, 3]}, "local_window has 3 entries, expected one per layer"),
        ({"seq_len": 64}, "seq_len=64 is longer than the teacher's longest input 32"),
        ({"attention_steps": 0, "end_to_end_steps": 0}, "nothing to distil"),
        ({"attention_dropout": 1.0}, r"attention_dropout=1.0 must be a number >= 0 and < 1"),
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
    assert line.startswith("distill done: lowest fidelity")
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


def test_fidelity_on_text_no_stage_trains_on_is_reported_lowest_first(teacher, text, tmp_path) -> None:
    """--fidelity-text: each file its own source, the final student's fidelity beside its two different
    documents, sorted lowest first; the summary line and the model card lead with the lowest."""
    from linformer_kit.cli.distill import summary
    from linformer_kit.models.embedding import embed, fidelity

    rng = random.Random(1)
    other = tmp_path / "other.txt"
    other.write_text("\n\n".join(" ".join(rng.choice(WORDS[:5]) for _ in range(30)) for _ in range(6)) + "\n")
    config = _config(teacher, text, tmp_path / "out", attention_steps=0, end_to_end_steps=2,
                     fidelity_text=[str(other)])  # fmt: skip
    result = distill(config)
    assert list(result.fidelity_by_source) == sorted(
        result.fidelity_by_source, key=lambda name: result.fidelity_by_source[name]["fidelity"]
    )
    name = f"{tmp_path.name}/other.txt"  # a file's folder and name
    assert set(result.fidelity_by_source) == {"held-out", name}
    assert result.fidelity_by_source["held-out"]["fidelity"] == result.fidelity["end-to-end"]
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(teacher)
    texts = other.read_text().split("\n\n")
    student, original = AutoModel.from_pretrained(tmp_path / "out"), AutoModel.from_pretrained(teacher)
    want = fidelity(embed(student, tokenizer, texts, 64), embed(original, tokenizer, texts, 64))
    assert result.fidelity_by_source[name]["fidelity"] == pytest.approx(want, abs=1e-5)
    source, lowest = result.lowest()
    assert summary(result).startswith(f"distill done: lowest fidelity {lowest:.4f} ({source})")
    assert f"| {name} |" in (tmp_path / "out" / "README.md").read_text()
    (tmp_path / "empty.txt").write_text("one\n")
    with pytest.raises(ValueError, match=r"fidelity_text .*empty.txt: 1 document\(s\)"):
        distill(
            _config(
                teacher,
                text,
                tmp_path / "bad",
                end_to_end_steps=1,
                fidelity_text=[str(tmp_path / "empty.txt")],
            )
        )
