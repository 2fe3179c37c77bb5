"""The long stage of `linformer distill` (train/distill/long.py) on a tiny BERT teacher reading 32 tokens."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from torch.nn import functional as F
from torch.testing import assert_close

from linformer_kit.models.config_rules import longest_input
from linformer_kit.models.convert import is_projection_key
from linformer_kit.models.embedding import encoder_of
from linformer_kit.nn.dense_projection import window_matrix
from linformer_kit.train.distill import DistillConfig, distill
from linformer_kit.train.distill.config import LONG_OPTIONS
from linformer_kit.train.distill.data import long_spans
from linformer_kit.train.distill.long import LongTrainer, long_student, span_length, stretched
from linformer_kit.train.distill.long_losses import (
    crops_loss,
    embedded_halves,
    halves,
    halves_loss,
    long_loss,
    window_targets,
)
from linformer_kit.train.distill.negatives import NegativesBank
from linformer_kit.train.distill.trainer import load_teacher, student_from
from tests.fixtures.models import tiny_source
from tests.train.test_distill import MANY_WORDS, _word_teacher


@pytest.fixture
def long_text(tmp_path: Path) -> Path:
    rng = random.Random(0)
    path = tmp_path / "long.txt"
    documents = (" ".join(rng.choice(MANY_WORDS) for _ in range(rng.randint(20, 300))) for _ in range(60))
    path.write_text("\n\n".join(documents) + "\n")
    return path


def _config(teacher: Path, text: Path, out: Path, **overrides) -> DistillConfig:
    values = dict(
        teacher=str(teacher), train=[str(text)], output_dir=str(out), projected_length=8, local_window=2,
        global_tokens=1, end_to_end_steps=2, per_device_train_batch_size=4, logging_steps=1, save_steps=2,
        disable_tqdm=True, seed=0, max_eval_documents=6, long_length=64, long_steps=3, long_batch_size=2,
    )  # fmt: skip
    return DistillConfig(**{**values, **overrides})


def test_stretched_window_means_stay_window_means() -> None:
    e = window_matrix(8, 32)
    assert_close(stretched(e, 128), window_matrix(8, 128))
    assert_close(stretched(e, 128).sum(-1), e.sum(-1))  # row sums kept for any E
    learned = torch.randn(2, 8, 32)
    assert_close(stretched(learned, 96).sum(-1), learned.sum(-1))


def test_window_targets_take_each_token_from_its_most_central_window() -> None:
    teacher = tiny_source("bert", "Model")
    ids = torch.randint(5, 99, (2, 40))
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS] ... [SEP]
    short = window_targets(teacher, ids[:, :30], 32)  # one window holds it: the teacher itself
    assert_close(short[-1], teacher(input_ids=ids[:, :30]).last_hidden_state)
    targets = window_targets(teacher, ids, 16)  # text of 38 tokens, windows of 14 at a stride of 7
    text = ids[:, 1:-1]
    first = teacher(input_ids=torch.cat([ids[:, :1], text[:, 0:14], ids[:, -1:]], 1)).last_hidden_state
    second = teacher(input_ids=torch.cat([ids[:, :1], text[:, 7:21], ids[:, -1:]], 1)).last_hidden_state
    assert_close(targets[-1][:, 0], first[:, 0])  # [CLS] from the first window
    assert_close(targets[-1][:, 1 + 3], first[:, 1 + 3])  # text token 3: centre of window 0 is 7
    assert_close(targets[-1][:, 1 + 13], second[:, 1 + 6])  # text token 13: nearest centre 14 (window 1)
    assert len(targets) == 3  # embeddings and each of the 2 layers
    assert targets[0].shape == (2, 40, 32)


def test_halves_loss_prefers_each_span_s_own_second_half() -> None:
    encoder = tiny_source("bert", "Model")
    ids = torch.randint(5, 99, (4, 30))
    same = torch.cat([ids[:, :15], ids[:, :15]], 1)  # each second half repeats its first
    mixed = torch.cat([ids[:, :15], ids.roll(1, 0)[:, :15]], 1)  # each second half is another span's first
    same_loss = halves_loss(embedded_halves(encoder, same), 20.0)
    mixed_loss = halves_loss(embedded_halves(encoder, mixed), 20.0)
    # 4 spans: a reading that tells no half from another scores ln 4; each span's own half is found in `same`,
    # and in `mixed` the half it resembles (another span's) wins
    assert same_loss < math.log(4) < mixed_loss


def test_banked_negatives_join_the_batch_s_second_halves_in_one_softmax() -> None:
    torch.manual_seed(0)
    embedded = F.normalize(torch.randn(2, 3, 8), dim=-1)  # (2, b, D): 3 spans' first and second halves
    bank = F.normalize(torch.randn(5, 8), dim=-1)  # (M, D): 5 second halves of earlier steps
    documents = torch.cat([embedded[1], bank])  # (b + M, D)
    want = -torch.stack([(20.0 * embedded[0][i] @ documents.T).log_softmax(-1)[i] for i in range(3)]).mean()
    assert_close(halves_loss(embedded, 20.0, bank), want)
    assert halves_loss(embedded, 20.0, bank) > halves_loss(
        embedded, 20.0
    )  # more negatives, more to tell apart
    assert_close(
        halves_loss(embedded, 20.0, bank[:0]), halves_loss(embedded, 20.0)
    )  # an empty bank: the batch


def test_a_bank_keeps_the_newest_rows_detached() -> None:
    bank = NegativesBank(5)
    assert len(bank) == 0
    assert bank.rows is None
    rows = torch.arange(24.0).view(8, 3).requires_grad_()
    bank.push(rows[:3] * 1)
    bank.push(rows[3:6] * 1)  # 6 pushed, 5 kept: the first dropped
    assert_close(bank.rows, rows[1:6].detach())
    bank.push(rows[6:] * 1)
    assert_close(bank.rows, rows[3:8].detach())
    assert not bank.rows.requires_grad
    assert len(bank) == 5


def test_a_long_step_fills_the_bank_and_the_next_step_reads_it(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    config = _config(word_teacher, long_text, tmp_path / "out", seq_len=32, negatives_bank=3, use_cpu=True,
                     report_to=[], long_tune="tune", short_weight=0.0)  # fmt: skip
    teacher = load_teacher(str(word_teacher))
    student = long_student(student_from(teacher, config), config, teacher)
    trainer = LongTrainer(model=student, args=config, teacher=teacher, stage="end-to-end", logits_weight=1.0,
                          config=config)  # fmt: skip
    trainer.current_gradient_accumulation_steps = 1
    torch.manual_seed(0)
    ids = torch.randint(5, 99, (2, 64))
    ids[:, 0], ids[:, -1] = teacher.config.bos_token_id or 2, teacher.config.eos_token_id or 3
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    assert trainer.bank is not None
    trainer.training_step(student, inputs)  # a backward, no optimizer step: the weights are as they were
    with torch.no_grad():
        second = embedded_halves(encoder_of(student.eval()), ids)[1]
    assert_close(trainer.bank.rows, second)  # this batch's second halves
    reported = trainer.training_step(student, inputs)  # reads the 2 banked halves, then banks 2 more
    assert len(trainer.bank) == 3  # 4 pushed, the newest 3 kept
    banked = NegativesBank(3)
    banked.push(second)
    with torch.no_grad():
        assert_close(reported, long_loss(student.eval(), teacher, inputs, config, banked))
        assert (reported - long_loss(student, teacher, inputs, config)).abs() > 1e-4  # not the batch alone
    assert_close(trainer.bank.rows, torch.cat([second[1:], second]))  # the oldest left first
    with torch.no_grad():  # evaluation reads no bank: the batch's negatives alone
        assert_close(trainer.stage_loss(student.eval(), inputs), long_loss(student, teacher, inputs, config))
    with pytest.raises(ValueError, match=r"negatives_bank=4: .*contrastive_weight=0"):
        _config(word_teacher, long_text, tmp_path / "out", negatives_bank=4, contrastive_weight=0.0)
    with pytest.raises(ValueError, match=r"negatives_bank"):
        _config(word_teacher, long_text, tmp_path / "out", negatives_bank=-1)


def test_spans_per_document_reach_the_long_stage_s_draw(
    word_teacher: Path, long_text: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import linformer_kit.train.distill.long as long_module

    class Drawn(Exception):
        pass

    def spy(texts, tokenizer, length, count, seed, per_document=None):  # type: ignore[no-untyped-def]
        raise Drawn(per_document)

    monkeypatch.setattr(long_module, "long_spans", spy)
    with pytest.raises(Drawn) as drawn:
        distill(_config(word_teacher, long_text, tmp_path / "out", end_to_end_steps=1, seq_len=32,
                        long_spans_per_document=2))  # fmt: skip
    assert drawn.value.args == (2,)
    with pytest.raises(ValueError, match=r"long_spans_per_document.*0"):
        _config(word_teacher, long_text, tmp_path / "other", long_spans_per_document=0)


def test_halves_are_cls_text_sep_of_one_length() -> None:
    ids = torch.arange(2 * 9).view(
        2, 9
    )  # [CLS] = column 0, [SEP] = column 8, 7 text tokens: the last dropped
    first, second = halves(ids)
    assert first.tolist() == [[0, 1, 2, 3, 8], [9, 10, 11, 12, 17]]
    assert second.tolist() == [[0, 4, 5, 6, 8], [9, 13, 14, 15, 17]]


def test_crops_loss_finds_each_crop_s_own_half() -> None:
    """Halves of one repeated token each: every crop of a half is that half's text, so the crops' loss is
    lower against the halves' own embeddings than against the same embeddings shuffled."""
    torch.manual_seed(0)
    encoder = tiny_source("bert", "Model").eval()
    text = torch.arange(10, 18).repeat_interleave(12).view(4, 24)  # span i: 12 x token 10+2i, 12 x 11+2i
    ids = torch.cat([torch.full((4, 1), 1), text, torch.full((4, 1), 2)], 1)  # (4, 26)
    embedded = embedded_halves(encoder, ids)  # (2, 4, D)
    own = crops_loss(encoder, ids, embedded, 5, 3, 20.0)
    shuffled = crops_loss(encoder, ids, embedded.flatten(0, 1).roll(1, 0).view_as(embedded), 5, 3, 20.0)
    assert own < shuffled
    # the teacher's side carries no graph: only the halves' embeddings get gradients
    embedded = embedded.detach().requires_grad_(True)
    crops_loss(encoder, ids, embedded, 5, 3, 20.0).backward()
    assert embedded.grad is not None
    assert embedded.grad.abs().sum() > 0
    assert all(p.grad is None for p in encoder.parameters())


