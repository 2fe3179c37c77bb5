"""The verdict of the long stage (train/distill/verdict.py): the halves task on each long_train source's held-out
documents, the long student against the teacher's chunks, in the summary line, metrics.json and the model card."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from linformer_kit.cli.distill import summary
from linformer_kit.models import readings
from linformer_kit.models.embedding import encoder_of
from linformer_kit.models.halves import standard_error
from linformer_kit.models.readings import PASSES
from linformer_kit.train.data import load_text
from linformer_kit.train.distill import DistillConfig, DistillResult, distill
from linformer_kit.train.distill import verdict as verdict_module
from linformer_kit.train.distill.data import long_text
from linformer_kit.train.distill.long import long_student
from linformer_kit.train.distill.report import model_card
from linformer_kit.train.distill.trainer import load_teacher, student_from
from linformer_kit.train.distill.verdict import METHODS, long_reading, reading_line, verdict_lengths
from tests.train.test_distill import _word_teacher
from tests.train.test_distill_long import _config
from tests.train.test_distill_long_text import _documents


@pytest.fixture
def word_teacher(tmp_path: Path) -> Path:
    return _word_teacher(tmp_path / "word-teacher")


@pytest.fixture
def sources(tmp_path: Path) -> tuple[Path, Path]:
    """Books: 30 of 400 words, 3 held out (a tenth), each holding 2 pairs at 96 tokens; reviews: 20 of 30
    words, 2 held out, too short for any pair."""
    return _documents(tmp_path / "books.txt", 30, 400, 1), _documents(tmp_path / "reviews.txt", 20, 30, 2)


def test_each_long_train_source_keeps_its_held_out_documents_whole(
    word_teacher: Path, sources: tuple[Path, Path], tmp_path: Path
) -> None:
    books, reviews = sources
    config = _config(word_teacher, books, tmp_path / "out", long_train=[str(books), str(reviews)], seq_len=32)
    text = long_text(config, AutoTokenizer.from_pretrained(word_teacher))
    for path, count in ((books, 3), (reviews, 2)):
        documents = load_text([str(path)], "text", "t")["text"]
        assert text.held_out_documents[f"{tmp_path.name}/{path.name}"] == documents[-count:]


def _long_student(config: DistillConfig, teacher_dir: Path):
    config.preflight()
    teacher = load_teacher(str(teacher_dir))
    return long_student(student_from(teacher, config), config, teacher), teacher


def test_no_verdict_length_is_read_by_the_teacher_s_own_weights(word_teacher: Path, tmp_path: Path) -> None:
    """With --exact-length 64 the 2 seq_len row (64 tokens) is read by the teacher's own weights (long layers
    beside them): no verdict of the long stage; beside the student's own weights it is one."""
    books = tmp_path / "t.txt"
    books.write_text("a b c\n")
    config = _config(word_teacher, books, tmp_path / "out", long_length=160, exact_length=64)
    config.preflight()
    assert config.seq_len == 32
    assert verdict_lengths(config) == (160,)
    own = _config(
        word_teacher, books, tmp_path / "o2", long_length=160, exact_length=64, short_layers="student"
    )
    own.preflight()
    assert verdict_lengths(own) == (64, 160)  # the student's own weights read 64: a verdict there


