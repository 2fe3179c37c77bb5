"""`auto` that measures: the first time a process meets a call's shape, time the cores that may run it and keep
the fastest (cuDNN's benchmark mode, Triton's autotune), instead of a rule measured on another CPU.

The static rule (nn/cores.py, `choose`) was timed on a few machines and moves between them: the native window
kernel built for one thread took 0.78-0.85x the split core's time on a 2-core AMD EPYC (AVX512-bf16) and 1.06x
on a 2-core Intel Xeon with AMX at 4 096 tokens (issue "Never slower on the user's machine"); on two threads,
0.75-0.89x on an AVX2-only EPYC (docs/benchmarks/native/avx2-cpu/). So for a call it may time, "auto" runs
each candidate once to warm it, then `AUTOTUNE_ROUNDS` rounds alternating them, and keeps the least time's
core, unless the static rule's own pick is within `AUTOTUNE_MARGIN` of it (noise never moves a choice off the
rule). The winner is kept per shape bucket (`shape_bucket`: batch and length rounded up to a power of two,
heads, head size, slots, window, global keys, mask, dtype, threads), so each layer of a model after the first,
and each later batch of the bucket, reads it.

Where timing is not allowed the static rule stands (`timed_candidates` is empty): the mode "off", tracing and
export (a trace would keep one timing's branch), fake tensors, a symbolic length, a backward that will run
(a forward timed alone would misjudge a training step), dropout, a device other than the CPU, an empty batch.

The mode is one environment variable, read at each call, as `torch.backends.cudnn.benchmark` is one flag:

    LINFORMER_KIT_AUTOTUNE   "process" (the default): measure once a process, keep the winners in memory
                             "disk": also keep them in a JSON file under LINFORMER_KIT_CACHE (default
                                     $XDG_CACHE_HOME/linformer-kit, else ~/.cache/linformer-kit), one file per
                                     CPU model, PyTorch version and instruction set, read by later processes
                             "off": the static rule only (outputs that never depend on a timing)

The cores agree to round-off (tests/nn/test_local.py), so a measured pick changes the output by round-off
only; "off" keeps it bit-for-bit the same from run to run. Torch-only.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal, cast, get_args

import torch
from torch import Tensor

from linformer_kit.nn.cores import choose
from linformer_kit.nn.exact_rows import uncached
from linformer_kit.nn.keys import KeySet, backward_reaches
from linformer_kit.nn.local_native import native_ready

AutotuneMode = Literal["process", "disk", "off"]
AUTOTUNE_VARIABLE = "LINFORMER_KIT_AUTOTUNE"
AUTOTUNE_CACHE_VARIABLE = "LINFORMER_KIT_CACHE"
AUTOTUNE_DEFAULT: AutotuneMode = "process"
# timed rounds after the warm-up call; the least time of each core counts (the others are noise)
AUTOTUNE_ROUNDS = 3
AUTOTUNE_DROP = 2.0  # a core whose warm-up took over twice the quickest one's is not timed further
AUTOTUNE_MARGIN = 0.97  # a core must take under 97 % of the static pick's time to replace it
# every window core "auto" may time, and "native" where it runs
TIMED_WINDOW_CORES = ("split", "blocked", "sdpa")
TIMED_PLAIN_CORES = ("sdpa", "blocked")

_clock = time.perf_counter  # (a name of its own: the tests time stand-in calls on a clock of theirs)
_picks: dict[str, str] = {}  # this process's picks, by `shape_bucket`


def autotune_mode() -> AutotuneMode:
    """LINFORMER_KIT_AUTOTUNE, checked: ValueError naming the value and the modes."""
    value = os.environ.get(AUTOTUNE_VARIABLE, AUTOTUNE_DEFAULT)
    if value not in get_args(AutotuneMode):
        raise ValueError(f"{AUTOTUNE_VARIABLE}={value!r}: must be one of {', '.join(get_args(AutotuneMode))}")
    return cast(AutotuneMode, value)


def timed_candidates(
    backend: str, q: Tensor, k: Tensor, v: Tensor, *, window: bool, dropout_p: float
) -> tuple[str, ...]:
    """The cores "auto" may time for this call (q (b, h, n, d); k, v as `choose` reads them); () where the
    static rule stands (`may_time`)."""
    if not may_time(backend, q, k, v, dropout_p=dropout_p):
        return ()
    if not window:
        return TIMED_PLAIN_CORES
    return (*TIMED_WINDOW_CORES, "native") if native_ready(q, k, v) else TIMED_WINDOW_CORES


def may_time(backend: str, q: Tensor, k: Tensor, v: Tensor, *, dropout_p: float) -> bool:
    """Whether "auto" may time this call: not where the static rule stands (the module docstring's list)."""
    if backend != "auto" or autotune_mode() == "off" or q.device.type != "cpu" or dropout_p > 0.0:
        return False
    if uncached() or not isinstance(q.shape[-2], int) or q.numel() == 0 or k.numel() == 0:
        return False
    return not backward_reaches(q, k, v)


def measured_core(
    backend: str, q: Tensor, k: Tensor, v: Tensor, run: Callable[[str], object], shape: tuple,
    *, window: bool, dropout_p: float,
) -> str:  # fmt: skip
    """The core a layer runs: the static rule's (`choose`) where timing is not allowed, else the measured
    winner on this call's bucket (`shape`: what besides q decides the cores' cost); `run(core)` computes it."""
    if not may_time(backend, q, k, v, dropout_p=dropout_p):
        return choose(backend, q, k, v, window=window, dropout_p=dropout_p)
    key = shape_bucket(q, "window" if window else "plain", *shape)
    if key in _picks:  # kept: every layer after the first, every later call of the bucket (the hot path)
        return _picks[key]
    static = choose(backend, q, k, v, window=window, dropout_p=dropout_p)
    return pick_core(static, timed_candidates(backend, q, k, v, window=window, dropout_p=dropout_p), run, key)


def window_bucket(keyset: KeySet) -> tuple:
    """What besides q decides the window cores' cost: the slots, w, g, and which masks there are."""
    slots = keyset.slots
    masks = (keyset.real is not None, slots.keep is not None, slots.windowed is not None)
    return (slots.keys.shape[-2], keyset.window, keyset.global_tokens, *masks)


def shape_bucket(q: Tensor, *extra: object) -> str:
    """The bucket a call's pick is kept under: q's (b, h, n, d) with b and n rounded up to a power of two, its
    dtype, the threads, and `extra` (what else decides the cores' cost: slots, window, global keys, mask)."""
    b, h, n, d = q.shape
    up = lambda x: 1 << max(int(x) - 1, 0).bit_length()  # noqa: E731 (the next power of two)
    fields = (up(b), h, up(n), d, str(q.dtype).removeprefix("torch."), torch.get_num_threads(), *extra)
    return ",".join(str(f) for f in fields)


def pick_core(static: str, cores: Sequence[str], call: Callable[[str], object], key: str) -> str:
    """The core to run: `static` where `cores` is empty, else the kept or newly measured winner of `key`."""
    if not cores:
        return static
    if key not in _picks:
        stored = _stored_picks().get(key) if autotune_mode() == "disk" else None
        # (a core the cache names that cannot run here is measured anew)
        if stored is not None and stored in cores:
            _picks[key] = stored
        else:
            _picks[key] = _fastest_core(static, cores, call)
            if autotune_mode() == "disk":
                _store_pick(key, _picks[key])
    return _picks[key]


def _fastest_core(static: str, cores: Sequence[str], call: Callable[[str], object]) -> str:
    """The fastest of `cores` on this call (the module docstring's rule); a core that raises drops out, and so
    does one whose warm-up took over AUTOTUNE_DROP times the quickest warm-up (the static pick excepted), so
    a core far off the pace costs one call, not AUTOTUNE_ROUNDS more."""
    warm: dict[str, float] = {}
    for core in cores:
        start = _clock()
        try:
            call(core)  # the warm-up: first-call allocations, lazy builds
        # a core that cannot take this call is no candidate (the static pick runs wherever the rule sends it)
        except Exception:
            continue
        warm[core] = _clock() - start
    if not warm:
        return static
    running = [c for c in warm if c == static or warm[c] <= AUTOTUNE_DROP * min(warm.values())]
    best = {core: float("inf") for core in running}
    for _ in range(AUTOTUNE_ROUNDS):
        for core in running:  # alternating, so a slow moment of the machine falls on every core alike
            start = _clock()
            call(core)
            best[core] = min(best[core], _clock() - start)
    fastest = min(best, key=best.__getitem__)
    if static in best and best[fastest] > AUTOTUNE_MARGIN * best[static]:
        return static
    return fastest


def autotune_cache_file() -> Path:
    """The disk mode's file: one per CPU model, PyTorch version and instruction set (a pick measured on one
    says nothing of another)."""
    root = os.environ.get(AUTOTUNE_CACHE_VARIABLE) or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "linformer-kit"
    )
    machine = "|".join((_cpu_label(), torch.__version__, torch.backends.cpu.get_cpu_capability()))
    return Path(root) / f"autotune-{hashlib.sha256(machine.encode()).hexdigest()[:16]}.json"


