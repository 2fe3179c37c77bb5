"""`LinformerForMaskedLM(logits_for="labelled")`: the LM head at the labelled positions only.

The fast path (head on the m labelled positions) against the reference (head on all b x n positions,
HF's cross-entropy with ignore_index=-100): same loss, same gradients, logits = the reference's rows.
"""

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import tiny_linformer_config
from transformers import TrainingArguments

from linformer_kit.models import LinformerForMaskedLM
from linformer_kit.train.pretrain import MaskedLMTrainer


def _model_and_batch(dtype: torch.dtype = torch.float64):
    torch.manual_seed(0)
    model = LinformerForMaskedLM(tiny_linformer_config()).to(dtype).train()
    ids, mask = padded_batch(model.config.pad_token_id)  # (3, 16), padding in rows 1 and 2
    labels = torch.full_like(ids, -100)
    picked = torch.rand(ids.shape, generator=torch.Generator().manual_seed(1)) < 0.3
    labels[picked & mask.bool()] = ids[picked & mask.bool()]  # ~30% of the real tokens
    return model, ids, mask, labels


def _grads(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}


def test_labelled_logits_give_the_reference_loss_logits_and_gradients() -> None:
    model, ids, mask, labels = _model_and_batch()
    torch.manual_seed(2)  # dropout is 0 in the tiny config; seeded anyway
    reference = model(input_ids=ids, attention_mask=mask, labels=labels)
    reference.loss.backward()
    expected_grads = _grads(model)
    model.zero_grad()

    fast = model(input_ids=ids, attention_mask=mask, labels=labels, logits_for="labelled")
    fast.loss.backward()

    labelled = labels.ne(-100)
    assert fast.logits.shape == (int(labelled.sum()), model.config.vocab_size)
    torch.testing.assert_close(fast.logits, reference.logits[labelled])
    torch.testing.assert_close(fast.loss, reference.loss)
    grads = _grads(model)
    assert grads.keys() == expected_grads.keys()
    for name, grad in grads.items():
        torch.testing.assert_close(grad, expected_grads[name], msg=name)


def test_labelled_logits_need_labels_and_a_known_choice() -> None:
    model, ids, mask, _ = _model_and_batch()
    with pytest.raises(ValueError, match='logits_for="labelled" needs labels'):
        model(input_ids=ids, attention_mask=mask, logits_for="labelled")
    with pytest.raises(ValueError, match=r"logits_for must be one of \('all', 'labelled'\), got 'masked'"):
        model(input_ids=ids, attention_mask=mask, logits_for="masked")


def test_pretraining_trainer_loss_is_the_models_default_loss(tmp_path) -> None:
    model, ids, mask, labels = _model_and_batch(torch.float32)
    inputs = {"input_ids": ids, "attention_mask": mask, "labels": labels}
    trainer = MaskedLMTrainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to=[]))
    loss, outputs = trainer.compute_loss(model, inputs, return_outputs=True)
    torch.testing.assert_close(loss, model(**inputs).loss)
    assert outputs.logits.shape == (int(labels.ne(-100).sum()), model.config.vocab_size)
