"""The one table of attention cores and the one "auto" (nn/cores.py): what each name gives, what "auto" picks
for each rule of its docstring, and that a model's config chooses the core of every layer."""

from __future__ import annotations

import pytest
import torch

from linformer_kit.nn import ATTENTION_BACKENDS, LinformerSelfAttention, local_native
from linformer_kit.nn.backends import blocked_attention, eager_attention, sdpa_attention
from linformer_kit.nn.cores import BLOCKED_MAX_KEYS_WITH_GRAD, CORES, choose
from linformer_kit.nn.local import dense_local_attention, flex_local_attention, split_local_attention
from linformer_kit.nn.local_blocks import banded_attention, sdpa_local_attention
from linformer_kit.nn.local_native import native_local_attention


def test_the_table_names_every_backend_but_auto_with_the_reference_at_eager() -> None:
    assert set(CORES) == set(ATTENTION_BACKENDS) - {"auto"}
    assert CORES["eager"] == (eager_attention, dense_local_attention)
    assert CORES["blocked"] == (blocked_attention, banded_attention)
    assert CORES["sdpa"] == (sdpa_attention, sdpa_local_attention)
    # the window cores change the window alone: one unmasked key set is SDPA's own case
    assert CORES["split"].plain is CORES["flex"].plain is CORES["native"].plain is sdpa_attention
    assert CORES["native"].window is native_local_attention


def _pick(backend: str, q: torch.Tensor, k: torch.Tensor | None = None, **kwargs) -> str:
    k = q if k is None else k
    return choose(backend, q, k, k, **kwargs)


@pytest.mark.parametrize(
    ("dtype", "want"), [(torch.bfloat16, "blocked"), (torch.float32, "sdpa"), (torch.float16, "sdpa")]
)
def test_plain_auto_picks_blocked_for_bf16_on_cpu_only(dtype: torch.dtype, want: str) -> None:
    q = torch.zeros(1, 1, 4, 2, dtype=dtype)
    assert _pick("auto", q, window=False) == want
    assert _pick("eager", q, window=False) == "eager"
    assert _pick("sdpa", q, window=False) == "sdpa"


def test_plain_auto_trains_many_keys_in_sdpa_whose_backward_keeps_no_n_by_m_weights() -> None:
    q = torch.zeros(1, 1, 4, 2, dtype=torch.bfloat16)
    few = torch.zeros(1, 1, BLOCKED_MAX_KEYS_WITH_GRAD, 2, dtype=torch.bfloat16)
    many = torch.zeros(1, 1, BLOCKED_MAX_KEYS_WITH_GRAD + 1, 2, dtype=torch.bfloat16)
    trained_values = many.clone().requires_grad_()  # a frozen query side: the values still train
    assert choose("auto", q, few, few.clone().requires_grad_(), window=False) == "blocked"
    assert choose("auto", q, many, trained_values, window=False) == "sdpa"
    assert choose("auto", q, many, many, window=False) == "blocked"  # nothing to keep for a backward
    with torch.no_grad():  # inference keeps nothing: the blocked core at any m
        assert choose("auto", q, many, trained_values, window=False) == "blocked"


@pytest.mark.parametrize("shape", [(0, 1, 4, 2), (1, 1, 0, 2)])
def test_plain_auto_takes_sdpa_for_an_empty_batch_or_sequence(shape: tuple[int, ...]) -> None:
    assert _pick("auto", torch.zeros(*shape, dtype=torch.bfloat16), window=False) == "sdpa"


