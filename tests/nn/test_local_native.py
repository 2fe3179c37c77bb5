"""The native core (nn/local_native.py, csrc/local_window.cpp): its kernel against the float64 reference over
every case a key set names (padding with NaN behind it, slot masks per row and per head, rows without a
window, global tokens, w from 0 past n, head sizes 16 to 128, blocks and tiles cut anywhere, a query with no
key); every call the kernel does not take is the split core's; "auto" takes it where its docstring says; a
build that fails warns once and leaves the split core."""

from __future__ import annotations

import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import LinformerSelfAttention, local_native
from linformer_kit.nn.cores import choose
from linformer_kit.nn.keys import KeySet, Slots
from linformer_kit.nn.local import dense_local_attention, split_local_attention
from linformer_kit.nn.local_native import native_local_attention, native_ready
from tests.fixtures.batches import length_mask


@pytest.fixture(scope="module", autouse=True)
def kernel() -> None:
    """The kernel built (or loaded from the cache); a machine without a C++ compiler skips, one with it fails."""
    q = torch.zeros(1, 1, 1, 32)
    if not native_ready(q, q, q):
        if shutil.which(os.environ.get("CXX", "c++")) is None:
            pytest.skip("no C++ compiler: the native core runs the split core")
        pytest.fail("a C++ compiler is here, yet the native window kernel did not build")


def _case(b: int, n: int, d: int, s: int, w: int, g: int, *, lengths=None, keep=None, windowed=None):
    """float32 q, k, v (b, h, n, d) as views of (b, n, h, d) (the linears' layout), and their KeySet; NaN in
    K and V behind the padding (it must not reach any output)."""
    h = 2
    q, k, v = (torch.randn(b, n, h, d).transpose(1, 2) for _ in range(3))
    slot_k, slot_v = torch.randn(b, h, s, d), torch.randn(b, h, s, d)
    real = None if lengths is None else length_mask(lengths, n)
    if real is not None:
        k.masked_fill_(~real[:, None, :, None], float("nan"))
        v.masked_fill_(~real[:, None, :, None], float("nan"))
    slot_keep = None
    if keep is not None:
        slot_keep = torch.rand(b, h if keep == "per-head" else 1, 1, s) > 0.4
        slot_keep[..., 0] = True
    rows = None if windowed is None else torch.tensor(windowed)
    return (q, k, v), KeySet(Slots(slot_k, slot_v, slot_keep, rows), real, w, g)


def _reference(tensors, keyset: KeySet) -> torch.Tensor:
    wide = [t.double() for t in tensors]
    slots = keyset.slots._replace(keys=keyset.slots.keys.double(), values=keyset.slots.values.double())
    return dense_local_attention(*wide, keyset._replace(slots=slots), scale=tensors[0].shape[-1] ** -0.5)[0]


CASES = {  # (b, n, d, s, w, g), keyword arguments of `_case`
    "one row": ((1, 200, 32, 16, 5, 1), {}),
    "the student's shape": ((1, 600, 32, 128, 64, 1), {}),
    "padding, row masks, rows without a window": (
        (3, 130, 64, 8, 3, 0), {"lengths": [130, 57, 1], "keep": "rows", "windowed": [True, False, True]},
    ),
    "per-head slot masks, two global tokens": (
        (2, 77, 16, 5, 2, 2), {"keep": "per-head", "windowed": [False, True]},
    ),
    "a window past n": ((1, 10, 32, 4, 64, 3), {}),
    "w = 0": ((2, 50, 32, 6, 0, 1), {"lengths": [50, 20]}),
    "d = 128, wide window": ((2, 300, 128, 7, 100, 0), {"lengths": [300, 150]}),
    "d = 48, many blocks": ((2, 1000, 48, 20, 17, 2), {"lengths": [1000, 333]}),
    "one token": ((2, 1, 32, 3, 4, 1), {"lengths": [1, 1]}),
}  # fmt: skip