def test_long_spans_are_whole_token_runs_of_one_document(word_teacher: Path, long_text: Path) -> None:
    from transformers import AutoTokenizer

    from linformer_kit.train.data import load_text

    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    spans = long_spans(load_text([str(long_text)], "text", "long"), tokenizer, 64, 10, seed=0)
    assert len(spans) == 10
    assert all(
        len(s) == 64 and s[0] == tokenizer.cls_token_id and s[-1] == tokenizer.sep_token_id for s in spans
    )
    assert all(tokenizer.unk_token_id not in s for s in spans)


@pytest.fixture
def word_teacher(tmp_path: Path) -> Path:
    return _word_teacher(tmp_path / "word-teacher")


@pytest.mark.slow
def test_the_long_stage_trains_a_student_reading_long_length(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    # exact_length 32: inputs the teacher reads (its fidelity sample, the short examples) run exactly;
    # every weight trains (`c1`'s stage), every term of the long loss on, the crops' (d) included
    result = distill(_config(word_teacher, long_text, tmp_path / "out", exact_length=32, crop_weight=0.5,
                             crop_length=8, long_tune="tune", stage_text="train"))  # fmt: skip
    assert set(result.fidelity) == {"drop-in", "end-to-end", "long"}
    # the short term kept the 512 fidelity (inputs of 32 tokens read exactly): a stage that broke it fails
    assert result.fidelity["long"] > result.fidelity["end-to-end"] - 0.05
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert longest_input(config) == 64
    assert config["exact_length"] == 32
    assert json.loads((tmp_path / "out" / "end-to-end" / "config.json").read_text())["exact_length"] is None
    weights = load_file(tmp_path / "out" / "model.safetensors")
    trained = load_file(tmp_path / "out" / "end-to-end" / "model.safetensors")
    for name, tensor in weights.items():
        if is_projection_key(name):
            assert tensor.shape[-1] == 64  # E, F sized for 64, trained from the stretched 32
            assert not torch.equal(tensor, stretched(trained[name], 64))
    stage = json.loads((tmp_path / "out" / "long" / "stage.json").read_text())
    assert (stage["options"]["long_length"], stage["options"]["exact_length"]) == (64, 32)
    tokenizer_config = json.loads((tmp_path / "out" / "tokenizer_config.json").read_text())
    assert tokenizer_config["model_max_length"] == 64


def test_projections_alone_keep_every_weight_the_short_reading_has(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    """long_tune='projections' with exact_length = seq_len: E and F move; every other weight is the 512
    student's (the position table's new rows are copies), so every input of at most 32 tokens is read
    exactly by weights the stage left untouched."""
    distill(_config(word_teacher, long_text, tmp_path / "out", exact_length=32, long_tune="projections",
                    short_weight=0.0, long_steps=2, long_learning_rate=1e-2))  # fmt: skip
    weights = load_file(tmp_path / "out" / "model.safetensors")
    trained = load_file(tmp_path / "out" / "end-to-end" / "model.safetensors")
    assert weights.keys() == trained.keys()
    for name, tensor in weights.items():
        if is_projection_key(name):
            assert not torch.equal(tensor, stretched(trained[name], 64)), name
        elif "position_embeddings" in name:
            assert_close(tensor, trained[name].repeat(2, 1), rtol=0, atol=0)  # row p: row p mod 32
        else:
            assert_close(tensor, trained[name], rtol=0, atol=0, msg=name)
    stage = json.loads((tmp_path / "out" / "long" / "stage.json").read_text())
    assert stage["options"]["long_tune"] == "projections"
    from linformer_kit.train.distill.long import long_stage

    # the first default ('tune') is left out of the options a resume compares: a stage run before the option
    # resumes
    every_weight = _config(
        word_teacher, long_text, tmp_path / "new", seq_len=32, long_tune="tune", short_weight=1.0
    )
    assert "long_tune" not in long_stage(every_weight).options
    # likewise the share held out at its first default (0.1); another share is compared
    assert "long_held_out" not in long_stage(every_weight).options
    held = _config(word_teacher, long_text, tmp_path / "held", seq_len=32, long_held_out=0.4, short_weight=1.0,
                   long_train=[str(long_text)])  # fmt: skip
    assert long_stage(held).options["long_held_out"] == 0.4
    # likewise the bank and the span cap, added later: compared only when set
    for name, value in (("negatives_bank", 8), ("long_spans_per_document", 2)):
        assert name not in long_stage(every_weight).options
        given = _config(
            word_teacher, long_text, tmp_path / name, seq_len=32, short_weight=1.0, **{name: value}
        )
        assert long_stage(given).options[name] == value


def test_long_adapters_train_and_leave_every_input_up_to_exact_length_as_it_was(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    """long_tune='adapters' with exact_length = seq_len: E, F and the new long adapters move, every other
    weight is the 512 student's; the saved student reads an input of at most 32 tokens bit for bit as the
    same weights without adapters, and a longer one otherwise."""
    from transformers import AutoModel

    distill(_config(word_teacher, long_text, tmp_path / "out", exact_length=32, long_tune="adapters",
                    long_adapter_rank=4, short_weight=0.0, long_steps=2, long_learning_rate=1e-2))  # fmt: skip
    weights = load_file(tmp_path / "out" / "model.safetensors")
    trained = load_file(tmp_path / "out" / "end-to-end" / "model.safetensors")
    adapters = {name for name in weights if ".long_adapters." in name}
    assert adapters == weights.keys() - trained.keys()
    assert any(name.endswith("up.weight") and weights[name].abs().max() > 0 for name in adapters)  # B moved
    for name in trained:
        if not is_projection_key(name) and "position_embeddings" not in name:
            assert_close(weights[name], trained[name], rtol=0, atol=0, msg=name)
    student = AutoModel.from_pretrained(tmp_path / "out").eval()
    assert student.config.long_adapter_rank == 4
    config = student.config.to_dict() | {"long_adapter_rank": None}
    plain = type(student)(type(student.config).from_dict(config)).eval()
    plain.load_state_dict(student.state_dict(), strict=False)
    ids = torch.randint(5, 90, (2, 64))
    mask = torch.ones_like(ids)
    mask[1, 20:] = 0  # row 1: 20 real tokens, read exactly
    with torch.no_grad():
        a = student(input_ids=ids, attention_mask=mask).last_hidden_state
        p = plain(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.equal(a[1, :20], p[1, :20])
    assert (a[0] - p[0]).abs().max() > 1e-4


def test_long_layers_train_and_leave_every_input_up_to_exact_length_as_it_was(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    """long_tune='layers', short_layers='student', exact_length = seq_len: only the long layers move (a copy of
    the 512 student's layers at the start); the saved student reads an input of at most 32 tokens bit for bit
    as the 512 student's weights do, and a longer one with the long layers."""
    from transformers import AutoModel

    distill(_config(word_teacher, long_text, tmp_path / "out", long_tune="layers", short_weight=0.0,
                    long_steps=2, long_learning_rate=1e-2, short_layers="student"))  # fmt: skip
    weights = load_file(tmp_path / "out" / "model.safetensors")
    trained = load_file(tmp_path / "out" / "end-to-end" / "model.safetensors")
    assert {
        name.replace(".long_layer.", ".layer.") for name in weights.keys() - trained.keys()
    } <= trained.keys()
    assert all(".long_layer." in name for name in weights.keys() - trained.keys())
    moved = [name for name in weights if ".long_layer." in name and "dense.weight" in name
             and not torch.equal(weights[name], trained[name.replace(".long_layer.", ".layer.")])]  # fmt: skip
    assert moved  # the long layers trained
    for name in trained:
        if not is_projection_key(name) and "position_embeddings" not in name:
            assert_close(weights[name], trained[name], rtol=0, atol=0, msg=name)
    assert "own weights" not in (tmp_path / "out" / "README.md").read_text()  # the card: not the teacher's
    student = AutoModel.from_pretrained(tmp_path / "out").eval()
    assert student.config.long_layers
    assert student.config.exact_length == 32
    plain = type(student)(
        type(student.config).from_dict(student.config.to_dict() | {"long_layers": False})
    ).eval()
    plain.load_state_dict(student.state_dict(), strict=False)
    ids = torch.randint(5, 90, (2, 64))
    mask = torch.ones_like(ids)
    mask[1, 20:] = 0  # row 1: 20 real tokens, read exactly by the 512 student's layers
    with torch.no_grad():
        a = student(input_ids=ids, attention_mask=mask).last_hidden_state
        p = plain(input_ids=ids[1:], attention_mask=mask[1:]).last_hidden_state
        whole = plain(input_ids=ids, attention_mask=mask).last_hidden_state
    assert torch.equal(a[1, :20], p[0, :20])
    assert (a[0] - whole[0]).abs().max() > 1e-4


@pytest.mark.parametrize("sharing", ["headwise", "layerwise"])
def test_long_layers_start_as_the_512_student_beside_the_original(
    word_teacher: Path, long_text: Path, sharing: str
) -> None:
    """short_layers='original' (the default): the long layers are the 512 student's layers (E and F stretched,
    the encoder's one E too under layerwise sharing, which the long layers read), every other weight is the
    teacher's converted and extended alike, so a row of at most exact_length tokens is read as the teacher
    reads it, and a longer one by the 512 student's layers over the teacher's embeddings."""
    config = _config(word_teacher, long_text, Path("unused"), seq_len=32, long_tune="layers", exact_length=32,
                     sharing=sharing)  # fmt: skip
    assert config.short_layers == "original"
    teacher = load_teacher(str(word_teacher))
    student = student_from(teacher, config)
    with torch.no_grad():  # a 512 student whose weights differ from the teacher's
        for parameter in student.parameters():
            parameter.add_(0.01 * torch.randn_like(parameter))
    longer = long_student(student, config, teacher).eval()
    trained, own = student.state_dict(), teacher.state_dict()
    projections = 0
    for name, tensor in longer.state_dict().items():
        source = trained.get(name.replace(".long_layer.", ".layer."))
        if is_projection_key(name) and (".long_layer." in name or sharing == "layerwise"):
            assert source is not None, name
            assert_close(tensor, stretched(source, tensor.shape[-1]), rtol=0, atol=0, msg=name)
            projections += 1
        elif ".long_layer." in name:
            assert torch.equal(tensor, source), name
        elif name in own and own[name].shape == tensor.shape:
            assert torch.equal(tensor, own[name]), name
    assert projections > 0
    # the reference of a longer row: the same model with the long layers' weights as its only layers
    state = {name.replace(".long_layer.", ".layer."): value for name, value in longer.state_dict().items()
             if ".layer." not in name or ".long_layer." in name}  # fmt: skip
    fields = longer.config.to_dict() | {"long_layers": False}
    reference = type(longer)(type(longer.config).from_dict(fields)).eval()
    reference.load_state_dict(state, strict=True)
    ids = torch.randint(5, 90, (2, 64))
    mask = torch.ones_like(ids)
    mask[1, 20:] = 0  # row 1: 20 real tokens, read exactly, by the teacher's weights
    with torch.no_grad():
        a = encoder_of(longer)(input_ids=ids, attention_mask=mask).last_hidden_state
        t = encoder_of(teacher)(input_ids=ids[1:, :20]).last_hidden_state
        s = encoder_of(student)(input_ids=ids[1:, :20]).last_hidden_state
        r = encoder_of(reference)(input_ids=ids[:1]).last_hidden_state
    assert_close(a[1, :20], t[0], rtol=1e-5, atol=1e-5)
    assert (s[0] - t[0]).abs().max() > 1e-3  # (the 512 student's weights would read it otherwise)
    assert_close(a[0], r[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        (
            {"long_tune": "all"},
            r"long_tune must be one of \('tune', 'projections', 'adapters', 'layers'\), got 'all'",
        ),
        (  # exact_length defaults to seq_len with a long stage, so the short term reads nothing that trains
            {"long_tune": "adapters", "short_weight": 1.0},
            r"short_weight=1.0: with long_tune='adapters' and exact_length=32 >= seq_len=32",
        ),
        (
            {"long_tune": "adapters", "exact_length": 32, "short_weight": 0.0, "long_adapter_rank": 0},
            "long_adapter_rank",
        ),
        (
            {"long_tune": "projections", "projection": "mean", "short_weight": 0.0},
            "long_tune='projections': projection='mean' .* has no E and F to train",
        ),
        (
            {"long_tune": "projections", "tune": "lora", "end_to_end_steps": 0, "attention_steps": 1},
            r"tune='lora': no stage reads it \(end_to_end_steps=0",
        ),
        (
            {"long_tune": "projections", "exact_length": 33, "short_weight": 0.0},
            r"contrastive_weight=1.0: with long_tune='projections' its halves of 33 tokens are read exactly",
        ),
        ({"long_length": None, "long_tune": "projections"}, "long_tune: options of the long stage"),
        (
            {"short_layers": "teacher"},
            r"short_layers must be one of \('original', 'student'\), got 'teacher'",
        ),
        ({"long_length": None, "short_layers": "student"}, "short_layers: options of the long stage"),
        (
            {"long_tune": "projections", "exact_length": 32, "short_weight": 1.0},
            r"short_weight=1.0: with long_tune='projections' and exact_length=32 >= seq_len=32",
        ),
        (
            {"long_length": None, "window_weight": 2.0, "long_steps": 5, "long_batch_size": 4},
            "long_steps, window_weight: options of the long stage",
        ),
        ({"long_batch_size": 1}, "long_batch_size.*>= 2"),
        (
            {"window_weight": 0.0, "contrastive_weight": 0.0, "short_weight": 0.0},
            "the long stage has no loss",
        ),
        (
            {"crop_weight": 1.0, "crop_length": 32},
            r"crop_length=32 must be an int >= 1 and < 32 \(a crop lies inside one half",
        ),
        ({"crop_weight": 1.0, "crop_length": 8, "crops_per_half": 0}, "crops_per_half=0 must be an int >= 1"),
        ({"crop_weight": -1.0}, "crop_weight=-1.0 must be a number >= 0"),
        ({"long_length": None, "crop_weight": 0.5}, "crop_weight: options of the long stage"),
        ({"long_length": 32}, "long_length=32: the long stage reads more than seq_len=32"),
        (
            {"projection_resize": "stretch"},
            r"projection_resize must be one of \('interpolate', 'restart'\), got 'stretch'",
        ),
        ({"long_length": None, "exact_length": 16}, "exact_length: options of the long stage"),
        ({"short_text": "long"}, r"short_text must be one of \('train', 'train\+long'\), got 'long'"),
        ({"long_length": None, "short_text": "train"}, "short_text: options of the long stage"),
        ({"exact_length": 64}, "exact_length=64 must be below max_seq_len=64"),
        ({"exact_length": 4}, "exact_length=4 must be at least projected_length k=8"),
        ({"local_window": 40}, "local_window=40 must be below max_seq_len=32"),
        (
            {"projected_length": None, "local_window": None},
            "global_tokens=1 with full attention in every layer",
        ),
    ],
)
def test_bad_long_options_are_named_before_any_work(
    overrides: dict, match: str, word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match=match):
        distill(_config(word_teacher, long_text, tmp_path / "out", **overrides))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("tune", ["projections", "adapters", "layers"])
@pytest.mark.parametrize("exact", [20, 23])
def test_halves_read_exactly_are_refused_below_twice_exact_length(
    tune: str, exact: int, word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    """With only the long stage's weights training, the halves must be longer than T: from long_length 2T on.
    The error names that bound, and the bound holds: 2T is taken, 2T - 1 refused."""
    options = {"long_tune": tune, "exact_length": exact}
    with pytest.raises(ValueError, match=rf"raise --long-length to at least {2 * exact} or train shared"):
        _config(word_teacher, long_text, tmp_path / "out", long_length=2 * exact - 1, **options)
    config = _config(word_teacher, long_text, tmp_path / "out", long_length=2 * exact, **options)
    assert config.long_length == 2 * exact


# a value other than its default for each option of the long stage (train/distill/config.py, LONG_OPTIONS)
LONG_VALUES = dict(
    long_train=["more.txt"], long_held_out=0.4, long_steps=5, long_batch_size=2, long_learning_rate=1e-4, window_weight=2.0,
    contrastive_weight=0.5, contrastive_scale=10.0, short_weight=0.0, crop_weight=0.5, crop_length=8,
    crops_per_half=1, projection_resize="restart", long_tune="adapters", long_adapter_rank=4, short_text="train",
    short_layers="student", halves="whole", negatives_bank=8, long_spans_per_document=2,
    exact_length=16,
)  # fmt: skip


def test_every_long_option_without_long_length_is_named_in_one_error(
    word_teacher: Path, tmp_path: Path
) -> None:
    """Without --long-length no long stage runs: each of its options given (a value other than its default)
    would be ignored. One check names them all, with their values and defaults."""
    assert set(LONG_VALUES) == {*LONG_OPTIONS, "exact_length"}  # a new long option needs a value here
    values = dict(
        teacher=str(word_teacher), train=[str(tmp_path / "t.txt")], output_dir=str(tmp_path / "out")
    )
    with pytest.raises(
        ValueError, match="options of the long stage, which runs only with --long-length N"
    ) as err:
        DistillConfig(**values, **LONG_VALUES)
    named = str(err.value).split(":")[0].split(", ")
    assert sorted(named) == sorted(LONG_VALUES)
    for name, value in LONG_VALUES.items():
        assert f"{name}={value!r} (default " in str(err.value)
    for name, value in LONG_VALUES.items():  # each alone too
        with pytest.raises(ValueError, match=rf"^{name}: options of the long stage"):
            DistillConfig(**values, **{name: value})
    assert not (tmp_path / "out").exists()


def test_too_little_long_text_is_named(word_teacher: Path, tmp_path: Path) -> None:
    short = tmp_path / "short.txt"
    short.write_text("\n\n".join(" ".join(MANY_WORDS[:10]) for _ in range(40)) + "\n")
    with pytest.raises(ValueError, match="holds 0 span"):
        distill(_config(word_teacher, short, tmp_path / "out", end_to_end_steps=1, stage_text="train"))


def test_an_output_dir_holding_any_file_is_refused_and_kept(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match=r"already holds notes\.txt: pass --resume"):
        distill(_config(word_teacher, long_text, out))
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "mine"


def test_text_files_with_other_fields_are_read_together(tmp_path: Path) -> None:
    """Gutenberg's books ({ebook_id, title, text}) beside IMDB's reviews ({id, label, text}): one corpus."""
    import gzip

    from linformer_kit.train.data import load_text

    books, reviews = tmp_path / "books.jsonl.gz", tmp_path / "reviews.jsonl"
    with gzip.open(books, "wt") as f:
        f.write(json.dumps({"ebook_id": 1, "title": "A", "text": "a long book"}) + "\n")
    reviews.write_text(json.dumps({"id": "r1", "label": 1, "text": "a review"}) + "\n")
    assert sorted(load_text([str(books), str(reviews)], "text", "long_train")["text"]) == [
        "a long book",
        "a review",
    ]


def test_a_resume_with_other_long_options_is_refused(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    """A killed long stage's checkpoint ran with batch 2: a resume at batch 3 does not continue it silently."""
    out = tmp_path / "out"
    (out / "long" / "checkpoint-1").mkdir(parents=True)
    config = _config(word_teacher, long_text, out, long_batch_size=2, end_to_end_steps=1, seq_len=32)
    from linformer_kit.train.distill.long import long_stage

    (out / "long" / "options.json").write_text(json.dumps(long_stage(config).options))
    with pytest.raises(ValueError, match=r"resume: .*long's checkpoints ran with other options"):
        distill(
            _config(
                word_teacher, long_text, out, long_batch_size=3, end_to_end_steps=1, seq_len=32, resume=True
            )
        )


def test_a_long_step_backs_through_each_term_apart_to_the_gradient_of_their_sum(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    # LongTrainer.training_step: one backward a term (one graph held at a time), the gradient of L_long
    config = _config(word_teacher, long_text, tmp_path / "out", seq_len=32, crop_weight=0.5, crop_length=4,
                     short_weight=2.0, gradient_accumulation_steps=2, use_cpu=True, report_to=[],
                     long_tune="tune")  # fmt: skip
    teacher = load_teacher(str(word_teacher))
    student = long_student(student_from(teacher, config), config, teacher)
    torch.manual_seed(0)
    ids = torch.randint(5, 99, (2, 64))
    ids[:, 0], ids[:, -1] = teacher.config.bos_token_id or 2, teacher.config.eos_token_id or 3
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
              "short_input_ids": ids[:, :32], "short_attention_mask": torch.ones_like(ids[:, :32])}  # fmt: skip
    trainer = LongTrainer(model=student, args=config, teacher=teacher, stage="end-to-end", logits_weight=1.0,
                          config=config)  # fmt: skip
    trainer.current_gradient_accumulation_steps = 2
    backwards: list[torch.Tensor] = []
    backward = trainer.accelerator.backward
    trainer.accelerator.backward = lambda loss, **kw: (backwards.append(loss), backward(loss, **kw))  # type: ignore[method-assign]
    torch.manual_seed(1)  # the crops are drawn at random: one draw for both
    reported = trainer.training_step(student, inputs)
    assert len(backwards) == 3  # the window term, the halves' with the crops', the short term: one graph each
    apart = {name: p.grad.clone() for name, p in student.named_parameters() if p.grad is not None}
    student.zero_grad()
    torch.manual_seed(1)
    whole = long_loss(student, teacher, inputs, config) / 2
    whole.backward()
    assert_close(reported, whole.detach())
    together = {name: p.grad for name, p in student.named_parameters() if p.grad is not None}
    assert together.keys() == apart.keys()
    assert len(apart) > 10
    for name in together:
        assert_close(apart[name], together[name], rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("typed", [["--long-tune", "layers"], ["--short-layers", "original"]])
def test_a_long_option_typed_at_its_default_without_long_length_is_refused(
    word_teacher: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], typed: list[str]
) -> None:
    """`--long-tune layers` is the default's value: only the command line knows it was typed
    (config_parser.typed_options), and it would be ignored as much as any other long option."""
    from linformer_kit.cli.main import main

    text = tmp_path / "t.txt"
    text.write_text("\n\n".join(" ".join(MANY_WORDS[:40]) for _ in range(20)) + "\n")
    argv = [
        "distill",
        "--teacher",
        str(word_teacher),
        "--train",
        str(text),
        "--output-dir",
        str(tmp_path / "out"),
    ]
    assert main([*argv, *typed]) == 2
    name = typed[0][2:].replace("-", "_")
    assert (
        f"{name}: options of the long stage, which runs only with --long-length N" in capsys.readouterr().err
    )
    assert not (tmp_path / "out").exists()


def test_whole_halves_read_spans_of_two_halves_of_long_length(
    word_teacher: Path, long_text: Path, tmp_path: Path
) -> None:
    """halves="whole": a span is 2 long_length - 2 tokens, each half long_length (what the student serves); the
    window term reads the first half as "split" reads a span of long_length, and the halves term each half."""
    split = _config(word_teacher, long_text, tmp_path / "out", seq_len=32, long_tune="tune", short_weight=0.0)
    whole = _config(word_teacher, long_text, tmp_path / "out", seq_len=32, long_tune="tune", short_weight=0.0,
                    halves="whole")  # fmt: skip
    assert (span_length(split), span_length(whole)) == (64, 126)
    teacher = load_teacher(str(word_teacher))
    student = long_student(student_from(teacher, whole), whole, teacher).eval()
    ids = torch.randint(5, 99, (2, 126))
    ids[:, 0], ids[:, -1] = teacher.config.bos_token_id or 2, teacher.config.eos_token_id or 3
    first = halves(ids)[0]  # (2, 64): [CLS] + the first 62 text tokens + [SEP]
    assert first.shape == (2, 64)
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    windows = {"contrastive_weight": 0.0}
    with torch.no_grad():
        got = long_loss(student, teacher, inputs, dataclasses.replace(whole, **windows))
        want = long_loss(student, teacher, {"input_ids": first, "attention_mask": torch.ones_like(first)},
                         dataclasses.replace(split, **windows))  # fmt: skip
        assert_close(got, want)
        contrast = long_loss(student, teacher, inputs, dataclasses.replace(whole, window_weight=0.0))
        assert_close(
            contrast, halves_loss(embedded_halves(encoder_of(student), ids), whole.contrastive_scale)
        )
    with pytest.raises(ValueError, match=r"halves"):
        _config(word_teacher, long_text, tmp_path / "out", halves="apart")
