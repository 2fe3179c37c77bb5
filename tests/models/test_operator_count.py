"""The exact path costs what the original costs: a student with exact_length reading inputs of at most that
many tokens runs no more aten operators than the BERT it was converted from (issue "One kernel for the
window", part 4: on all-MiniLM-L6-v2 at n = 128, batch 8, 818 against 829 on a CPU). Extra small operators
are launches on a GPU; this pins their count on the CPU."""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import BertConfig, BertModel

from linformer_kit.models.convert import from_bert


class _Count(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def _calls(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> int:
    with torch.inference_mode():
        model(**inputs)  # warm: lazy initialisation off the count
        with _Count() as count:
            model(**inputs)
    return count.calls


def test_the_exact_path_runs_no_more_operators_than_the_original() -> None:
    torch.manual_seed(0)
    config = BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=64)  # fmt: skip
    config._attn_implementation = "sdpa"
    original = BertModel(config).eval()
    student = from_bert(original, 8, "headwise", local_window=4, global_tokens=1, exact_length=64,
                        max_length=256).eval()  # fmt: skip
    ids = torch.randint(5, 99, (8, 48))
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    with torch.no_grad():
        assert torch.allclose(
            student(**inputs).last_hidden_state, original(**inputs).last_hidden_state, atol=1e-5
        )
    student_calls, original_calls = _calls(student, inputs), _calls(original, inputs)
    assert student_calls <= original_calls, (student_calls, original_calls)
