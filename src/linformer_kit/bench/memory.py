"""Peak memory of one call.

CPU: a fresh Python subprocess per case builds the module and input, reads its resident set size
(RSS), runs one call, and reports its peak RSS (Linux: VmHWM of /proc/self/status; elsewhere
`getrusage(RUSAGE_SELF).ru_maxrss`). The delta `peak - RSS after build` is the memory the call itself needs (activations, attention matrices),
which is what grows with n; the raw peak also holds the interpreter, torch and the weights.
A fresh process is needed because freed memory is not returned reliably to the OS, so peaks of
several cases in one process would contaminate each other.

CUDA: in process, `torch.cuda.max_memory_allocated` after `reset_peak_memory_stats`, minus the
memory allocated before the call.

Run as `python -m linformer_kit.bench.memory '<case json>' THREADS` (what `measure_cpu` does).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import NamedTuple

import torch

from linformer_kit.bench.cases import Case, build_step


class PeakMemory(NamedTuple):
    peak_bytes: int  # raw peak: process RSS (CPU) or allocated bytes (CUDA)
    delta_bytes: int  # peak minus the memory held after building module and input


def measure_cpu(case: Case, threads: int, timeout_s: float) -> PeakMemory:
    """Peak RSS of one call of `case` in a fresh subprocess. Raises RuntimeError if it fails."""
    cmd = [sys.executable, "-m", "linformer_kit.bench.memory", json.dumps(case.to_dict()), str(threads)]
    report = run_memory_subprocess(cmd, timeout_s)
    return PeakMemory(report["peak_bytes"], max(0, report["peak_bytes"] - report["rss_after_build"]))


def run_memory_subprocess(cmd: list[str], timeout_s: float, env: dict[str, str] | None = None) -> dict:
    """The JSON report (peak_bytes, rss_after_build) a measuring subprocess prints last; RuntimeError if it
    runs past `timeout_s` or fails."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"memory subprocess exceeded {timeout_s:.0f} s") from err
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["killed (out of memory?)"])[-1]
        raise RuntimeError(f"memory subprocess failed (exit {done.returncode}): {tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure_cuda(step: Callable[[], object], device: str) -> PeakMemory:
    """Peak allocated CUDA memory of one call of `step` (an already built case)."""
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    step()
    torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    return PeakMemory(peak, max(0, peak - before))


def current_rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss() -> int:
    # Linux: VmHWM, the high-water mark of this address space. ru_maxrss is not usable there: execve
    # carries the forking parent's peak into it, so every child would report at least the parent's RSS.
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)  # bytes on macOS, KiB elsewhere


def _main(argv: list[str]) -> None:
    case = Case(**json.loads(argv[0]))
    torch.set_num_threads(int(argv[1]))
    step = build_step(case)
    rss_after_build = current_rss()
    step()
    print(json.dumps({"peak_bytes": peak_rss(), "rss_after_build": rss_after_build}))  # noqa: T201


if __name__ == "__main__":
    _main(sys.argv[1:])
