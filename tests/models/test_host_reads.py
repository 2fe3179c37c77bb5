"""Host reads of a forward: the model reads once a forward, on any device; a bare layer none off the CPU.

On a GPU each read of a tensor's value (`bool(mask.all())`, `.item()`, `nonzero`, a copy to the host) waits for
the device. The model plans once a forward (nn/plan.py): one read of the rows' flags (every token real? more
than exact_length?), and its layers read none, whatever the batch's padding. A bare layer reads on a CPU in
eager mode only (`reads_on_host`). Here, on a CPU, the off-CPU path is taken by patching that one predicate, and
the reads are counted as the ops that return a value to the host plus the plan's copies to the host
(`read_on_host`); on a GPU, `torch.cuda.set_sync_debug_mode("error")` turns any sync into an error.
"""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.batches import length_mask
from tests.fixtures.models import VOCAB_SIZE, tiny_linformer_config
from torch.utils._python_dispatch import TorchDispatchMode

from linformer_kit.models import (
    LinformerForMaskedLM,
    LinformerForSequenceClassification,
    LinformerForTokenClassification,
    LinformerModel,
)
from linformer_kit.nn import LinformerSelfAttention, plan

N, T = 32, 12
LENGTHS = [N, T + 4, T, 5]  # padded, mixing rows past T with rows up to it
CONFIGS = {
    "projected": {},
    "exact_length": {"exact_length": T},
    "window": {"exact_length": T, "local_window": 4, "global_tokens": 1},
    "long layers": {"exact_length": T, "long_layers": True},
    "long adapters": {"exact_length": T, "long_adapter_rank": 2},
}
# ops whose result the host must wait for: a scalar read (bool, item, int) or an output sized by values
HOST_READS = {"aten._local_scalar_dense", "aten.nonzero", "aten.masked_select", "aten.unique_dim"}


class HostReads(TorchDispatchMode):
    """Counts the ops of HOST_READS run while it is active, and the plan's reads (`count`)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.count += func.overloadpacket._qualified_op_name.replace("::", ".") in HOST_READS
        return func(*args, **(kwargs or {}))


@pytest.fixture(autouse=True)
def counted_plan_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plan's copy to the host (a sync on a GPU, no aten op on a CPU) counts as a read."""
    read = plan.read_on_host

    def counted(flags: torch.Tensor) -> list[bool]:
        mode = torch.utils._python_dispatch._get_current_dispatch_mode()
        if isinstance(mode, HostReads):
            mode.count += 1
        with torch.utils._python_dispatch._disable_current_modes():
            return read(flags)

    monkeypatch.setattr(plan, "read_on_host", counted)


@pytest.fixture
def off_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """`reads_on_host` says no: the path a GPU takes."""
    monkeypatch.setattr(plan, "reads_on_host", lambda mask: False)


def _model(overrides: dict) -> LinformerModel:
    torch.manual_seed(0)
    return LinformerModel(tiny_linformer_config(max_position_embeddings=N + 2, **overrides)).eval()


