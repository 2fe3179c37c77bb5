"""The native kernel's build under faults (nn/native_build.py): no process waits without bound. Each case runs
fresh processes on a fresh cache (TORCH_EXTENSIONS_DIR) and bounds them with a timeout: a stale `lock` left by
a dead build, a build killed mid-way and then a second process, two processes building at once, another
process's build held past the bound, a cache that cannot be written. Each ends with the kernel's output or
the split core's (and then one warning)."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from linformer_kit.nn import local_native, native_build

pytestmark = pytest.mark.skipif(
    shutil.which(os.environ.get("CXX", "c++")) is None, reason="no C++ compiler: nothing is ever built"
)

# one forward on "native" beside "split": prints which core ran and their largest difference
FORWARD = """
import torch
from linformer_kit.nn import LinformerSelfAttention, local_native
torch.manual_seed(0)
layer = LinformerSelfAttention(64, 2, 128, 16, local_window=8, global_tokens=1).eval()
x = torch.randn(2, 128, 64)
with torch.no_grad():
    native, split = layer(x, backend="native"), layer(x, backend="split")
print("kernel" if local_native._native_library() else "split", float((native - split).abs().max()))
"""
BOUND = 240  # seconds a process may take: a build (10-20 s alone, slower beside the others) and a load


def _folder(cache: Path) -> Path:
    """The build folder a process with TORCH_EXTENSIONS_DIR=cache uses (cpp_extension's layout)."""
    return cache / local_native.native_build_name()


def _start(cache: Path) -> subprocess.Popen:
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(cache), "PYTHONWARNINGS": "default"}
    return subprocess.Popen(
        [sys.executable, "-c", FORWARD], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _finish(process: subprocess.Popen) -> tuple[str, float, str]:
    """(which core ran, its largest difference from split, stderr), within BOUND s or the test fails."""
    try:
        out, err = process.communicate(timeout=BOUND)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail(f"a forward waited past {BOUND} s on the kernel's build")
    assert process.returncode == 0, err
    core, difference = out.split()
    return core, float(difference), err


def test_a_build_hands_cpp_extension_copies_of_its_flags(monkeypatch, tmp_path: Path) -> None:
    """cpp_extension.load appends torch's link flags to the list it is given: a caller's list grown that way
    would hash as another build on its next call, a second library under one op name (the process aborts)."""
    from torch.utils import cpp_extension

    loads = []

    def load(**kwargs) -> None:
        loads.append(kwargs["name"])
        kwargs["extra_cflags"].append("-DGROWN")
        kwargs["extra_ldflags"].append("-ltorch")

    monkeypatch.setattr(cpp_extension, "load", load)
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    cflags, ldflags = ["-O3"], ["-fopenmp"]
    native_build.build("copies", ["unused.cpp"], cflags, ldflags=ldflags)
    assert loads == ["copies"]
    assert (cflags, ldflags) == (["-O3"], ["-fopenmp"])


@pytest.mark.slow
def test_a_stale_lock_left_by_a_dead_build_is_removed(tmp_path: Path) -> None:
    _folder(tmp_path).mkdir(parents=True)
    (_folder(tmp_path) / "lock").touch()  # what a build killed inside cpp_extension.load leaves
    core, difference, err = _finish(_start(tmp_path))
    assert (core, difference) == ("kernel", pytest.approx(0.0, abs=1e-5))
    assert "left by a build that did not finish" in err
    assert not (_folder(tmp_path) / "lock").exists()


@pytest.mark.slow
def test_a_build_killed_midway_leaves_nothing_a_second_process_waits_on(tmp_path: Path) -> None:
    first = _start(tmp_path)
    deadline = time.monotonic() + BOUND
    while not (_folder(tmp_path) / "lock").exists():  # inside cpp_extension.load: the compiler runs
        assert first.poll() is None, "the first process ended before its build"
        assert time.monotonic() < deadline, "the first build never started"
        time.sleep(0.05)
    time.sleep(2)
    first.send_signal(signal.SIGKILL)  # no handler runs: the lock file stays, the flock goes with the process
    first.wait()
    assert (_folder(tmp_path) / "lock").exists()
    core, difference, _ = _finish(_start(tmp_path))
    assert (core, difference) == ("kernel", pytest.approx(0.0, abs=1e-5))


@pytest.mark.slow
def test_two_processes_building_at_once_both_get_the_kernel(tmp_path: Path) -> None:
    processes = [_start(tmp_path), _start(tmp_path)]
    for process in processes:
        core, difference, _ = _finish(process)
        assert (core, difference) == ("kernel", pytest.approx(0.0, abs=1e-5))


@pytest.fixture
def rebuilt(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """This process on a fresh cache, its build forgotten before and after."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "cache"))
    local_native._native_library.cache_clear()
    yield tmp_path / "cache"
    local_native._native_library.cache_clear()


def test_a_build_held_past_the_bound_leaves_the_split_core(rebuilt: Path, monkeypatch) -> None:
    """Another process's build (here: its flock, held) past BUILD_WAIT: one warning, the split core, no wait
    beyond the bound, and nothing of the other's removed."""
    monkeypatch.setattr(native_build, "BUILD_WAIT", 0.5)
    rebuilt.mkdir(parents=True)
    flock = rebuilt / f"{local_native.native_build_name()}.flock"
    with open(flock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        q = torch.zeros(1, 1, 4, 32)
        start = time.monotonic()
        with pytest.warns(UserWarning, match="another process has built the kernel for 0 s"), torch.no_grad():
            assert not local_native.native_ready(q, q, q)
        assert time.monotonic() - start < 5
    with warnings.catch_warnings(record=True) as later, torch.no_grad():
        warnings.simplefilter("always")
        assert not local_native.native_ready(q, q, q)  # decided once a process: no second wait
    assert later == []


def test_a_cache_that_cannot_be_written_leaves_the_split_core(monkeypatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(blocker / "cache"))
    local_native._native_library.cache_clear()
    try:
        q = torch.zeros(1, 1, 4, 32)
        with pytest.warns(UserWarning, match="did not build"), torch.no_grad():
            assert not local_native.native_ready(q, q, q)
    finally:
        local_native._native_library.cache_clear()