def test_the_verdict_reads_the_held_out_halves_by_the_student_and_the_teacher(
    word_teacher: Path, sources: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    books, reviews = sources
    config = _config(word_teacher, books, tmp_path / "out", long_train=[str(books), str(reviews)],
                     long_length=96, verdict_pairs=4)  # fmt: skip
    student, teacher = _long_student(config, word_teacher)
    text = long_text(config, AutoTokenizer.from_pretrained(word_teacher))
    assert verdict_lengths(config) == (64, 96)  # 2 seq_len, and long_length
    corpora, readers = [], set()
    halves_ranks, encode = verdict_module.halves_ranks, readings.encode

    def spy_halves(read, tokenizer, length, pairs, corpus, rng):
        corpora.append(corpus)
        return halves_ranks(read, tokenizer, length, pairs, corpus, rng)

    def spy_encode(reader_of, texts, methods, chunk):
        readers.update(
            (m, id(reader_of(p).model), reader_of(p).max_length, chunk) for m in methods for p in PASSES[m]
        )
        return encode(reader_of, texts, methods, chunk)

    monkeypatch.setattr(verdict_module, "halves_ranks", spy_halves)
    monkeypatch.setattr(verdict_module, "encode", spy_encode)
    reading = long_reading(config, student.train(), teacher, text, held_out=["unused"])
    assert student.training  # back in its own mode
    held = text.held_out_documents
    assert corpora == [held[name] for name in held for _ in (96, 64)]  # only held-out documents, whole
    encoders = {"student": id(encoder_of(student)), "teacher": id(encoder_of(teacher))}
    # the student reads the whole pass (whole, late and contextual chunks), the teacher its chunks and truncation
    assert readers == {(m, encoders["student" if p == "whole" else "teacher"], 96 if p == "whole" else 32, 32)
                       for m in METHODS for p in PASSES[m]}  # fmt: skip
    books_name, reviews_name = (f"{tmp_path.name}/{p.name}" for p in (books, reviews))
    assert [(r["task"], r["length"], r["method"]) for r in reading["records"]] == [
        (books_name, length, method) for length in (96, 64) for method in METHODS
    ]
    # 3 held-out books of 400 words: 2 pairs each at 96 tokens (2 x 94), 4 asked
    assert {r["queries"] for r in reading["records"]} == {4}
    assert all(len(r["hits"]) == 4 and sum(r["hits"]) == r["score"] / 25 for r in reading["records"])
    assert all(1 <= rank <= 4 for r in reading["records"] for rank in r["ranks"])  # among 4 second halves
    assert {r["model"] for r in reading["records"]} == {"out", "word-teacher"}
    assert [(s["source"], s["length"]) for s in reading["skipped"]] == [
        (reviews_name, 96),
        (reviews_name, 64),
    ]
    assert "spans of 188 tokens, need 2" in reading["skipped"][0]["why"]
    assert reading["held_out"].startswith("each --long-train source's last documents")
    assert reading["seconds"] > 0
    again = long_reading(config, student, teacher, text, held_out=["unused"])  # eval mode: no dropout
    assert [r["score"] for r in again["records"]] == [r["score"] for r in reading["records"]]


def _reading(seconds: float = 12.0) -> dict:
    scores = {"whole": 44.0, "late-chunking-512": 46.0, "contextual-chunks-512": 48.0, "truncate-512": 24.0,
              "chunks-mean-512": 46.0, "chunks-best-512": 44.0}  # fmt: skip
    records = [{"task": "gutenberg/train.jsonl.gz", "length": length, "method": m, "score": s - (length < 4096),
                "model": "m", "seed": 0, "seconds_per_document": 0.1, "depth": None, "queries": 25}
               for length in (4096, 1024) for m, s in scores.items()]  # fmt: skip
    skipped = [
        {"source": "imdb/unsup.jsonl.gz", "length": n, "why": "too short", "longest": 700}
        for n in (4096, 1024)
    ]
    return {"held_out": "each --long-train source's last documents", "pairs": 25, "chunk_length": 512,
            "records": records, "skipped": skipped, "seconds": seconds}  # fmt: skip


def _result(**fields) -> DistillResult:
    values = dict(
        output_dir="runs/long", fidelity={"drop-in": 0.9673, "end-to-end": 0.9756, "long": 1.0},
        different_documents=0.4912, stage_losses={}, stage_seconds={"end-to-end": 728.0, "long": 1466.0},
        eval_documents=256, train_examples=5000, num_parameters=1,
    )  # fmt: skip
    return DistillResult(**{**values, **fields})


def test_the_summary_line_says_what_the_original_reads_and_the_long_reading() -> None:
    line = summary(_result(read_by_original=512, long_reading=_reading(120.0)))
    assert line == (
        "distill done: up to 512 tokens read by the original (fidelity 1 by construction); long reading: "
        "gutenberg/train.jsonl.gz 4 096: whole 44 vs chunks 46 / best 44 / truncated 24, late chunks 46, "
        "contextual chunks 48 (25 pairs, ±9; inconclusive: 25 pairs tell apart only 26 points); 1 024: whole 43 "
        "vs chunks 45 / best 43 / truncated 23, late chunks 45, contextual chunks 47 (25 pairs, ±9; inconclusive: "
        "25 pairs tell apart only 26 points); imdb/unsup.jsonl.gz: too short at 4 096 and 1 024 (its held-out "
        "documents hold fewer than the 2 spans of 2 x 1 022 tokens a verdict needs; the longest has 700); read in "
        "120 s, 8 % of the long stage's time; "
        "fidelity (mean cosine to the teacher's embeddings, 256 held-out documents) drop-in 0.9673, end-to-end "
        "0.9756, long 1.0000 (read by the original); two different documents under the teacher: 0.4912; model "
        "saved to runs/long"
    )
    assert f"±{standard_error(44.0, 25):.0f};" == "±9;"


def test_the_verdict_says_whether_its_pairs_tell_the_student_from_the_chunks() -> None:
    """Paired outcomes: told apart where the interval leaves out 0, else inconclusive with what the pairs could tell."""
    reading = _reading()
    ahead = {"whole": [1] * 30 + [0] * 10, "chunks-mean-512": [1] * 10 + [0] * 30}
    for r in reading["records"]:
        r["queries"], r["hits"] = 40, ahead.get(r["method"], [1] * 5 + [0] * 35)
    line = reading_line(reading)
    assert "(40 pairs, ±7; whole ahead of chunks by 50 points [+32, +63])" in line
    for r in reading["records"]:
        if r["method"] == "whole":
            r["hits"] = [1] * 12 + [0] * 28
    assert "(40 pairs, ±7; inconclusive: 40 pairs tell apart only 8 points)" in reading_line(
        reading
    )  # 2 of 40 differ
    plain = summary(_result(fidelity={"drop-in": 0.9, "end-to-end": 0.95}))  # no long stage: as before
    assert plain.startswith("distill done: lowest fidelity 0.9500 (held-out); fidelity (")
    assert "long reading" not in plain
    assert reading_line(_reading(), None).endswith("; read in 12 s")
    assert reading_line(_reading(0.19), 2.21).endswith("; read in 0.2 s, 9 % of the long stage's time")


def test_the_model_card_labels_the_fidelity_and_shows_the_verdict(word_teacher: Path, tmp_path: Path) -> None:
    config = _config(word_teacher, tmp_path / "t.txt", tmp_path / "out")
    card = model_card(config, _result(read_by_original=512, long_reading=_reading(120.0)))
    assert "| long | 1.0000 (read by the original: 1 by construction) |" in card
    assert "Inputs of at most 512 tokens, each fidelity above among them, are read by the original" in card
    assert "## Long reading: the verdict of the long stage" in card
    head = (
        "| source | length | whole | late-chunking-512 | contextual-chunks-512 | truncate-512 | chunks-mean-512 | "
        "chunks-best-512 |"
    )
    assert head + " pairs | standard error | apart by |" in card
    assert (
        "| gutenberg/train.jsonl.gz | 4096 | 44.0 | 46.0 | **48.0** | 24.0 | 46.0 | 44.0 | 25 | 9.3 | 26 |"
        in card
    )
    assert "- imdb/unsup.jsonl.gz at 4096: too short" in card
    assert "Paired differences" not in card  # records without per-pair outcomes: nothing to pair
    paired = _reading(120.0)
    for r in paired["records"]:  # 25 pairs: the student whole hits the teacher's best chunk's and 2 more
        r["hits"] = [1] * (13 if r["method"] == "whole" else 11) + [0] * (
            12 if r["method"] == "whole" else 14
        )
    card = model_card(config, _result(read_by_original=512, long_reading=paired))
    assert "| gutenberg/train.jsonl.gz | 4096 | whole | 25 |" in card
    assert "+8.0 [-4.9, +19.7]" in card  # whole against the best chunk, query by query: 2 more of 25
    assert "Measured in 120 s (8 % of the long stage's 1466 s)." in card
    assert "read by the original" not in model_card(config, _result())
    sources = {
        "books": {"fidelity": 1.0, "different_documents": 0.3},
        "reviews": {"fidelity": 1.0, "different_documents": 0.4},
    }
    card = model_card(config, _result(read_by_original=512, fidelity_by_source=sources))
    assert (
        "| books | 1.0000 (read by the original: 1 by construction) | 0.3000 |" in card
    )  # labelled as the stages'
    # the note on "each fidelity above" follows every table it speaks of
    assert card.index("| reviews | 1.0000") < card.index("each fidelity above among them")


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"verdict_pairs": 1}, "verdict_pairs=1: a first half is told from at least one other pair's"),
        ({"verdict_pairs": -1}, "verdict_pairs=-1 must be an int >= 0"),
        ({"verdict_pairs": 10, "long_length": None}, "verdict_pairs: options of the long stage"),
    ],
)
def test_bad_verdict_pairs_are_named(overrides: dict, match: str, word_teacher: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=match):
        _config(word_teacher, tmp_path / "t.txt", tmp_path / "out", **overrides)


