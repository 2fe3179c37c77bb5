"""A run that ends within 20% of the no-context floor says so: one log line, metrics.json, model card.

The line advises only what the run has not done: no schedule advice to a run with a length
schedule, no projection advice to full attention (or to a window start, the default).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from linformer_kit.models import LinformerConfig
from linformer_kit.train import PretrainConfig, pretrain
from linformer_kit.train.pretrain import no_context_advice, warn_if_no_context


@pytest.mark.slow
def test_a_model_at_the_floor_is_named_everywhere(
    corpus: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    # the corpus is words drawn independently: there is no context to learn, only frequencies
    config = PretrainConfig(output_dir=str(tmp_path / "mlm"), train=[str(corpus / "train.txt")], preset="tiny",
                            seq_len=32, projected_length=8, max_steps=0, max_eval_blocks=4, disable_tqdm=True)  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="linformer_kit"):
        result = pretrain(config)
    (line,) = [record for record in caplog.records if "no-context floor" in record.getMessage()]
    assert line.name.startswith("linformer_kit")
    assert line.levelno == logging.WARNING
    assert "\n" not in line.getMessage()  # one clean line, printed by the CLI's handler
    assert line.getMessage().startswith("validation perplexity ")
    assert not [w for w in recwarn if "no-context" in str(w.message)]  # not a raw Python warning
    assert not result.learned_context
    metrics = json.loads((tmp_path / "mlm" / "metrics.json").read_text())
    assert metrics["learned_context"] is False
    card = (tmp_path / "mlm" / "README.md").read_text()
    assert "has not learned to use context" in card
    assert "no-context floor" in card

    below = dataclasses.replace(result, perplexity=0.5 * result.no_context_perplexity, learned_context=True)
    caplog.clear()
    warn_if_no_context(below, config, LinformerConfig())  # a model well below the floor: nothing said
    assert not caplog.records


def _config(tmp_path: Path, corpus: Path, **fields) -> PretrainConfig:
    return PretrainConfig(output_dir=str(tmp_path / "mlm"), train=[str(corpus / "train.txt")], preset="tiny",
                          **fields)  # fmt: skip


def _model(config: PretrainConfig) -> LinformerConfig:
    return config.model_config(vocab_size=300)


def test_advice_fits_the_run(tmp_path: Path, corpus: Path) -> None:
    scheduled = _config(
        tmp_path, corpus, seq_len=512, seq_len_schedule="128:0.5,512:0.5", projected_length=64
    )
    advice = " ".join(no_context_advice(scheduled, _model(scheduled)))
    assert "--seq-len-schedule" not in advice  # it has one
    assert "--projection-init" not in advice  # it starts as window means already
    assert "--max-steps" in advice

    unscheduled = _config(tmp_path, corpus, seq_len=512, seq_len_schedule="none", projected_length=64,
                          projection_init="random", layer_norm="pre")  # fmt: skip
    advice = " ".join(no_context_advice(unscheduled, _model(unscheduled)))
    assert "--seq-len-schedule 128:0.5,512:0.5" in advice
    assert "--projection-init window" in advice
    assert "--layer-norm" not in advice  # pre-LN already

    full = _config(tmp_path, corpus, seq_len=512, seq_len_schedule="none", projected_length="none")
    advice = " ".join(no_context_advice(full, _model(full)))
    assert "projection" not in advice  # full attention has no E, F
    assert "--layer-norm pre" in advice
