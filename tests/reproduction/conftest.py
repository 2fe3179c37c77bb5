"""The study's tests train tiny models: one thread (the on-disk fixtures: tests/fixtures/files.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _one_thread(one_thread: None) -> None:
    pass
