"""Keep freed CPU memory for reuse: glibc malloc settings that training and benchmarks run under.

PyTorch allocates every activation and gradient with the C library's malloc. glibc gives each
block of 128 KiB or more its own mmap (up to a 32 MiB dynamic threshold) and trims the top of the
heap when blocks are freed, so the next step's tensors land on fresh pages, each costing a fault and
a zeroing in the kernel. Measured on a 2-core EPYC (docs/benchmarks/cpu-bf16/README.md, "Allocator"):
`linformer pretrain --preset small`, n = 512, batch 64: fp32 3 080 -> 4 950 tokens/s (system time
48 s -> 14 s over the run), bf16 6 164 -> 7 960; the masked-LM logits alone are 160 MB a step.
PyTorch's CPU tuning guide gives the same advice (jemalloc / tcmalloc, or these malloc settings).

What `reuse_freed_memory` sets, through glibc's `mallopt` (the `MALLOC_*_` environment variables
do the same at process start):
    M_MMAP_MAX 0             no block gets a mapping of its own: all come from the heap
    M_TRIM_THRESHOLD 2 GiB   freed memory at the heap's top stays mapped for the next step
    M_TOP_PAD 256 MiB        the heap grows in large steps (untouched pages cost no memory)
The cost: freed memory is kept for reuse until the process exits (as PyTorch's CUDA caching
allocator does on a GPU), and a fragmented heap raised the peak RSS of that pretraining run from
5.0 to 6.5 GB. Nothing is changed where the user chose for themselves (any `MALLOC_*_` variable,
`glibc.malloc.*` in GLIBC_TUNABLES, or jemalloc / tcmalloc / mimalloc preloaded), or off glibc (macOS, Windows, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -2, -3, -4  # glibc's malloc.h
LARGE_BLOCK = 32 << 20  # the largest M_MMAP_THRESHOLD glibc takes (`map_large_blocks`)
GLIBC_MMAP_MAX = 65536  # glibc's default M_MMAP_MAX: mappings allowed again (`map_large_blocks`)
SETTINGS: dict[int, int] = {
    M_MMAP_MAX: 0,  # blocks above any threshold too (32 MiB is the most M_MMAP_THRESHOLD allows)
    M_TRIM_THRESHOLD: (1 << 31) - 1,  # mallopt takes a C int
    M_TOP_PAD: 256 << 20,
}


def user_chose_allocator(environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The user's own allocator choice that `reuse_freed_memory` leaves alone, or None."""
    chosen = sorted(name for name in environ if name.startswith("MALLOC_") and name.endswith("_"))
    if chosen:
        return f"{chosen[0]} is set"
    tunables = environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc." in tunables:
        return f"GLIBC_TUNABLES={tunables}"
    preload = environ.get("LD_PRELOAD", "")
    if any(name in preload for name in ("jemalloc", "tcmalloc", "mimalloc")):
        return f"LD_PRELOAD={preload}"
    return None


def reuse_freed_memory() -> bool:
    """Apply `SETTINGS` to this process's glibc malloc; True if they were applied.

    Call it once, early, in a process that trains or measures on the CPU (the `linformer` command
    line does). Safe to call twice; a no-op (False) off glibc or where the user chose (module docstring).
    """
    libc = _glibc()
    return libc is not None and all(libc.mallopt(param, value) == 1 for param, value in SETTINGS.items())


def map_large_blocks() -> bool:
    """Give each block of `LARGE_BLOCK` or more its own mapping again, returned to the system when freed; the
    smaller ones stay in the heap as `reuse_freed_memory` keeps them. True if applied (False off glibc or
    where the user chose).

    For a run whose peak is a few large activations alive at once: a heap that keeps every freed block
    grows to hold each step's large tensors wherever they fell. Measured on distill's long stage (batch 4 x
    4 096 tokens, 2 cores): OOM-killed at 24 GB under `reuse_freed_memory` alone, 22.8 GB with blocks of
    32 MiB and more mapped (the MALLOC_* settings of
    docs/reproduction/long-minilm/long4096-readme/README.md, "Time and memory"). Their pages are faulted
    anew each step, a cost small beside such a step.
    """
    libc = _glibc()
    return libc is not None and all(
        libc.mallopt(param, value) == 1
        for param, value in ((M_MMAP_THRESHOLD, LARGE_BLOCK), (M_MMAP_MAX, GLIBC_MMAP_MAX))
    )


def _glibc() -> ctypes.CDLL | None:
    """This process's glibc, where the kit may set its malloc: Linux, glibc, and no choice of the user's."""
    if not sys.platform.startswith("linux") or user_chose_allocator() is not None:
        return None
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):  # glibc only
        return None
    return libc
