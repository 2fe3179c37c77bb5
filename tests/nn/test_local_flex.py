"""The FlexAttention window core (nn/local_flex.py) against the dense reference of nn/local.py.

Values on a CPU, through PyTorch's unfused flex (eager) and through the compiled kernel; gradients on CUDA
(PyTorch's flex has no CPU backward); the block mask: shared, and reading the key blocks its docstring
counts; the limits refused by name.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention
from linformer_kit.nn import local_flex as lf
from linformer_kit.nn.local import KeySet, Slots, dense_local_attention
from tests.fixtures.batches import length_mask

pytestmark = pytest.mark.filterwarnings("ignore:.*flex_attention.*")


def _inputs(
    n: int, slot_keep: str, padded: bool, dtype=torch.float64, device="cpu", s: int = 7, windowed: bool = True
):
    """q, k, v (3, 2, n, 16), slots, their mask, the padding mask (None: every token real), `windowed` (None:
    every row reads the window)."""
    b, h, d = 3, 2, 16
    q, k, v = (torch.randn(b, h, n, d, dtype=dtype, device=device) for _ in range(3))
    slot_k, slot_v = (torch.randn(b, h, s, d, dtype=dtype, device=device) for _ in range(2))
    keep = None
    if slot_keep != "none":
        keep = torch.rand(b, h if slot_keep == "per-head" else 1, 1, s, device=device) > 0.4
        keep[..., 0] = True  # every row keeps a slot (the projection's contract)
    real = length_mask([n, n - 21, 1], n).to(device) if padded else None
    rows = torch.tensor([True, False, True], device=device) if windowed else None  # row 1: its own tokens
    return q, k, v, Slots(slot_k, slot_v, keep, rows), real


def _compare(out: torch.Tensor, dense: torch.Tensor, real: torch.Tensor | None, atol: float) -> None:
    """Equal at every real query (a pad query's output is never read)."""
    rows = torch.ones(out.shape[0], out.shape[2], dtype=torch.bool) if real is None else real.cpu()
    rows = rows[:, None, :, None].expand_as(out)
    assert_close(out.cpu()[rows].double(), dense.cpu()[rows].double(), rtol=0, atol=atol)


@pytest.mark.parametrize("n", [50, 150])  # under one query block (Bq = 128), and blocks with the last cut
@pytest.mark.parametrize("window", [0, 16, 64, None])
@pytest.mark.parametrize("global_tokens", [0, 1, 2])
@pytest.mark.parametrize(
    ("slot_keep", "padded", "windowed"),
    [("none", False, False), ("none", False, True), ("rows", False, True), ("per-head", True, True)],
)
def test_unfused_flex_equals_the_dense_reference(
    n: int,
    window: int | None,
    global_tokens: int,
    slot_keep: str,
    padded: bool,
    windowed: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first case drops nothing (every slot kept, every token real, every row windowed): no score_mod, the
    block mask alone shapes what each query reads."""
    mods: list = []
    value_mask = lf._value_mask
    monkeypatch.setattr(lf, "_value_mask", lambda *a: mods.append(value_mask(*a)) or mods[-1])
    torch.manual_seed(0)
    q, k, v, slots, real = _inputs(n, slot_keep, padded, windowed=windowed)
    keyset = KeySet(slots, real, window, global_tokens)
    out, weights = lf.flex_window_attention(q, k, v, keyset, scale=0.3, compiled=False)
    dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    assert weights is None
    assert (mods == [None]) == (slot_keep == "none" and not padded and not windowed)
    _compare(out, dense, real, atol=1e-12)


def test_unfused_flex_in_bfloat16_is_close_to_float32() -> None:
    torch.manual_seed(0)
    q, k, v, slots, real = _inputs(150, "per-head", True)
    keyset = KeySet(slots, real, 16, 1)
    dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    half = [t.bfloat16() for t in (q, k, v)]
    half_slots = slots._replace(keys=slots.keys.bfloat16(), values=slots.values.bfloat16())
    out, _ = lf.flex_window_attention(*half, keyset._replace(slots=half_slots), scale=0.3, compiled=False)
    assert out.dtype == torch.bfloat16
    _compare(out, dense, real, atol=3e-2)


@pytest.mark.slow  # each compiles a kernel (~10-25 s on 2 cores)
@pytest.mark.parametrize(
    ("dtype", "atol", "slot_keep", "padded", "window", "global_tokens"),
    [(torch.float32, 1e-5, "per-head", True, 16, 1), (torch.bfloat16, 3e-2, "rows", False, 64, 0)],
)
def test_compiled_flex_equals_the_dense_reference(
    dtype, atol, slot_keep, padded, window, global_tokens
) -> None:
    torch.manual_seed(0)
    q, k, v, slots, real = _inputs(150, slot_keep, padded)
    keyset = KeySet(slots, real, window, global_tokens)
    dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    low = [t.to(dtype) for t in (q, k, v)]
    low_slots = slots._replace(keys=slots.keys.to(dtype), values=slots.values.to(dtype))
    out, _ = lf.flex_window_attention(*low, keyset._replace(slots=low_slots), scale=0.3, compiled=True)
    _compare(out, dense, real, atol=atol)


@pytest.mark.gpu
@pytest.mark.parametrize("window", [0, 16, 64])
@pytest.mark.parametrize("global_tokens", [0, 1, 2])
def test_flex_on_cuda_equals_the_dense_reference_with_gradients(window: int, global_tokens: int) -> None:
    torch.manual_seed(0)
    q, k, v, slots, real = _inputs(300, "per-head", True, dtype=torch.float32, device="cuda", s=64)
    leaves = [t.requires_grad_() for t in (q, k, v, slots.keys, slots.values)]
    keyset = KeySet(slots, real, window, global_tokens)
    fast, _ = lf.flex_window_attention(q, k, v, keyset, scale=0.3)
    dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    _compare(fast, dense, real, atol=1e-4)
    rows = real[:, None, :, None].expand_as(fast)
    grads = [torch.autograd.grad(out[rows].square().sum(), leaves) for out in (fast, dense)]
    for fast_grad, dense_grad in zip(*grads, strict=True):
        assert_close(fast_grad, dense_grad, rtol=1e-3, atol=1e-3)


def test_a_stack_of_layers_builds_one_block_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every layer with the same (n, s, w, g) reads the same BlockMask, built once for all calls."""
    built: list[tuple] = []
    build = lf._structure_mask
    monkeypatch.setattr(lf, "_structure_mask", lambda *key: built.append(key) or build(*key))
    lf._cached_block_mask.cache_clear()
    torch.manual_seed(0)
    layers = [
        LinformerSelfAttention(32, 2, 200, 16, local_window=8, global_tokens=1, backend="flex")
        for _ in range(3)
    ]
    x = torch.randn(2, 150, 32)
    mask = length_mask([150, 90], 150)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            for layer in layers:
                x = layer.eval()(x, mask)
    assert built == [(150, 16, 8, 1, torch.device("cpu"), lf.FLEX_BLOCK)]
    lf._cached_block_mask.cache_clear()


class _Saves(torch.autograd.Function):
    """Saves `index` for backward beside `x`, as FlexAttention saves its block mask."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        ctx.save_for_backward(x, index)
        return x * 2

    @staticmethod
    def backward(ctx, grad: torch.Tensor):  # type: ignore[override]
        return grad * 2, None


def test_a_block_mask_cached_under_inference_mode_can_be_saved_for_backward() -> None:
    """`encode` (inference mode) first, a training step at the same n after: the cached mask holds no
    inference tensors (issue "The attention core as one plan a forward")."""
    lf._cached_block_mask.cache_clear()
    with torch.inference_mode():
        first = lf.window_block_mask(150, 16, 8, 1, torch.device("cpu"))
    mask = lf.window_block_mask(150, 16, 8, 1, torch.device("cpu"))
    assert mask is first  # the cached one
    assert not any(t.is_inference() for t in (mask.kv_indices, mask.kv_num_blocks, mask.q_indices))
    x = torch.ones(3, requires_grad=True)
    _Saves.apply(x, mask.kv_indices).sum().backward()
    assert_close(x.grad, torch.full((3,), 2.0))
    lf._cached_block_mask.cache_clear()


def test_the_block_mask_cache_is_keyed_by_the_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """A script that changes FLEX_BLOCK gets a mask of the new blocks, not the cached one."""
    lf._cached_block_mask.cache_clear()
    default = lf.window_block_mask(300, 16, 8, 1, torch.device("cpu"))
    monkeypatch.setattr(lf, "FLEX_BLOCK", (64, 64))
    other = lf.window_block_mask(300, 16, 8, 1, torch.device("cpu"))
    assert default.BLOCK_SIZE == (128, 64)
    assert other.BLOCK_SIZE == (64, 64)
    lf._cached_block_mask.cache_clear()


def test_a_query_block_reads_the_key_blocks_the_docstring_counts() -> None:
    """Bq = 128, Bk = 64, s = 128, w = 64, g = 1: a query block far from both ends reads 2 slot blocks, the
    global token's block and 4 band blocks (7 x 64 = 448 keys for the 258 it needs)."""
    assert lf.FLEX_BLOCK == (128, 64)
    mask = lf._structure_mask(4096, 128, 64, 1, torch.device("cpu"))
    partial, full = mask.kv_num_blocks[0, 0], mask.full_kv_num_blocks[0, 0]  # per query block
    read = partial + full
    assert read[8].item() == 7  # rows 1 024-1 151
    assert read.max().item() == 7
    assert read[0].item() == 2 + 3  # the first block: the global token is in its band, nothing before it
    no_window = lf._structure_mask(4096, 128, None, 1, torch.device("cpu"))
    assert (no_window.kv_num_blocks + no_window.full_kv_num_blocks)[0, 0].max().item() == 3  # slots + global


def test_the_limits_are_refused_by_name() -> None:
    torch.manual_seed(0)
    q, k, v, slots, real = _inputs(50, "none", False, dtype=torch.float32)
    keyset = KeySet(slots, real, 4, 0)
    with pytest.raises(ValueError, match=r"no attention dropout, got dropout_p=0\.1"):
        lf.flex_window_attention(q, k, v, keyset, scale=0.3, dropout_p=0.1)
    q.requires_grad_()
    with pytest.raises(ValueError, match="no backward on a CPU"):
        lf.flex_window_attention(q, k, v, keyset, scale=0.3)
