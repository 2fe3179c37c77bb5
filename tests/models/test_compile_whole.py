"""A windowed student with exact_length compiles whole: no graph break on the exact path (n <= exact_length)
nor on the window path (n > exact_length), padded or not (issue "One kernel for the window", part 3)."""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.batches import length_mask
from tests.fixtures.models import VOCAB_SIZE, tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerModel

LONGEST, T = 64, 24


def _student() -> LinformerModel:
    torch.manual_seed(0)
    config = tiny_linformer_config(
        max_position_embeddings=LONGEST + 2,
        projected_length=8,
        local_window=4,
        global_tokens=1,
        exact_length=T,
    )
    return LinformerModel(config).eval()


@pytest.mark.parametrize("n", [16, LONGEST])  # the exact path, the window path
@pytest.mark.parametrize("padded", [False, True])
def test_the_student_has_no_graph_break(n: int, padded: bool) -> None:
    model = _student()
    ids = torch.randint(5, VOCAB_SIZE, (3, n))
    mask = length_mask([n, n - 3, 5] if padded else [n] * 3, n).long()
    explained = torch._dynamo.explain(model)(input_ids=ids, attention_mask=mask)
    assert explained.graph_break_count == 0, explained.break_reasons
    torch._dynamo.reset()


@pytest.mark.slow  # one inductor compile (~20 s on 2 cores)
def test_the_compiled_student_equals_eager_on_a_mixed_batch() -> None:
    """A batch with a long row and short rows: the short ones exact, the long one projected, in one graph."""
    model = _student()
    ids = torch.randint(5, VOCAB_SIZE, (3, LONGEST))
    mask = length_mask([LONGEST, T, 5], LONGEST)
    with torch.no_grad():
        eager = model(input_ids=ids, attention_mask=mask.long()).last_hidden_state
        compiled = torch.compile(model, fullgraph=True)(
            input_ids=ids, attention_mask=mask.long()
        ).last_hidden_state
    assert_close(compiled[mask], eager[mask], rtol=1e-4, atol=1e-4)
    torch._dynamo.reset()


@pytest.mark.parametrize("room", ["long layers", "long adapters"])
def test_a_compiled_model_with_long_weights_reads_each_row_as_alone(room: str) -> None:
    """The sync-free path for real: traced whole (dynamo and AOT autograd, no inductor), a padded batch
    mixing rows past T with rows up to it, each row equal to the same row read alone and unpadded in eager
    mode (its own plan: one stack, one path). A row up to T must not read the long weights, a longer one must."""
    torch.manual_seed(0)
    overrides = {"long_layers": True} if room == "long layers" else {"long_adapter_rank": 2}
    config = tiny_linformer_config(max_position_embeddings=LONGEST + 2, projected_length=8, local_window=4,
                                   global_tokens=1, exact_length=T, **overrides)  # fmt: skip
    model = LinformerModel(config).double().eval()
    with torch.no_grad():  # long weights unlike the short ones (a fresh copy or a zero B would equal them)
        for name, p in model.named_parameters():
            if ".long_layer." in name or (".long_adapters." in name and name.endswith("up.weight")):
                p.add_(0.05 * torch.randn_like(p))
    lengths = [LONGEST, T + 3, T, 5]
    ids = torch.randint(5, VOCAB_SIZE, (len(lengths), LONGEST))
    mask = length_mask(lengths, LONGEST).long()
    with torch.no_grad():
        compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
        together = compiled(input_ids=ids, attention_mask=mask).last_hidden_state
        for row, length in enumerate(lengths):
            alone = model(input_ids=ids[row : row + 1, :length]).last_hidden_state[0]
            assert_close(together[row, :length], alone, rtol=1e-10, atol=1e-10, msg=f"row of {length}")
    torch._dynamo.reset()
