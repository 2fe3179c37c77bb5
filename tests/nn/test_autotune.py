"""`auto` that measures (nn/autotune.py): the fastest core is kept per shape bucket, the static rule stands where
timing is not allowed, the disk cache is read back and never trusted blindly, and a model's output is the
static rule's to round-off."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from linformer_kit.nn import LinformerSelfAttention, autotune
from linformer_kit.nn.autotune import (
    AUTOTUNE_VARIABLE,
    autotune_cache_file,
    autotune_mode,
    forget_picks,
    pick_core,
    shape_bucket,
    timed_candidates,
)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "process")
    monkeypatch.setenv("LINFORMER_KIT_CACHE", str(tmp_path / "cache"))
    forget_picks()
    yield
    forget_picks()


class Slow:
    """A stand-in call: each core takes its own seconds on a clock of the test's (no sleeping: the picks do
    not hang on the machine's load); counts the calls."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds, self.calls, self.now = seconds, 0, 0.0

    def __call__(self, core: str) -> None:
        self.calls += 1
        if self.seconds[core] < 0:
            raise RuntimeError(f"{core} cannot take this call")
        self.now += self.seconds[core]

    def clock(self) -> float:
        return self.now


@pytest.fixture
def slow(monkeypatch: pytest.MonkeyPatch) -> Callable[[dict[str, float]], Slow]:
    """Slow calls whose clock is the one autotune reads."""

    def make(seconds: dict[str, float]) -> Slow:
        call = Slow(seconds)
        monkeypatch.setattr(autotune, "_clock", call.clock)
        return call

    return make


def test_mode_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "always")
    with pytest.raises(
        ValueError, match=r"LINFORMER_KIT_AUTOTUNE='always': must be one of process, disk, off"
    ):
        autotune_mode()


def test_the_fastest_core_is_kept_and_not_measured_again(slow: Callable[[dict[str, float]], Slow]) -> None:
    call = slow({"split": 0.008, "blocked": 0.006, "sdpa": 0.010})
    assert pick_core("split", ("split", "blocked", "sdpa"), call, "k") == "blocked"
    measured = call.calls
    assert measured == 3 * 4  # one warm-up and three rounds a core
    assert pick_core("split", ("split", "blocked", "sdpa"), call, "k") == "blocked"
    assert call.calls == measured  # kept: the second call of the bucket times nothing


def test_a_core_far_off_the_pace_costs_its_warm_up_only(slow: Callable[[dict[str, float]], Slow]) -> None:
    # sdpa's warm-up takes over twice blocked's: dropped after it; split is the static pick, so it stays
    call = slow({"split": 0.030, "blocked": 0.005, "sdpa": 0.030})
    assert pick_core("split", ("split", "blocked", "sdpa"), call, "k") == "blocked"
    assert call.calls == 3 + 3 * 2  # three warm-ups, then three rounds of split and blocked


def test_a_near_tie_keeps_the_static_pick_and_a_failing_core_drops_out(
    slow: Callable[[dict[str, float]], Slow],
) -> None:
    # sdpa is 1 % faster than split: within the margin, so the rule's own pick stays; blocked raises
    call = slow({"split": 0.0100, "blocked": -1.0, "sdpa": 0.0099})
    assert pick_core("split", ("split", "blocked", "sdpa"), call, "k") == "split"


def test_nothing_to_time_is_the_static_pick(slow: Callable[[dict[str, float]], Slow]) -> None:
    call = slow({})
    assert pick_core("native", (), call, "k") == "native"
    assert call.calls == 0


def test_where_timing_is_not_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    q = torch.randn(1, 2, 64, 16)
    assert timed_candidates("auto", q, q, q, window=True, dropout_p=0.0)[:3] == ("split", "blocked", "sdpa")
    assert timed_candidates("auto", q, q, q, window=False, dropout_p=0.0) == ("sdpa", "blocked")
    assert timed_candidates("split", q, q, q, window=True, dropout_p=0.0) == ()  # a core named by the user
    assert timed_candidates("auto", q, q, q, window=True, dropout_p=0.1) == ()  # dropout: a training step
    grad = q.clone().requires_grad_()
    assert timed_candidates("auto", grad, q, q, window=True, dropout_p=0.0) == ()  # a backward will run
    assert timed_candidates("auto", q[:0], q[:0], q[:0], window=True, dropout_p=0.0) == ()
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "off")
    assert timed_candidates("auto", q, q, q, window=True, dropout_p=0.0) == ()


def test_buckets_round_batch_and_length_up() -> None:
    assert shape_bucket(torch.zeros(3, 2, 300, 16), "x") == shape_bucket(torch.zeros(4, 2, 512, 16), "x")
    assert shape_bucket(torch.zeros(4, 2, 513, 16), "x") != shape_bucket(torch.zeros(4, 2, 512, 16), "x")
    assert shape_bucket(torch.zeros(4, 2, 512, 16), "x") != shape_bucket(torch.zeros(4, 2, 512, 16), "y")


def test_the_disk_cache_is_read_by_a_later_process(
    monkeypatch: pytest.MonkeyPatch, slow: Callable[[dict[str, float]], Slow]
) -> None:
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "disk")
    call = slow({"split": 0.004, "blocked": 0.0})
    assert pick_core("split", ("split", "blocked"), call, "k") == "blocked"
    stored = json.loads(autotune_cache_file().read_text())
    assert stored["winners"] == {"k": "blocked"}
    assert stored["torch"] == torch.__version__
    forget_picks()  # a new process: nothing in memory
    again = slow({"split": 0.004, "blocked": 0.0})
    assert pick_core("split", ("split", "blocked"), again, "k") == "blocked"
    assert again.calls == 0  # read, not measured
    # a core the file names that cannot run here is measured anew, not trusted
    forget_picks()
    assert pick_core("split", ("split", "sdpa"), slow({"split": 0.0, "sdpa": 0.004}), "k") == "split"


def test_an_unreadable_cache_is_measured_anew(
    monkeypatch: pytest.MonkeyPatch, slow: Callable[[dict[str, float]], Slow]
) -> None:
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "disk")
    path = autotune_cache_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    with pytest.warns(UserWarning, match="unreadable autotune cache"):
        assert (
            pick_core("split", ("split", "blocked"), slow({"split": 0.004, "blocked": 0.0}), "k") == "blocked"
        )
    assert json.loads(path.read_text())["winners"] == {"k": "blocked"}  # written whole over the bad file


def test_a_window_layer_measures_once_and_reads_as_the_static_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    layer = LinformerSelfAttention(
        32, num_heads=2, max_seq_len=128, projected_length=16, local_window=8, global_tokens=1
    ).eval()
    x, mask = torch.randn(2, 128, 32), torch.ones(2, 128, dtype=torch.bool)
    mask[1, 100:] = False
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "off")
    with torch.no_grad():
        static = layer(x, mask)
    monkeypatch.setenv(AUTOTUNE_VARIABLE, "process")
    with torch.no_grad():
        measured = layer(x, mask)
    assert len(autotune._picks) == 1  # one window call, one bucket
    torch.testing.assert_close(measured, static, rtol=1e-5, atol=1e-5)
