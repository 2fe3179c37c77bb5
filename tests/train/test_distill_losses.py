"""The distillation losses (train/distill/losses.py) on tiny Linformers: zero at identity, real tokens only,
each term what its formula says."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.testing import assert_close

from linformer_kit.models import LinformerForMaskedLM, LinformerModel
from linformer_kit.models.convert import with_linformer_options
from linformer_kit.models.embedding import sentence_embedding
from linformer_kit.train.distill.losses import (
    attention_io,
    attention_layers,
    attention_transfer_loss,
    end_to_end_loss,
    relative_error,
)
from tests.fixtures.batches import VOCAB_SIZE, padded_batch
from tests.fixtures.models import tiny_linformer_config

N = 16  # tokens per row of the batch (rows: full, ends in padding, 3 tokens)


def _teacher(head: type = LinformerForMaskedLM, **overrides) -> torch.nn.Module:
    """A frozen full-attention tiny Linformer with sharp, influential attention (a random init's is near
    uniform and small: any student would match it)."""
    torch.manual_seed(0)
    model = head(tiny_linformer_config(projected_length=None, **overrides))
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if name.endswith(("query.weight", "key.weight", "value.weight", "self.dense.weight")):
                parameter.mul_(20)
    return model.eval().requires_grad_(False)


def _copy(model: torch.nn.Module) -> torch.nn.Module:
    twin = type(model)(model.config)
    twin.load_state_dict(model.state_dict())
    return twin.eval()


def _student(teacher: torch.nn.Module) -> torch.nn.Module:
    """The teacher with k = 4 (E, F new): a different attention, every other weight the teacher's."""
    student, new = with_linformer_options(teacher, projected_length=4, local_window=None)
    assert new, "new projections"
    return student


