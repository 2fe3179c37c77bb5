"""Host reads of a forward off the CPU: a layer reads no mask value there, the model one a forward.

On a GPU each read of a tensor's value (`bool(mask.all())`, `.item()`, `nonzero`) waits for the device. The
model reads once a forward, to drop a mask of real tokens only (`without_full_mask`); its layers read none,
whatever the batch's padding (nn/exact_rows.py, `reads_on_host`). Here, on a CPU, the off-CPU path is taken by
patching that one predicate, and the reads are counted as the ops that return a value to the host; on a GPU,
`torch.cuda.set_sync_debug_mode("error")` turns any sync into an error.
"""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.batches import length_mask
from tests.fixtures.models import VOCAB_SIZE, tiny_linformer_config
from torch.utils._python_dispatch import TorchDispatchMode

import linformer_kit.models.modeling_linformer as modeling
from linformer_kit.models import LinformerModel
from linformer_kit.nn import LinformerSelfAttention, attention, exact_rows

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
    """Counts the ops of HOST_READS run while it is active (`count`)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
        self.count += func.overloadpacket._qualified_op_name.replace("::", ".") in HOST_READS
        return func(*args, **(kwargs or {}))


@pytest.fixture
def off_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every module that asks `reads_on_host` is told no: the path a GPU takes."""
    for module in (attention, exact_rows):  # the layer's drop of a full mask; the row router's
        monkeypatch.setattr(module, "reads_on_host", lambda mask: False)


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


@pytest.mark.usefixtures("off_cpu")
@pytest.mark.parametrize("overrides", CONFIGS.values(), ids=CONFIGS.keys())
def test_a_padded_forward_off_the_cpu_reads_once(overrides: dict) -> None:
    model = _model(overrides)
    ids, mask = _batch()
    with torch.no_grad(), HostReads() as reads:
        model(input_ids=ids, attention_mask=mask)
    assert reads.count == 1, f"{reads.count} host reads: the model's one, and {reads.count - 1} by the layers"


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
        monkeypatch.setattr(modeling, "_key_padding_mask", lambda mask: mask.bool())  # the model's one read
        torch.cuda.set_sync_debug_mode("error")
        try:
            model(input_ids=ids, attention_mask=mask)
        finally:
            torch.cuda.set_sync_debug_mode("default")