@pytest.mark.parametrize("block", [16, 48, 256])
@pytest.mark.parametrize("name", list(CASES))
def test_the_kernel_equals_the_float64_reference(
    name: str, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks of 16 and 48 cut the tiles and the band at other places than the default's."""
    monkeypatch.setattr(local_native, "NATIVE_BLOCK", block)
    torch.manual_seed(0)
    shape, kwargs = CASES[name]
    tensors, keyset = _case(*shape, **kwargs)
    with torch.no_grad():
        assert native_ready(*tensors)
        out, weights = native_local_attention(*tensors, keyset, scale=shape[2] ** -0.5)
    assert weights is None
    assert out.dtype == torch.float32
    expected = _reference(tensors, keyset)
    real = (
        keyset.real if keyset.real is not None else torch.ones(out.shape[0], out.shape[2], dtype=torch.bool)
    )
    real = real[:, None, :, None].expand_as(out)  # a pad query's output is read by nothing: finite suffices
    assert torch.isfinite(out).all()
    assert_close(out[real].double(), expected[real], rtol=1e-5, atol=2e-6)


def test_a_query_with_no_key_gets_zero() -> None:
    """A row without a window whose slots are all dropped: nothing to attend to, out 0 (as in the split core)."""
    torch.manual_seed(0)
    tensors, keyset = _case(2, 40, 32, 4, 3, 0, windowed=[True, False])
    keep = torch.ones(2, 1, 1, 4, dtype=torch.bool)
    keep[1] = False
    keyset = keyset._replace(slots=keyset.slots._replace(keep=keep))
    with torch.no_grad():
        out = native_local_attention(*tensors, keyset, scale=0.2)[0]
        split = split_local_attention(*tensors, keyset, scale=0.2)[0]
    assert_close(out[1], torch.zeros_like(out[1]), rtol=0, atol=0)
    assert_close(out, split, rtol=1e-5, atol=2e-6)


def _requires_grad(tensors):
    return [t.detach().clone().requires_grad_() for t in tensors]


@pytest.mark.parametrize(
    "call",
    ["gradients", "slot gradients", "float64", "head size 8", "no window", "dropout", "while tracing",
     "q strided in d", "v strided in d"],
)  # fmt: skip
def test_every_call_the_kernel_does_not_take_is_the_split_cores(call: str, monkeypatch) -> None:
    torch.manual_seed(0)
    d = 8 if call == "head size 8" else 32
    tensors, keyset = _case(2, 60, d, 5, 4, 1, lengths=[60, 31])
    tensors = [t.nan_to_num() for t in tensors]
    dropout = 0.0
    if call == "gradients":
        tensors = _requires_grad(tensors)
    if call == "slot gradients":  # E and F training on frozen linears: q, k, v need none, the slots do
        slots = keyset.slots
        keyset = keyset._replace(
            slots=slots._replace(keys=slots.keys.requires_grad_(), values=slots.values.requires_grad_())
        )
    if call == "float64":
        tensors = [t.double() for t in tensors]
        slots = keyset.slots
        keyset = keyset._replace(slots=slots._replace(keys=slots.keys.double(), values=slots.values.double()))
    if call == "no window":
        keyset = keyset._replace(window=None)
    if call == "dropout":
        dropout = 0.5
    if call in ("q strided in d", "v strided in d"):  # views the op refuses: `native_ready` must too
        i = 0 if call[0] == "q" else 2
        tensors[i] = tensors[i].transpose(-1, -2).contiguous().transpose(-1, -2)
    if call == "while tracing":
        monkeypatch.setattr(local_native, "tracing", lambda: True)
    calls = []
    monkeypatch.setattr(torch.ops, "linformer_kit_native", _Spy(calls), raising=False)
    torch.manual_seed(1)
    out = native_local_attention(*tensors, keyset, scale=0.3, dropout_p=dropout)[0]
    torch.manual_seed(1)
    split = split_local_attention(*tensors, keyset, scale=0.3, dropout_p=dropout)[0]
    assert calls == []
    assert_close(out, split, rtol=0, atol=0)
    if call == "gradients":
        out.sum().backward()
        assert all(t.grad is not None for t in tensors)
    if call == "slot gradients":
        out.sum().backward()
        assert keyset.slots.keys.grad is not None
        assert keyset.slots.values.grad is not None


class _Spy:
    """Stands in for the kernel's op namespace: records a call."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    @property
    def local_window(self):
        self.calls.append("local_window")
        raise AssertionError("the kernel ran")


def test_auto_takes_the_kernel_for_a_float32_cpu_forward_on_avx512_and_avx2_only(monkeypatch) -> None:
    q = torch.randn(1, 2, 8, 32)
    for capability, core in [("AVX512", "native"), ("AVX2", "native"), ("DEFAULT", "split")]:
        monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda c=capability: c)
        with torch.no_grad():
            assert choose("auto", q, q, q, window=True) == core
        assert choose("auto", q, q, q.clone().requires_grad_(), window=True) == "split"  # a backward
        with torch.no_grad():
            assert choose("auto", q.double(), q.double(), q.double(), window=True) == "split"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the build sees OpenMP on Linux only")
def test_the_kernel_runs_its_tasks_on_pytorchs_threads() -> None:
    """Its build sees OpenMP (without it at::parallel_for ran every task on the calling thread): the library calls
    libgomp's parallel region, bound to the one OpenMP runtime this process has loaded (PyTorch's), and its
    output is the same however many threads split the tasks."""
    from torch.utils import cpp_extension

    name = local_native.native_build_name()
    library = Path(cpp_extension._get_build_directory(name, verbose=False)) / f"{name}.so"
    assert b"GOMP_parallel" in library.read_bytes()
    # a pip wheel's runtime: the one the loader bound (a wheel's renamed libgomp-<hash>.so is apart)
    shipped = Path(torch.__file__).parent / "lib" / "libgomp.so.1"
    if shipped.is_file():
        maps = Path("/proc/self/maps").read_text().splitlines()
        mapped = {line.split()[-1] for line in maps if line.endswith("/libgomp.so.1")}
        assert mapped == {str(shipped.resolve())}
    (q, k, v), keyset = _case(2, 700, 32, 16, 20, 1, lengths=[700, 300])
    threads = torch.get_num_threads()
    outs = []
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            outs.append(native_local_attention(q, k, v, keyset, scale=32**-0.5)[0])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(outs[0], outs[1])


def test_a_layer_on_the_native_core_equals_the_reference() -> None:
    torch.manual_seed(0)
    layer = LinformerSelfAttention(64, 4, 300, 16, local_window=20, global_tokens=1).eval()
    x = torch.randn(2, 300, 64)
    mask = length_mask([300, 201], 300)
    with torch.no_grad():
        native = layer(x, mask, backend="native")
        eager = layer.double()(x.double(), mask, backend="eager")
    assert_close(native[mask].double(), eager[mask], rtol=1e-5, atol=1e-5)


@pytest.fixture
def rebuilt() -> Iterator[None]:
    local_native._native_library.cache_clear()
    yield
    local_native._native_library.cache_clear()  # the next call loads the cached build again


def test_a_failed_build_warns_once_and_leaves_the_split_core(rebuilt, monkeypatch) -> None:
    from torch.utils import cpp_extension

    def fail(**_kwargs):
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(cpp_extension, "load", fail)
    q = torch.zeros(1, 1, 4, 32)
    with pytest.warns(UserWarning, match="did not build .no compiler here.; the split core runs instead"):
        assert not native_ready(q, q, q)
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        assert not native_ready(q, q, q)
    assert later == []  # once a process
    with torch.no_grad():
        assert choose("auto", q, q, q, window=True) == "split"


def test_a_compiler_without_openmp_builds_the_kernel_on_one_thread(rebuilt, monkeypatch) -> None:
    """Where the OpenMP build fails (clang without libomp) the kernel is built again without it, with no
    warning: it runs on the calling thread, as before its build saw OpenMP."""
    from torch.utils import cpp_extension

    monkeypatch.setattr(local_native, "_OPENMP", ["-fopenmp"])
    tried = []

    def load(**kwargs) -> None:
        tried.append(kwargs["extra_cflags"])
        if "-fopenmp" in kwargs["extra_cflags"]:
            raise RuntimeError("Error building extension: omp.h not found")

    monkeypatch.setattr(cpp_extension, "load", load)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert local_native._native_library()
    assert ["-fopenmp" in flags for flags in tried] == [True, False]
    assert seen == []


def test_auto_builds_nothing_where_it_would_not_take_the_kernel(rebuilt, monkeypatch) -> None:
    """On a CPU without AVX2 "auto" keeps the split core, so it must not spend a build (or a warning) on the
    kernel."""
    from torch.utils import cpp_extension

    built = []
    monkeypatch.setattr(cpp_extension, "load", lambda **kwargs: built.append(kwargs))
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "DEFAULT")
    q = torch.zeros(1, 1, 4, 32)
    with torch.no_grad(), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert choose("auto", q, q, q, window=True) == "split"
    assert built == []
    assert seen == []


def _op_inputs(b: int = 2, n: int = 64, d: int = 32, s: int = 5) -> dict:
    """The op's arguments for a well-formed call (the keyword names of its schema)."""
    q, k, v = (torch.randn(b, n, 2, d).transpose(1, 2) for _ in range(3))
    keys, values = torch.randn(b, 2, s, d), torch.randn(b, 2, s, d)
    return dict(q=q, k=k, v=v, keys=keys, values=values, shared_ok=None, key_ok=None, w=4, g=1, block_size=256, scale=0.1)  # fmt: skip


