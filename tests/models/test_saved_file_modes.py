"""Saved weights get the file mode of the other saved files (the umask's), not safetensors' -rw-------."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.fixtures.models import tiny_linformer_config

from linformer_kit.models import LinformerForMaskedLM


@pytest.fixture
def umask() -> Iterator[Callable[[int], int]]:
    """Set the process umask for the test; the one before is restored."""
    before = os.umask(0o022)
    yield os.umask
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_weights_have_the_mode_of_the_config(mask: int, expected: int, umask, tmp_path: Path) -> None:
    umask(mask)
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(tmp_path / "model")
    assert mode(tmp_path / "model" / "config.json") == expected
    assert mode(tmp_path / "model" / "model.safetensors") == expected