def _batch(device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    ids = torch.randint(5, VOCAB_SIZE, (len(LENGTHS), N))
    return ids.to(device), length_mask(LENGTHS, N).long().to(device)


def test_the_counter_sees_a_read() -> None:
    with HostReads() as reads:
        bool(torch.ones(3, dtype=torch.bool).all())
        torch.tensor([True, False]).nonzero()
    assert reads.count == 2


@pytest.mark.parametrize("where", ["cpu", "off the cpu"])
@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_padded_forward_reads_once(overrides: dict, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One read a forward, the plan's, for every layer and both stacks (on a CPU each layer read twice or
    three times before the plan, and the long layers' router three times more)."""
    if where != "cpu":
        monkeypatch.setattr(plan, "reads_on_host", lambda mask: False)
    model = _model(overrides)
    ids, mask = _batch()
    with torch.no_grad(), HostReads() as reads:
        model(input_ids=ids, attention_mask=mask)
    assert reads.count == 1, f"{reads.count} host reads: the plan's one, and {reads.count - 1} more"


HEADS = {  # every model with a head, and each pooling of the sequence head
    "masked LM": (LinformerForMaskedLM, {}),
    "sequence, cls": (LinformerForSequenceClassification, {"classifier_pooling": "cls"}),
    "sequence, mean": (LinformerForSequenceClassification, {"classifier_pooling": "mean"}),
    "token": (LinformerForTokenClassification, {}),
}


@pytest.mark.parametrize("where", ["cpu", "off the cpu"])
@pytest.mark.parametrize("head", HEADS.values(), ids=HEADS.keys())
def test_every_head_and_pooling_reads_once(head: tuple, where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The heads read no mask value of their own (mean pooling read it again before: 2 reads a forward)."""
    if where != "cpu":
        monkeypatch.setattr(plan, "reads_on_host", lambda mask: False)
    model_class, fields = head
    torch.manual_seed(0)
    config = tiny_linformer_config(max_position_embeddings=N + 2, exact_length=T, num_labels=3, **fields)
    model = model_class(config).eval()
    ids, mask = _batch()
    with torch.no_grad(), HostReads() as reads:
        model(input_ids=ids, attention_mask=mask)
    assert reads.count == 1, f"{reads.count} host reads: the plan's one, and {reads.count - 1} more"


@pytest.mark.usefixtures("off_cpu")
def test_long_layers_off_the_cpu_run_each_row_through_one_stack() -> None:
    """The plan's read tells the rows apart, so a padded batch of long and short rows runs each stack on its
    own rows: the long layers' FLOPs once, not both stacks on every row and a select."""
    model = _model(CONFIGS["long layers"])
    seen: dict[str, list[int]] = {"layer": [], "long_layer": []}
    for name in seen:
        for layer in getattr(model.encoder, name):
            layer.register_forward_hook(lambda module, args, out, name=name: seen[name].append(len(args[0])))
    ids, mask = _batch()
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
    long_rows = sum(length > T for length in LENGTHS)
    layers = model.config.num_hidden_layers
    assert seen == {"layer": [len(LENGTHS) - long_rows] * layers, "long_layer": [long_rows] * layers}


@pytest.mark.usefixtures("off_cpu")
@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_bare_layer_off_the_cpu_reads_no_mask_value(overrides: dict) -> None:
    options = {k: v for k, v in overrides.items() if k != "long_layers"}
    rank = options.pop("long_adapter_rank", None)
    layer = LinformerSelfAttention(32, 4, N, 8, long_adapter_rank=rank, **options).eval()
    x = torch.randn(len(LENGTHS), N, 32)
    for mask in (length_mask(LENGTHS, N), torch.ones(len(LENGTHS), N, dtype=torch.bool)):  # padded, full
        with torch.no_grad(), HostReads() as reads:
            layer(x, mask)
        assert reads.count == 0


@pytest.mark.gpu
@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_no_layer_syncs_on_a_gpu(overrides: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(overrides).cuda()
    ids, mask = _batch("cuda")
    with torch.no_grad():
        model(input_ids=ids, attention_mask=mask)  # first call: caches and kernels built
        torch.cuda.synchronize()
        reads: list[int] = []
        read = plan.read_on_host

        def the_plans_read(flags: torch.Tensor) -> list[bool]:  # the one sync a forward, allowed
            reads.append(1)
            torch.cuda.set_sync_debug_mode("default")
            try:
                return read(flags)
            finally:
                torch.cuda.set_sync_debug_mode("error")

        monkeypatch.setattr(plan, "read_on_host", the_plans_read)
        torch.cuda.set_sync_debug_mode("error")
        try:
            model(input_ids=ids, attention_mask=mask)
        finally:
            torch.cuda.set_sync_debug_mode("default")
    assert len(reads) == 1