@functools.cache
def cpu_model_name() -> str | None:
    """The CPU's model name (/proc/cpuinfo's "model name"), or None where it says none."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_label() -> str:
    return cpu_model_name() or platform.processor() or platform.machine()


def _stored_picks() -> dict[str, str]:
    """The winners in the disk cache; {} where it is missing or unreadable (warned: it is measured anew)."""
    path = autotune_cache_file()
    if not path.is_file():
        return {}
    try:
        winners = json.loads(path.read_text(encoding="utf-8"))["winners"]
        return {str(key): str(core) for key, core in winners.items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        warnings.warn(f"{path}: unreadable autotune cache ({error!r}); measuring anew", stacklevel=3)
        return {}


def _store_pick(key: str, core: str) -> None:
    """Add one winner to the disk cache: read, merge, write a temporary file and rename it over the old one, so
    a killed process or another writing beside it never leaves half a file."""
    path = autotune_cache_file()
    winners = {**_stored_picks(), key: core}
    body = {
        "cpu": _cpu_label(),
        "torch": torch.__version__,
        "capability": torch.backends.cpu.get_cpu_capability(),
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8"
        ) as f:
            json.dump({**body, "winners": winners}, f, indent=1)
        os.replace(f.name, path)
    except OSError as error:  # a read-only home: the pick still holds for this process
        warnings.warn(f"{path}: could not write the autotune cache ({error!r})", stacklevel=3)


def forget_picks() -> None:
    """Drop this process's picks (the disk cache stays): the next call of each shape measures or reads anew."""
    _picks.clear()


__all__ = [
    "AUTOTUNE_DEFAULT", "AUTOTUNE_VARIABLE", "AutotuneMode", "autotune_cache_file", "autotune_mode", "cpu_model_name",
    "forget_picks", "may_time", "measured_core", "pick_core", "shape_bucket", "timed_candidates", "window_bucket",
]  # fmt: skip
