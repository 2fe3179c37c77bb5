"""The long stage's text: each `long_train` source's held-out passages (train/distill/data.py `long_text`),
the short term's windows of it (train/distill/long.py `short_examples`), the recommended defaults, and a run
that takes its 512 stages from another run (`stages_from`)."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from linformer_kit.bench.memory import peak_rss
from linformer_kit.train.data import load_text
from linformer_kit.train.distill import DistillConfig, distill
from linformer_kit.train.distill.data import (
    held_out_count,
    load_data,
    long_spans,
    long_text,
    passages,
    source_windows,
    stage_examples,
)
from linformer_kit.train.distill.long import short_examples
from tests.train.test_distill import MANY_WORDS, _word_teacher
from tests.train.test_distill_long import _config


def _documents(path: Path, count: int, words: int, seed: int) -> Path:
    rng = random.Random(seed)
    path.write_text(
        "\n\n".join(" ".join(rng.choice(MANY_WORDS) for _ in range(words)) for _ in range(count)) + "\n"
    )
    return path


@pytest.fixture
def word_teacher(tmp_path: Path) -> Path:
    return _word_teacher(tmp_path / "word-teacher")


def test_each_long_train_source_holds_out_its_last_documents(word_teacher: Path, tmp_path: Path) -> None:
    books, reviews = (
        _documents(tmp_path / "books.txt", 30, 200, 1),
        _documents(tmp_path / "reviews.txt", 20, 50, 2),
    )
    config = _config(word_teacher, books, tmp_path / "out", long_train=[str(books), str(reviews)],
                     max_eval_documents=6, seq_len=32)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    text = long_text(config, tokenizer)
    kept = {}
    for path, count in ((books, 3), (reviews, 2)):  # a tenth, at least 2, at most max_eval_documents
        documents = load_text([str(path)], "text", "t")["text"]
        name = f"{tmp_path.name}/{path.name} (long_train, held out)"
        assert 2 <= len(text.held_out[name]) <= 6
        for passage in text.held_out[name]:  # cut from a held-out document, at most seq_len with specials
            assert any(passage in document for document in documents[-count:])
            assert len(tokenizer(passage)["input_ids"]) <= 32
        kept[path] = documents[:-count]
    assert list(text.train["text"]) == kept[books] + kept[reviews]


def test_a_source_too_small_to_spare_documents_trains_whole(word_teacher: Path, tmp_path: Path) -> None:
    two = _documents(tmp_path / "two.txt", 2, 200, 1)
    config = _config(word_teacher, two, tmp_path / "out", long_train=[str(two)], seq_len=32)
    text = long_text(config, AutoTokenizer.from_pretrained(word_teacher))
    assert text.held_out == {}
    assert len(text.train) == 2


def test_without_long_train_the_long_text_is_the_train_documents_less_the_held_out(
    word_teacher: Path, tmp_path: Path
) -> None:
    train = _documents(tmp_path / "train.txt", 40, 100, 1)
    config = _config(word_teacher, train, tmp_path / "out", seq_len=32, max_eval_documents=6)
    text = long_text(config, AutoTokenizer.from_pretrained(word_teacher))
    assert text.held_out == {}  # the fidelity's held-out documents are train's last 4 already
    assert list(text.train["text"]) == load_text([str(train)], "text", "t")["text"][:36]


def test_held_out_count_is_a_tenth_within_its_bounds() -> None:
    assert [held_out_count(n, 256) for n in (3, 40, 1000, 50_000)] == [2, 4, 100, 256]
    # --long-held-out 0.4: the study's 100 of the 250 Gutenberg train books (docs/longdocs.md)
    assert [held_out_count(n, 256, 0.4) for n in (3, 250, 1000)] == [2, 100, 256]
    assert held_out_count(100, 256, 0.29) == 29  # not 28 (100 * 0.29 is 28.999... in floating point)


def test_long_held_out_holds_out_that_share_of_each_source(word_teacher: Path, tmp_path: Path) -> None:
    books = _documents(tmp_path / "books.txt", 20, 100, 1)
    config = _config(word_teacher, books, tmp_path / "out", long_train=[str(books)], seq_len=32,
                     long_held_out=0.4, max_eval_documents=10)  # fmt: skip
    text = long_text(config, AutoTokenizer.from_pretrained(word_teacher))
    documents = load_text([str(books)], "text", "t")["text"]
    assert list(text.train["text"]) == documents[:12]
    assert list(text.held_out_documents.values()) == [documents[12:]]


def test_long_held_out_without_long_train_is_named(word_teacher: Path, tmp_path: Path) -> None:
    books = _documents(tmp_path / "books.txt", 20, 100, 1)
    with pytest.raises(
        ValueError, match=r"long_held_out=0\.4: the share held out of each --long-train source"
    ):
        _config(word_teacher, books, tmp_path / "out", long_held_out=0.4, long_length=64)


@pytest.mark.parametrize("share", [0.0, 1.0, -0.1, float("nan")])
def test_a_bad_long_held_out_is_named(share: float, word_teacher: Path, tmp_path: Path) -> None:
    books = _documents(tmp_path / "books.txt", 20, 100, 1)
    with pytest.raises(ValueError, match="long_held_out="):
        _config(word_teacher, books, tmp_path / "out", long_train=[str(books)], long_held_out=share)


def test_passages_are_consecutive_pieces_and_short_tails_are_dropped(word_teacher: Path) -> None:
    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    words = [MANY_WORDS[i % len(MANY_WORDS)] for i in range(100)]
    lengths = sorted(len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in
                     passages(tokenizer, [" ".join(words)], 32, 100, seed=0))  # fmt: skip
    assert lengths == [10, 30, 30, 30]  # 100 tokens: 3 pieces of 30 and a tail of 10
    lengths = [
        len(tokenizer(p)["input_ids"]) for p in passages(tokenizer, [" ".join(words[:95])], 32, 100, 0)
    ]
    assert len(lengths) == 3  # a tail of 5 tokens is dropped


def test_the_short_term_alternates_train_examples_and_windows_of_the_long_text(
    word_teacher: Path, tmp_path: Path
) -> None:
    books = _documents(tmp_path / "books.txt", 10, 200, 1)
    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    short = load_text([str(books)], "text", "t").map(lambda row: {"input_ids": [7, 8, 9]})  # marked rows
    config = _config(word_teacher, books, tmp_path / "out", seq_len=32, long_tune="tune", short_weight=1.0)
    texts = load_text([str(books)], "text", "t")
    rows = short_examples(config, short, [texts], tokenizer, 7)
    assert rows[0::2] == [[7, 8, 9]] * 4
    for window in rows[1::2]:
        assert len(window) == 32
        assert (window[0], window[-1]) == (tokenizer.cls_token_id, tokenizer.sep_token_id)
    train_only = _config(
        word_teacher, books, tmp_path / "out", seq_len=32, short_text="train", short_weight=1.0
    )
    assert short_examples(train_only, short, [texts], tokenizer, 3) == [[7, 8, 9]] * 3
    no_term = _config(
        word_teacher, books, tmp_path / "out", seq_len=32, short_weight=0.0
    )  # no windows cut for it
    assert short_examples(no_term, short, [texts], tokenizer, 3) == [[7, 8, 9]] * 3
    tiny = load_text([str(_documents(tmp_path / "tiny.txt", 4, 10, 2))], "text", "t")
    with pytest.raises(
        ValueError, match="short_text='train\\+long': the long text holds no window of seq_len=32"
    ):
        short_examples(config, short, [tiny], tokenizer, 3)


def test_windows_come_from_each_source_in_turn_however_many_documents_it_has(
    word_teacher: Path, tmp_path: Path
) -> None:
    # 2 books of 8 windows each beside 200 reviews of 1 window: drawn from all documents at once, the books
    # would give about 1 window in 13; in turn they give half, while they have windows left
    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    books = load_text([str(_documents(tmp_path / "books.txt", 2, 250, 1))], "text", "t")
    reviews = load_text([str(_documents(tmp_path / "reviews.txt", 200, 35, 2))], "text", "t")
    from_books = {tuple(w) for w in long_spans(books, tokenizer, 32, 100, seed=0)}
    windows = source_windows([books, reviews], tokenizer, 32, 12, seed=0)
    assert len(windows) == 12
    assert [tuple(w) in from_books for w in windows] == [True, False] * 6
    many = source_windows([books, reviews], tokenizer, 32, 40, seed=0)  # books run out at 8 (4 a document)
    assert sum(tuple(w) in from_books for w in many) == 8
    assert len(many) == 40


def test_long_spans_take_at_most_per_document_of_each(word_teacher: Path, tmp_path: Path) -> None:
    texts = load_text([str(_documents(tmp_path / "books.txt", 5, 200, 1))], "text", "t")
    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    assert len(long_spans(texts, tokenizer, 32, 100, seed=0)) == 30  # 6 a document
    assert len(long_spans(texts, tokenizer, 32, 100, seed=0, per_document=1)) == 5


def test_a_long_stage_reads_what_the_512_stages_read_exactly_by_default(
    word_teacher: Path, tmp_path: Path
) -> None:
    text = _documents(tmp_path / "t.txt", 10, 50, 1)
    long_run = _config(word_teacher, text, tmp_path / "a")
    long_run.preflight()
    assert (long_run.exact_length, long_run.contrastive_weight) == (32, 1.0)  # c1's, with the window term
    assert DistillConfig.__dataclass_fields__["long_steps"].default == 40
    # the recommended long student: the 512 stages on half windows, long layers, no short term (it would read
    # no weight that trains)
    assert (long_run.stage_text, long_run.long_tune, long_run.short_weight) == ("train+long", "layers", 0.0)
    short_run = _config(
        word_teacher, text, tmp_path / "b", long_length=None, long_steps=40, long_batch_size=4
    )
    short_run.preflight()
    assert short_run.exact_length is None
    assert short_run.stage_text == "train"
    shared = _config(
        word_teacher, text, tmp_path / "c", long_tune="tune"
    )  # every weight: the short term holds them
    shared.preflight()
    assert shared.short_weight == 1.0
    below = _config(
        word_teacher, text, tmp_path / "d", exact_length=16
    )  # inputs of 17-32 tokens read the long layers
    below.preflight()
    assert below.short_weight == 1.0


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def test_a_long_run_takes_the_finished_512_stage_of_another_run(word_teacher: Path, tmp_path: Path) -> None:
    train, books = (
        _documents(tmp_path / "train.txt", 40, 25, 1),
        _documents(tmp_path / "books.txt", 30, 200, 2),
    )
    first = distill(_config(word_teacher, train, tmp_path / "512", long_length=None, long_steps=40,
                            long_batch_size=4))  # fmt: skip
    before = _digest(tmp_path / "512")
    mark = peak_rss() / 1e9  # the process's high-water mark before the run: each stage's is at least it
    result = distill(_config(word_teacher, train, tmp_path / "long", stages_from=str(tmp_path / "512"),
                             long_train=[str(books)], long_steps=2, stage_text="train"))  # fmt: skip
    assert result.fidelity["end-to-end"] == first.fidelity["end-to-end"]  # the same student, not retrained
    assert not (tmp_path / "long" / "end-to-end").exists()
    assert _digest(tmp_path / "512") == before  # only read
    assert f"{tmp_path.name}/books.txt (long_train, held out)" in result.fidelity_by_source
    metrics = json.loads((tmp_path / "long" / "metrics.json").read_text())
    assert list(metrics["fidelity_by_source"]) == list(result.fidelity_by_source)
    assert list(metrics["stage_peak_gb"]) == ["end-to-end", "long"]
    # each the process's high-water mark (VmHWM) when the stage ended, in GB: not below the mark before the run,
    # not above the mark now (rounded to 0.01 GB); a mark, not the stage's own peak (docs/distill.md)
    for stage, gb in metrics["stage_peak_gb"].items():
        assert mark - 0.01 <= gb <= peak_rss() / 1e9 + 0.01, (stage, gb, mark)
    card = (tmp_path / "long" / "README.md").read_text()
    assert "Peak resident memory of the run" in card
    assert "Inputs of at most 32 tokens are read by `word-teacher`'s own weights" in card  # the defaults
    with pytest.raises(ValueError, match=r"end-to-end finished with other options .* or --stages-from"):
        distill(
            _config(
                word_teacher, train, tmp_path / "other", stages_from=str(tmp_path / "512"), local_window=4
            )
        )
    with pytest.raises(
        ValueError, match=r"end-to-end finished with other options .* or --stages-from \(with --long-length"
    ):
        distill(_config(word_teacher, train, tmp_path / "mixed", stages_from=str(tmp_path / "512"),
                        long_train=[str(books)], stage_text="train+long"))  # fmt: skip  # other 512 examples


def test_a_reused_512_stage_on_half_windows_builds_no_windows(
    word_teacher: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """stage_text='train+long' with every 512 stage taken finished (--stages-from): its windows are not cut
    again (a minute or two of tokenizing on Gutenberg + IMDB unsup)."""
    from linformer_kit.train.distill import run

    train, books = (
        _documents(tmp_path / "train.txt", 40, 25, 1),
        _documents(tmp_path / "books.txt", 30, 200, 2),
    )
    options = dict(long_train=[str(books)], stage_text="train+long", long_steps=1)
    first = distill(_config(word_teacher, train, tmp_path / "first", **options))

    def refuse(*args, **kwargs):
        raise AssertionError("stage_examples called for a reused 512 stage")

    monkeypatch.setattr(run, "stage_examples", refuse)
    result = distill(_config(word_teacher, train, tmp_path / "second", stages_from=str(tmp_path / "first"),
                             **options))  # fmt: skip
    assert result.fidelity["end-to-end"] == first.fidelity["end-to-end"]
    with pytest.raises(AssertionError, match="stage_examples called"):  # a 512 stage to train builds them
        distill(_config(word_teacher, train, tmp_path / "third", **options))


@pytest.mark.parametrize(
    ("folder", "match"),
    [
        ("out", "is this run's output_dir; to continue a run, pass --resume"),
        ("empty", "holds no finished stage"),
    ],
)
def test_a_bad_stages_from_is_named_before_any_work(
    folder: str, match: str, word_teacher: Path, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    text = _documents(tmp_path / "t.txt", 10, 50, 1)
    with pytest.raises(ValueError, match=match):
        distill(_config(word_teacher, text, tmp_path / "out", stages_from=str(tmp_path / folder)))
    assert not (tmp_path / "out").exists()


def test_the_512_stages_take_half_their_examples_from_the_long_text_when_asked(
    word_teacher: Path, tmp_path: Path
) -> None:
    books = _documents(tmp_path / "books.txt", 4, 200, 1)  # 2 held out, 2 kept: 8 windows, every one drawn
    reviews = _documents(tmp_path / "reviews.txt", 40, 20, 2)
    config = _config(word_teacher, reviews, tmp_path / "out", long_train=[str(books), str(reviews)],
                     seq_len=32, stage_text="train+long", max_eval_documents=4)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(word_teacher)
    train = load_data(config, tokenizer)[0]
    text = long_text(config, tokenizer)
    rows = stage_examples(config, train, text.sources, tokenizer)
    assert len(rows) == len(train)
    assert rows.column_names == ["input_ids", "attention_mask"]
    windows = [ids for ids in rows["input_ids"] if ids not in train["input_ids"]]
    assert len(windows) == 8  # as many as the kept books hold (4 a document), fewer than half of train's 36
    kept = [ids for ids in rows["input_ids"] if ids in train["input_ids"]]
    assert len(kept) == len(train) - 8
    assert kept != list(train["input_ids"])[: len(kept)]  # a seeded draw of train's, not its first ones
    held = {
        tuple(tokenizer(d, add_special_tokens=False)["input_ids"])
        for d in load_text([str(books)], "text", "t")["text"][-2:]
    }
    for window in windows:  # whole windows of the books (the reviews hold none of 30 tokens), none held out
        assert len(window) == 32
        body = tuple(window[1:-1])
        assert not any(_contains(document, body) for document in held)
    assert stage_examples(_config(word_teacher, reviews, tmp_path / "o2", seq_len=32, stage_text="train"), train,
                          text.sources, tokenizer) is train  # fmt: skip


def _contains(document: tuple[int, ...], piece: tuple[int, ...]) -> bool:
    return any(document[a : a + len(piece)] == piece for a in range(len(document) - len(piece) + 1))


def test_stage_text_from_the_long_text_needs_a_long_stage(word_teacher: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match="stage_text='train\\+long': its windows are of the long stage's text"
    ):
        _config(word_teacher, tmp_path / "t.txt", tmp_path / "out", long_length=None, long_steps=40,
                long_batch_size=4, stage_text="train+long")  # fmt: skip