def _inputs(pad_token_id: int = 1) -> dict[str, torch.Tensor]:
    input_ids, attention_mask = padded_batch(pad_token_id, N)
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def _other_padding(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The same batch with other token ids at the padded positions (the mask unchanged)."""
    ids = inputs["input_ids"].clone()
    padded = inputs["attention_mask"] == 0
    ids[padded] = torch.randint(
        5, VOCAB_SIZE, (int(padded.sum()),), generator=torch.Generator().manual_seed(7)
    )
    return {**inputs, "input_ids": ids}


# --- relative_error -----------------------------------------------------------------------------------


def test_relative_error_is_the_squared_error_over_the_squared_target_on_real_tokens() -> None:
    g = torch.Generator().manual_seed(0)
    want, got = torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 4, generator=g)
    real = torch.tensor([[True, True, True, False, False], [True] * 5])
    expected = (got - want)[real].square().sum() / want[real].square().sum()
    assert_close(relative_error(got, want, real), expected)
    assert_close(relative_error(want, want, real), torch.tensor(0.0), rtol=0, atol=0)
    assert_close(relative_error(torch.zeros_like(want), want, real), torch.tensor(1.0))
    assert_close(relative_error(3.0 * got, 3.0 * want, real), relative_error(got, want, real))  # scale-free
    moved_got, moved_want = got.clone(), want.clone()
    moved_got[~real], moved_want[~real] = 1e3, -1e3  # padded positions' values
    assert_close(relative_error(moved_got, moved_want, real), relative_error(got, want, real))


def test_relative_error_of_an_all_zero_target_is_finite() -> None:
    real = torch.ones(1, 3, dtype=torch.bool)
    assert torch.isfinite(relative_error(torch.ones(1, 3, 2), torch.zeros(1, 3, 2), real))


# --- attention transfer -------------------------------------------------------------------------------


def test_attention_io_records_each_layer_in_order_and_removes_its_hooks() -> None:
    teacher = _teacher(LinformerModel)
    inputs = _inputs(teacher.config.pad_token_id)
    with attention_io(teacher) as records:
        hidden = teacher(**inputs, output_hidden_states=True).hidden_states
    assert len(records) == len(attention_layers(teacher)) == 2
    for (x, mask, output), layer_input in zip(records, hidden[:-1], strict=True):
        assert_close(x, layer_input)  # layer i's attention reads layer i's input
        assert mask is not None
        assert output.shape == x.shape
    teacher(**inputs)
    assert len(records) == 2, "the hooks are gone after the block"


def test_attention_transfer_loss_is_zero_for_the_teacher_itself_and_positive_for_another_attention() -> None:
    teacher = _teacher()
    inputs = _inputs(teacher.config.pad_token_id)
    assert_close(attention_transfer_loss(_copy(teacher), teacher, inputs), torch.tensor(0.0), rtol=0, atol=0)
    assert attention_transfer_loss(_student(teacher), teacher, inputs) > 1e-3


def test_attention_transfer_loss_ignores_padding_and_trains_the_student_alone() -> None:
    teacher = _teacher()
    student = _student(teacher).train().requires_grad_(True)
    inputs = _inputs(teacher.config.pad_token_id)
    loss = attention_transfer_loss(student, teacher, inputs)
    assert_close(attention_transfer_loss(student, teacher, _other_padding(inputs)), loss)
    loss.backward()
    assert all(p.grad is None for p in teacher.parameters())
    assert any(p.grad is not None and p.grad.abs().sum() > 0 for p in student.parameters())


def test_a_student_with_other_layers_than_the_teacher_is_an_error() -> None:
    teacher = _teacher()
    shallow = LinformerForMaskedLM(tiny_linformer_config(projected_length=None, num_hidden_layers=1)).eval()
    inputs = _inputs(teacher.config.pad_token_id)
    with pytest.raises(ValueError, match=r"zip\(\) argument 2 is longer than argument 1"):
        attention_transfer_loss(shallow, teacher, inputs)
    with pytest.raises(ValueError, match=r"zip\(\) argument 2 is longer than argument 1"):
        end_to_end_loss(shallow, teacher, inputs, logits_weight=0.0)


# --- end to end ---------------------------------------------------------------------------------------


def test_end_to_end_loss_is_zero_for_the_teacher_itself_with_every_term() -> None:
    teacher = _teacher()
    inputs = _inputs(teacher.config.pad_token_id)
    loss = end_to_end_loss(_copy(teacher), teacher, inputs, logits_weight=1.0, embedding_weight=1.0)
    assert_close(loss, torch.tensor(0.0), rtol=0, atol=1e-7)


def test_the_kl_term_of_a_masked_lm_teacher_is_kl_of_the_real_tokens_logits() -> None:
    teacher = _teacher()
    student = _student(teacher)
    inputs = _inputs(teacher.config.pad_token_id)
    hidden_only = end_to_end_loss(student, teacher, inputs, logits_weight=0.0)
    with_kl = end_to_end_loss(student, teacher, inputs, logits_weight=1.0)
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        log_p = teacher(**inputs).logits[real].log_softmax(-1)
        log_q = student(**inputs).logits[real].log_softmax(-1)
    kl = F.kl_div(log_q, log_p, log_target=True, reduction="batchmean")  # KL(p^T || p^S), mean over tokens
    assert kl > 1e-3, "the student's predictions differ from the teacher's"
    assert_close(with_kl - hidden_only, kl)
    assert_close(end_to_end_loss(student, teacher, inputs, logits_weight=2.5) - hidden_only, 2.5 * kl)


def test_the_kl_term_is_zero_at_identity_and_absent_without_a_masked_lm_head() -> None:
    teacher = _teacher()
    inputs = _inputs(teacher.config.pad_token_id)
    twin = _copy(teacher)
    assert end_to_end_loss(twin, teacher, inputs, logits_weight=1.0) == end_to_end_loss(
        twin, teacher, inputs, logits_weight=0.0
    )
    encoder = _teacher(LinformerModel)  # no logits: the hidden states alone
    student = _student(encoder)
    assert end_to_end_loss(student, encoder, inputs, logits_weight=1.0) == end_to_end_loss(
        student, encoder, inputs, logits_weight=0.0
    )


def test_the_embedding_term_is_one_minus_the_cosine_of_the_mean_pooled_last_states() -> None:
    teacher = _teacher(LinformerModel)
    student = _student(teacher)
    inputs = _inputs(teacher.config.pad_token_id)
    base = end_to_end_loss(student, teacher, inputs, logits_weight=0.0)
    with torch.no_grad():
        pooled = [
            sentence_embedding(model(**inputs).last_hidden_state, inputs["attention_mask"])
            for model in (student, teacher)
        ]
    term = 1 - F.cosine_similarity(*pooled).mean()
    assert term > 1e-4
    assert_close(end_to_end_loss(student, teacher, inputs, 0.0, embedding_weight=2.0) - base, 2.0 * term)


def test_end_to_end_loss_ignores_padding_and_hidden_states_count_every_layer() -> None:
    teacher = _teacher()
    student = _student(teacher)
    inputs = _inputs(teacher.config.pad_token_id)
    loss = end_to_end_loss(student, teacher, inputs, logits_weight=1.0, embedding_weight=1.0)
    assert_close(end_to_end_loss(student, teacher, _other_padding(inputs), 1.0, 1.0), loss)
    real = inputs["attention_mask"].bool()
    with torch.no_grad():
        got = student(**inputs, output_hidden_states=True).hidden_states[1:]
        want = teacher(**inputs, output_hidden_states=True).hidden_states[1:]
    per_layer = [relative_error(s, t, real) for s, t in zip(got, want, strict=True)]
    assert_close(end_to_end_loss(student, teacher, inputs, 0.0), torch.stack(per_layer).mean())
    assert min(per_layer) > 0
