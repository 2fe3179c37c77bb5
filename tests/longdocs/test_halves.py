"""The halves task as one function (models/halves.py), the records' queries, their uncertainty and the plot."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
import torch
from transformers import AutoModel, AutoTokenizer

from linformer_kit.longdocs.config import LongDocsConfig
from linformer_kit.longdocs.report import dodged, plot, table, uncertainty
from linformer_kit.longdocs.suite import run_suite
from linformer_kit.models import readings
from linformer_kit.models.halves import halves_ranks, standard_error
from linformer_kit.models.readings import METHODS, Reader, encode
from tests.longdocs.conftest import prose

READ = ("whole", "late-chunking-512", "truncate-512", "chunks-mean-512", "chunks-best-512")


def test_the_halves_task_reads_each_pass_once_for_documents_and_once_for_queries(
    tiny_bert_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five methods, three passes (whole, truncate, chunks): six reads, not one a method for the queries."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert_dir, model_max_length=10**9)
    reader = Reader(AutoModel.from_pretrained(tiny_bert_dir).eval(), tokenizer, 64)
    passes: list[str] = []
    read = readings.read
    monkeypatch.setattr(readings, "read", lambda pass_, *args: passes.append(pass_) or read(pass_, *args))
    corpus = [prose(i, 600) for i in range(2)]
    scored = halves_ranks(lambda texts: encode(lambda m: reader, texts, READ, 32), tokenizer, 64, 5, corpus,
                          random.Random(0))  # fmt: skip
    assert sorted(passes) == sorted(["whole", "truncate", "chunks"] * 2)
    assert set(scored) == set(READ)
    for ranks, seconds in scored.values():
        assert ranks.dtype == torch.long
        assert len(ranks) == 5
        assert int(ranks.min()) >= 1
        assert int(ranks.max()) <= 5
        assert seconds > 0


def test_the_user_s_documents_records_say_how_many_pairs_they_are_over(
    tiny_bert_dir: Path, tmp_path: Path
) -> None:
    path = tmp_path / "my.jsonl"
    path.write_text("".join(json.dumps({"text": prose(i, 300)}) + "\n" for i in range(6)))
    config = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "mine"), documents=(str(path),),
                            lengths=(64,), pairs=4, chunk_length=32, methods=READ)  # fmt: skip
    records = run_suite(config)
    assert {r.queries for r in records} == {4}
    assert "| documents | 64 | 4 |" in table([r.__dict__ for r in records])


def test_the_standard_error_is_binomial_and_never_zero_on_few_pairs() -> None:
    assert standard_error(50.0, 96) == pytest.approx(100 * math.sqrt(0.25 / 100))
    assert 0 < standard_error(0.0, 10) < standard_error(50.0, 10)  # plus four: a 0 of 10 is not exact
    assert standard_error(50.0, 100) < standard_error(50.0, 25)


def _record(method: str, score: float, queries: int | None = 25, task: str = "documents") -> dict:
    return {"task": task, "length": 1024, "method": method, "score": score, "model": "m", "seed": 1,
            "seconds_per_document": 0.1, "depth": None, "queries": queries}  # fmt: skip


def test_the_table_says_how_many_points_separate_two_methods() -> None:
    records = [_record("whole", 48.0), _record("chunks-mean-512", 40.0), _record("truncate-512", 20.0)]
    error = standard_error(48.0, 25)  # the row's score nearest 50
    row = f"| documents | 1024 | 25 | {error:.1f} | {1.96 * math.sqrt(2) * error:.0f} |"
    assert row in uncertainty(records)
    assert row == "| documents | 1024 | 25 | 9.3 | 26 |"
    assert row in table(records)
    # a fidelity's cosines (and an older run's records) give no row
    assert uncertainty([_record("whole", 99.0, None, "fidelity-books")]) == ""


def test_every_method_stays_visible_at_one_length(tmp_path: Path) -> None:
    """One length and one score for every method: each is drawn at its own place, with its own marker."""
    places = [dodged(1024, m) for m in METHODS]
    assert len(set(places)) == len(METHODS)
    assert places == sorted(places)
    assert math.prod(places) == pytest.approx(1024 ** len(METHODS))  # centred on the length
    assert max(places) / min(places) < 2**0.5  # within the length's own half octave
    path = plot([_record(m, 40.0) for m in METHODS], tmp_path / "one-length.png")
    assert path.stat().st_size > 0
