"""A run that ends within 20% of the no-context floor says so: warning, metrics.json, model card."""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import pytest

from linformer_kit.train import PretrainConfig, pretrain
from linformer_kit.train.pretrain import warn_if_no_context


@pytest.mark.slow
def test_a_model_at_the_floor_is_named_everywhere(corpus: Path, tmp_path: Path) -> None:
    # the corpus is words drawn independently: there is no context to learn, only frequencies
    config = PretrainConfig(output_dir=str(tmp_path / "mlm"), train=[str(corpus / "train.txt")], preset="tiny",
                            seq_len=32, projected_length=8, max_steps=0, max_eval_blocks=4, disable_tqdm=True)  # fmt: skip
    with pytest.warns(
        UserWarning, match=r"perplexity [\d.]+ is (above|within 20% of) the no-context floor [\d.]+"
    ):
        result = pretrain(config)
    assert not result.learned_context
    metrics = json.loads((tmp_path / "mlm" / "metrics.json").read_text())
    assert metrics["learned_context"] is False
    card = (tmp_path / "mlm" / "README.md").read_text()
    assert "has not learned to use context" in card
    assert "no-context floor" in card

    below = dataclasses.replace(result, perplexity=0.5 * result.no_context_perplexity, learned_context=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_if_no_context(below)  # a model well below the floor: no warning