BAD_OP_INPUTS = {  # (what changes, the message's words): each read past an end before the checks (SIGSEGV)
    "k, v of 8 positions for n = 64": (
        lambda a: a.update(k=a["k"][:, :, :8], v=a["v"][:, :, :8]), "k must have q's sizes"
    ),
    "key_ok (1, n) for b = 2": (
        lambda a: a.update(key_ok=torch.ones(1, 64, dtype=torch.bool)), r"key_ok must be .* \(b, n\) = \(2, 64\)"
    ),
    "key_ok shorter than n": (
        lambda a: a.update(key_ok=torch.ones(2, 10, dtype=torch.bool)), "key_ok must be"
    ),
    "values with fewer slots than keys": (
        lambda a: a.update(values=a["values"][:, :, :3]), r"values must be \(b, h, S, d\)"
    ),
    "keys of another head size": (lambda a: a.update(keys=torch.randn(2, 2, 5, 16)), "keys must be"),
    "keys of one row for b = 2": (lambda a: a.update(keys=a["keys"][:1], values=a["values"][:1]), "keys must be"),
    "shared_ok of 4 for S = 5": (
        lambda a: a.update(shared_ok=torch.ones(1, 1, 1, 4, dtype=torch.bool)), "shared_ok must be"
    ),
    "shared_ok float": (lambda a: a.update(shared_ok=torch.ones(1, 1, 1, 5)), "shared_ok must be"),
    "v strided in d": (
        lambda a: a.update(v=a["v"].transpose(-1, -2).contiguous().transpose(-1, -2)), "v needs unit stride in d"
    ),
    "v's position stride not k's": (lambda a: a.update(v=a["v"].contiguous()), "v's position stride"),
    "q float64": (lambda a: a.update(q=a["q"].double()), "q must be a float32 CPU tensor"),
    "q of 3 dims": (lambda a: a.update(q=a["q"][0]), "q must be a float32 CPU tensor"),
    "head size 24": (
        lambda a: a.update(**{x: a[x][..., :24] for x in ("q", "k", "v", "keys", "values")}), "multiple of 16"
    ),
    "head size 0": (
        lambda a: a.update(**{x: a[x][..., :0] for x in ("q", "k", "v", "keys", "values")}), "multiple of 16"
    ),
    "g past n": (lambda a: a.update(g=65), "g 65 must be at most n 64"),
    "a block of 10": (lambda a: a.update(block_size=10), "a positive multiple of 16"),
}  # fmt: skip


