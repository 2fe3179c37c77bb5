"""Keep freed CPU memory for reuse: glibc malloc settings that training and benchmarks run under.

PyTorch allocates every activation and gradient with the C library's malloc. glibc returns large
freed blocks to the kernel (blocks from 128 KiB up are their own mmap, and the top of the heap is
trimmed), so the next step's tensors land on fresh pages and each page costs a fault and a zeroing
in the kernel. Measured on a 2-core EPYC, `small` encoder, n = 2048, batch 2, bf16 training step:
~21 000-38 000 page faults and 40-70 ms of system time per step (of ~330 ms), down to < 1 000 and
~1 ms with the settings below, for 10-20% shorter steps (docs/benchmarks.md, "Allocator").
PyTorch's CPU tuning guide gives the same advice (jemalloc / tcmalloc, or these malloc settings).

What `reuse_freed_memory` sets, through glibc's `mallopt` (the `MALLOC_*_` environment variables
do the same at process start):
    M_MMAP_THRESHOLD 32 MiB  blocks below this come from the heap, not a fresh mapping each
    M_TRIM_THRESHOLD 2 GiB   freed memory at the heap's top stays mapped for the next step
    M_TOP_PAD 256 MiB        the heap grows in large steps (untouched pages cost no memory)
The cost: the process keeps its peak memory until it exits, as PyTorch's CUDA caching allocator
does on a GPU. Nothing is changed where the user chose for themselves (any `MALLOC_*_` variable,
or jemalloc / tcmalloc preloaded), or off glibc (macOS, Windows, musl).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's malloc.h
SETTINGS: dict[int, int] = {
    M_MMAP_THRESHOLD: 32 << 20,  # the largest glibc accepts on 64-bit (HEAP_MAX_SIZE / 2)
    M_TRIM_THRESHOLD: (1 << 31) - 1,  # mallopt takes a C int
    M_TOP_PAD: 256 << 20,
}


def user_chose_allocator(environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The user's own allocator choice that `reuse_freed_memory` leaves alone, or None."""
    chosen = sorted(name for name in environ if name.startswith("MALLOC_") and name.endswith("_"))
    if chosen:
        return f"{chosen[0]} is set"
    preload = environ.get("LD_PRELOAD", "")
    if any(name in preload for name in ("jemalloc", "tcmalloc", "mimalloc")):
        return f"LD_PRELOAD={preload}"
    return None


def reuse_freed_memory() -> bool:
    """Apply `SETTINGS` to this process's glibc malloc; True if they were applied.

    Call it once, early, in a process that trains or measures on the CPU (the `linformer` command
    line does). Safe to call twice; a no-op (False) off glibc or where the user chose (module docstring).
    """
    if not sys.platform.startswith("linux") or user_chose_allocator() is not None:
        return False
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):  # glibc only
        return False
    return all(libc.mallopt(param, value) == 1 for param, value in SETTINGS.items())