@pytest.mark.parametrize("capability", ["AVX512", "AVX2", "DEFAULT"])
def test_window_auto_picks_what_its_docstring_says_on_a_cpu(capability: str, monkeypatch) -> None:
    """A CPU forward in float32 takes the native kernel where PyTorch runs AVX-512 or AVX2, the split core
    elsewhere and with gradients. The kernel is taken as built here (a failed build: tests/nn/test_local_native.py), so
    the expected core is fixed by the capability alone, not read from the readiness under test."""
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: capability)
    monkeypatch.setattr(local_native, "_native_library", lambda: True)
    forward = {"AVX512": "native", "AVX2": "native", "DEFAULT": "split"}[capability]
    small, wide = torch.randn(1, 2, 8, 32), torch.randn(1, 2, 8, 64)
    names = ("eager", "blocked", "sdpa", "split", "native", "flex", "auto")
    assert [_pick(b, small, window=True) for b in names] == [*names[:-1], forward]  # a CPU call, no dropout
    assert _pick("auto", small.double(), window=True) == "split"  # float64: not the kernel's
    assert _pick("auto", wide.requires_grad_(), window=True) == "split"  # a backward: the fused one
    assert _pick("auto", wide, window=True, dropout_p=0.1) == "blocked"  # the fused CPU kernel has no dropout
    assert _pick("sdpa", wide, window=True, dropout_p=0.1) == "sdpa"
    assert _pick("eager", wide, window=True, dropout_p=0.1) == "eager"


def test_window_auto_takes_split_on_a_cpu_with_a_backward() -> None:
    """Frozen queries with trained values (LoRA on the value linear) still run a backward: the split core's
    fused one (nn/local_split.py, `FusedWindow`); SDPA's query blocks off the CPU."""
    q, kv = torch.randn(1, 2, 8, 32), torch.randn(1, 2, 8, 32)
    assert choose("auto", q, kv, kv.clone().requires_grad_(), window=True) == "split"


def test_a_symbolic_length_takes_the_banded_window_core_but_eager_keeps_the_reference() -> None:
    """SDPA's block count is a Python int: under torch.export every window core but the reference is banded;
    the plain softmax takes SDPA (no Python blocks) where "auto" would have taken the blocked core."""
    seen: dict[tuple[str, bool], str] = {}

    class Pick(torch.nn.Module):
        def forward(self, q: torch.Tensor) -> torch.Tensor:
            for backend in ("auto", "sdpa", "blocked", "eager", "split", "native", "flex"):
                for window in (True, False):
                    seen[backend, window] = _pick(backend, q, window=window)
            return q * 2

    q = torch.randn(1, 2, 8, 32, dtype=torch.bfloat16)
    torch.export.export(Pick(), (q,), dynamic_shapes={"q": {2: torch.export.Dim("n", min=2, max=64)}})
    assert {b: name for (b, window), name in seen.items() if window} == {
        "auto": "blocked", "sdpa": "blocked", "blocked": "blocked", "eager": "eager", "split": "blocked",
        "native": "blocked", "flex": "blocked",
    }  # fmt: skip
    assert seen["auto", False] == "sdpa"


def test_a_layer_runs_the_core_its_backend_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer reads the table: a core swapped in the table is the one a forward calls."""
    calls: list[str] = []

    def counting(name: str, fn):
        def wrapped(*args, **kwargs):
            calls.append(name)
            return fn(*args, **kwargs)

        return wrapped

    table = {name: type(core)(counting(f"{name}.plain", core.plain), counting(f"{name}.window", core.window))
             for name, core in CORES.items()}  # fmt: skip
    monkeypatch.setattr("linformer_kit.nn.attention.CORES", table)
    x = torch.randn(2, 16, 32)
    with torch.no_grad():
        LinformerSelfAttention(32, 4, 16, 4, backend="blocked")(x)
        LinformerSelfAttention(32, 4, 16, 4, backend="split", local_window=2)(x)
    assert calls == ["blocked.plain", "split.window"]


@pytest.mark.gpu
def test_window_auto_keeps_sdpa_on_cuda_until_a_gpu_times_flex() -> None:
    """No GPU has timed flex against SDPA's window (issue "On a GPU"): "auto" takes only measured rules."""
    q = torch.randn(1, 2, 8, 32, device="cuda")
    assert _pick("auto", q, window=True) == "sdpa"
    assert _pick("flex", q, window=True) == "flex"


def test_window_auto_keeps_a_cpu_off_flex_and_flex_names_its_core() -> None:
    q = torch.randn(1, 2, 8, 32)
    with torch.no_grad():
        assert _pick("auto", q, window=True) != "flex"  # measured slower there (nn/cores.py)
    assert CORES[_pick("flex", q, window=True)].window is flex_local_attention
    assert CORES["split"].window is split_local_attention