@pytest.mark.parametrize("name", list(BAD_OP_INPUTS))
def test_the_op_refuses_every_bad_shape_and_stride_before_reading(name: str) -> None:
    change, words = BAD_OP_INPUTS[name]
    arguments = _op_inputs()
    change(arguments)
    with pytest.raises(ValueError, match=words):
        torch.ops.linformer_kit_native.local_window(**arguments)


def test_the_op_takes_a_window_past_n_and_no_positions() -> None:
    """w far past n is w = n (its buffer sized by n, not w); n = 0 gives an empty output."""
    torch.manual_seed(0)
    arguments = _op_inputs()
    near = torch.ops.linformer_kit_native.local_window(**arguments)
    far = torch.ops.linformer_kit_native.local_window(**{**arguments, "w": 10**12})
    at_n = torch.ops.linformer_kit_native.local_window(**{**arguments, "w": 64})
    assert_close(far, at_n, rtol=0, atol=0)
    assert not torch.equal(near, at_n)
    empty = {**arguments, **{x: arguments[x][:, :, :0] for x in ("q", "k", "v")}, "g": 0}
    assert torch.ops.linformer_kit_native.local_window(**empty).shape == (2, 2, 0, 32)


def test_split_takes_no_positions() -> None:
    """n = 0 never reaches PyTorch's CPU flash kernel (a SIGFPE there): an empty output, in the graph."""
    tensors, keyset = _case(2, 0, 32, 4, 3, 1)
    tensors = _requires_grad(tensors)
    out = split_local_attention(*tensors, keyset, scale=0.2)[0]
    assert out.shape == (2, 2, 0, 32)
    out.sum().backward()
    assert tensors[0].grad is not None


