"""The native core ("native", nn/cores.py): the window's forward on a CPU in one pass of a kernel of our own
(csrc/local_window.cpp), the split core (nn/local_split.py) for every call it does not take.

Notation of nn/local.py. A task is one row, one head and `NATIVE_BLOCK` queries; its queries go in tiles of
one vector (16 with AVX-512, 8 with AVX2), a query a lane. For tile [a, a + T) and each key, one score
vector (the T queries against the key) over the S = s + g shared keys [E K ; K_j, j < g] and the T + 2w band
keys at positions [a - w, a + T + w), read in place from K (the linears' (b, n, h, d) output, no copy);
then, per key, its mask (the slots' `keep`; key_ok: real, in a row that takes the window; the band's
|i - j| <= w a lane; no band key before g or past n), the running max, exp (Cephes' expf polynomial, about
1 ulp), the sum and out = p [F V ; V_band], all lane by lane: the reference's one softmax, with no partial
outputs to merge and no score written past the cache.

Why: at the recommended student's shape (d = 32, s = 128, w = 64, g = 1) PyTorch's fused kernel, which the
split core calls for each part and band segment, pays a fixed cost per block of queries that short key sets
do not repay: a band score costs about 1.5 times one on 512-token chunks (docs/benchmarks/native/README.md,
"The native window kernel"). Here a query costs its S + T + 2w scores (T - 1 more band keys than its 2w + 1: 12 % at
w = 64 with AVX-512), two fused multiply-adds a head dimension each, and their exps.

Scope: float32 (bfloat16 q, k, v: read in float32, the output cast back; the casts cost a pass over q, k, v
and out, so the static rule leaves bfloat16 to the split core and nn/autotune.py times the two), no gradient,
no dropout, a window (w given), d a multiple of 16 up to 128, a concrete n, not
while tracing or under a fake-tensor mode (`native_ready`); any other call is the split core's, values and
gradients. The kernel is compiled on the first call it can take (`torch.utils.cpp_extension.load`, 10-20 s,
cached under TORCH_EXTENSIONS_DIR apart for each instruction set, so a cache shared by two CPUs never runs
a build made for the other); where it cannot be built (no compiler, a saved model's own code, which carries
no C++ source) the split core runs, with one warning when a build failed or another process's build held
its lock past a bound (nn/native_build.py: a killed build's lock never makes a process wait). "auto" takes it only where it was
measured faster (`NATIVE_AUTO`). Output within float32 round-off of the float64 reference
(tests/nn/test_local_native.py). Torch-only.
"""

from __future__ import annotations

import functools
import sys
import warnings
from pathlib import Path

import torch
from torch import Tensor

from linformer_kit.nn.exact_rows import tracing
from linformer_kit.nn.keys import KeySet, backward_reaches, global_rows, shared_keys, window_inputs
from linformer_kit.nn.local_split import split_local_attention
from linformer_kit.nn.native_build import build