def test_a_long_run_ends_with_its_verdict_in_the_summary_metrics_and_card(
    word_teacher: Path, sources: tuple[Path, Path], tmp_path: Path
) -> None:
    books, reviews = sources
    train = _documents(tmp_path / "train.txt", 40, 25, 3)
    start = time.perf_counter()
    result = distill(_config(word_teacher, train, tmp_path / "long", long_train=[str(books), str(reviews)],
                             long_length=96, long_steps=2, verdict_pairs=4))  # fmt: skip
    total = time.perf_counter() - start
    metrics = json.loads((tmp_path / "long" / "metrics.json").read_text())
    assert metrics["read_by_original"] == 32  # exact_length = seq_len, the default
    reading = metrics["long_reading"]
    assert set(reading) == {"held_out", "pairs", "chunk_length", "records", "skipped", "seconds"}
    assert len(reading["records"]) == 2 * len(METHODS)  # the books at 96 and 64; the reviews skipped
    assert 0 < reading["seconds"] < total
    line = summary(result)
    assert line.startswith(
        "distill done: up to 32 tokens read by the original (fidelity 1 by construction); "
    )
    assert f"long reading: {tmp_path.name}/books.txt 96: whole " in line
    assert "long 1.0000 (read by the original)" in line
    assert "## Long reading" in (tmp_path / "long" / "README.md").read_text()
    print(f"verdict {reading['seconds']:.2f} s, long stage {result.stage_seconds['long']:.2f} s")


def test_the_verdict_sets_whole_against_chamfer_where_it_is_the_strongest_chunking() -> None:
    reading = _reading()
    for r in reading["records"]:
        r["queries"], r["hits"] = 40, ([1] * 30 + [0] * 10 if r["method"] == "whole" else [1] * 10 + [0] * 30)
    chamfer = [{**r, "method": "chunks-chamfer-512", "score": 75.0, "hits": [1] * 30 + [0] * 10}
               for r in reading["records"] if r["method"] == "chunks-best-512"]  # fmt: skip
    line = reading_line({**reading, "records": reading["records"] + chamfer})
    assert "whole 44 vs chunks 46 / best 44 / chamfer 75 / truncated 24" in line
    assert "inconclusive: 40 pairs tell apart only" in line  # whole's hits are chamfer's: no lead left
    assert "whole ahead of chunks by 50 points" in reading_line(reading)  # without it, ahead of the rest