@pytest.mark.parametrize(
    "name", ["padding, row masks, rows without a window", "per-head slot masks, two global tokens"]
)
def test_bfloat16_is_the_float32_kernel_behind_two_casts(name: str) -> None:
    """bfloat16 q, k, v and slots: exactly the kernel on their float32 values, cast back; within bfloat16's
    round-off of the float64 reference; the static rule leaves it to the split core (autotune times it)."""
    torch.manual_seed(0)
    shape, kwargs = CASES[name]
    tensors, keyset = _case(*shape, **kwargs)
    tensors = [t.nan_to_num().bfloat16() for t in tensors]
    slots = keyset.slots
    keyset = keyset._replace(slots=slots._replace(keys=slots.keys.bfloat16(), values=slots.values.bfloat16()))
    wide = [t.float() for t in tensors]
    wide_keyset = keyset._replace(slots=slots._replace(keys=slots.keys.bfloat16().float(),
                                                       values=slots.values.bfloat16().float()))  # fmt: skip
    with torch.no_grad():
        assert native_ready(*tensors)
        out = native_local_attention(*tensors, keyset, scale=shape[2] ** -0.5)[0]
        expected = native_local_attention(*wide, wide_keyset, scale=shape[2] ** -0.5)[0]
    assert out.dtype == torch.bfloat16
    assert_close(out, expected.bfloat16(), rtol=0, atol=0)
    real = (
        keyset.real if keyset.real is not None else torch.ones(out.shape[0], out.shape[2], dtype=torch.bool)
    )
    real = real[:, None, :, None].expand_as(out)
    reference = _reference(wide, wide_keyset)
    assert_close(out[real].double(), reference[real], rtol=1.6e-2, atol=1e-2)
    with torch.no_grad():
        assert choose("auto", *tensors, window=True) == "split"