# the kernel computes in float32; bfloat16 q, k, v are read in float32 and the output cast back
NATIVE_DTYPES = (torch.float32, torch.bfloat16)
NATIVE_BLOCK = 256  # queries a task (one row and head): consecutive tiles share most of their band keys
# the instruction sets where "auto" takes the kernel: measured faster than the split core there
NATIVE_AUTO = ("AVX512", "AVX2")
# at::parallel_for runs its tasks on PyTorch's threads only in a build that sees OpenMP (ATen/Parallel-inl.h:
# INTRA_OP_PARALLEL); without it every task ran on the calling thread (until 2026-12-07: one core of two). On
# Linux the build links libgomp.so.1, the soname of the OpenMP runtime PyTorch's wheel ships and has loaded, so
# the loader binds that one: one runtime, one thread count (torch.set_num_threads). Elsewhere (Apple's clang
# has no -fopenmp), and where the OpenMP build fails (clang without libomp), the kernel builds as before, on
# the calling thread
_OPENMP = ["-fopenmp"] if sys.platform.startswith("linux") else []
_NATIVE_SOURCE = Path(__file__).parent / "csrc" / "local_window.cpp"
_NATIVE_FLAGS = {  # the instruction set PyTorch's own kernels run at, so a cached build fits this CPU
    "AVX512": ["-mavx512f", "-mavx512dq", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma"],
    "AVX2": ["-mavx2", "-mfma"],
}


def native_local_attention(
    q: Tensor, k: Tensor, v: Tensor, keyset: KeySet, *, scale: float, dropout_p: float = 0.0
) -> tuple[Tensor, None]:
    """The module docstring's attention -> (out (b, h, n, d), None); the split core where the kernel does not
    run."""
    slots = keyset.slots
    if keyset.window is None or dropout_p > 0.0 or not native_ready(q, k, v, slots.keys, slots.values):
        return split_local_attention(q, k, v, keyset, scale=scale, dropout_p=dropout_p)
    b = q.shape[0]
    k, v, real, w, g, shared_ok, key_ok = window_inputs(q, k, v, keyset)
    dtype = q.dtype
    if not _layout_fits(q, k, v):  # pads zeroed by a select may lay a non-dense view out anew
        return split_local_attention(q, k, v, keyset, scale=scale, dropout_p=dropout_p)
    if dtype != torch.float32:
        # bfloat16: read in float32, one copy each, (b, h, n, d) dense (the op's layout)
        q, k, v = (t.to(torch.float32, memory_format=torch.contiguous_format) for t in (q, k, v))
    keys, values = (
        t.float().contiguous().expand(b, -1, -1, -1) for t in shared_keys(slots.keys, slots.values, k, v, g)
    )
    out = torch.ops.linformer_kit_native.local_window(
        q, k, v, keys, values, shared_ok, key_ok, w, g, NATIVE_BLOCK, scale
    )
    if g:
        out[:, :, :g] = global_rows(q, k, v, real, g, scale, 0.0)
    return out.to(dtype), None  # (b, h, n, d), a view of (b, n, h, d)


def native_ready(q: Tensor, k: Tensor, v: Tensor, *slots: Tensor) -> bool:
    """Whether the kernel runs this call (the module docstring's scope), building it on the first that can:
    q, k, v and, where the caller has them, the slots (a backward through them alone, E and F training on
    frozen linears, is one too)."""
    if tracing() or torch._guards.detect_fake_mode() is not None:  # (first: nothing below is traced)
        return False
    d = q.shape[-1]
    fits = q.device.type == "cpu" and q.dtype == k.dtype == v.dtype and q.dtype in NATIVE_DTYPES
    fits = fits and not backward_reaches(q, k, v, *slots) and _layout_fits(q, k, v)
    return fits and 0 < d <= 128 and d % 16 == 0 and isinstance(q.shape[-2], int) and _native_library()


def _layout_fits(q: Tensor, k: Tensor, v: Tensor) -> bool:
    """The layout the op reads (csrc/local_window.cpp `check_inputs`): q, k, v 4-d of one shape, unit stride in
    d, and v's position stride k's. Checked on the inputs (what "auto" may pick) and again after `window_inputs`,
    whose select zeroing the pad rows may lay a non-dense view out anew."""
    same = q.dim() == 4 and q.shape == k.shape == v.shape
    return same and q.stride(-1) == k.stride(-1) == v.stride(-1) == 1 and k.stride(-2) == v.stride(-2)


@functools.cache
def _native_library() -> bool:
    """Build (or load the cached build of) the kernel once a process; False, with one warning, where it fails."""
    if not _NATIVE_SOURCE.is_file():  # a saved model's own code: the kernel's source is not beside it
        return False
    flags = ["-O3", "-ffp-contract=fast", *_NATIVE_FLAGS.get(torch.backends.cpu.get_cpu_capability(), [])]
    try:
        try:
            build(native_build_name(), [str(_NATIVE_SOURCE)], [*flags, *_OPENMP], ldflags=_OPENMP)
        except RuntimeError:  # the compiler failed: one without GCC's OpenMP (clang with no libomp)
            if not _OPENMP:
                raise
            build(native_build_name(), [str(_NATIVE_SOURCE)], flags)  # the kernel on the calling thread
    except Exception as error:  # no compiler or ninja, a read-only cache, another's build past BUILD_WAIT
        warnings.warn(
            f"the native window kernel did not build ({error}); the split core runs instead", stacklevel=2
        )
        return False
    return True


def native_build_name() -> str:
    """The kernel's extension name: one build (and cache folder) per instruction set PyTorch runs here."""
    return f"linformer_kit_local_window_{torch.backends.cpu.get_cpu_capability().lower()}"


def native_preferred(q: Tensor, k: Tensor, v: Tensor) -> bool:
    """Whether "auto" takes the kernel for this call: where it runs, on a CPU whose PyTorch kernels run AVX-512
    or AVX2, the instruction sets it was measured faster on (docs/benchmarks/native/README.md, "The native
    window kernel"; on 2 threads since its build sees OpenMP)."""
    if tracing():  # (first: nothing below is traced)
        return False
    # the instruction set before `native_ready`: no build where auto would not take the kernel (an ARM or plain
    # x86 CPU, PyTorch's "DEFAULT"). bfloat16 is float32's kernel behind two casts: timed by nn/autotune.py,
    # never taken by the static rule
    if q.dtype != torch.float32 or torch.backends.cpu.get_cpu_capability() not in NATIVE_AUTO:
        return False
    return native_ready(q, k, v)


__all__ = [
    "NATIVE_AUTO",
    "NATIVE_BLOCK",
    "NATIVE_DTYPES",
    "native_local_attention",
    "native_preferred",
    "native_ready",
]
