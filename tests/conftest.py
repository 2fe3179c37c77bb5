"""Shared test setup: every test starts from the same seed; GPU tests skip without CUDA; the on-disk
fixtures (tests/fixtures/files.py) are registered for every folder."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

pytest_plugins = ["tests.fixtures.files"]  # corpus, sentiment_csv, tiny_model_dir, tiny_roberta_dir, ...


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _static_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    """The static rule for "auto" (nn/autotune.py's "off"): which core runs never hangs on a timing, so a test
    of a core's choice or of bit-equal outputs reads the same on every machine; tests/nn/test_autotune.py
    turns the measuring on."""
    monkeypatch.setenv("LINFORMER_KIT_AUTOTUNE", "off")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip_gpu)


@pytest.fixture
def transformers_log() -> Iterator[list[str]]:
    """What transformers logs during the test, one string per record.

    Its logger does not propagate and its handler holds the stderr of import time (pytest's collection
    capture), so neither caplog nor capfd sees it: this fixture hooks the logger itself.
    """
    import logging

    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger = logging.getLogger("transformers")
    handler = Collect(level=logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
