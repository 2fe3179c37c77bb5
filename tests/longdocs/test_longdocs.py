"""The long-document suite (linformer_kit.longdocs) on a tiny BERT and a tiny data folder."""

from __future__ import annotations

import gzip
import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from torch.nn import functional as F
from transformers import AutoModel, AutoTokenizer

from linformer_kit.longdocs import texts
from linformer_kit.longdocs.config import LongDocsConfig
from linformer_kit.longdocs.report import Source, gathered, table, write_report
from linformer_kit.longdocs.sources import wikitext_articles
from linformer_kit.longdocs.suite import run_suite
from linformer_kit.models import halves
from linformer_kit.models.halves import Record
from linformer_kit.models.paired import mrr_table
from linformer_kit.models.readings import (
    DIFFERENT_TEXTS,
    Reader,
    rows,
)
from linformer_kit.models.retrieval import retrieval_hits, retrieval_ranks, retrieval_scores
from tests.bad_input_checks import WorkStarted, check_cli
from tests.longdocs.conftest import prose, word_tokenizer


def count(tokenizer, text: str) -> int:
    return len(tokenizer(text)["input_ids"])


@pytest.mark.parametrize("length", [64, 200])
def test_passkey_documents_fit_their_length_and_hold_their_key(length: int) -> None:
    tokenizer = word_tokenizer()
    docs = texts.passkey_documents(tokenizer, length, count=12, queries=5, rng=random.Random(0))
    assert [d.query is not None for d in docs] == [True] * 5 + [False] * 7
    for doc in docs:
        assert length - 20 <= count(tokenizer, doc.text) <= length  # filled close to the length, never over
        assert "pass key is" in doc.text
    asked = docs[0].query.removeprefix("what is the passkey for ").removesuffix("?")
    assert f"{asked}'s pass key" in docs[0].text
    again = texts.passkey_documents(tokenizer, length, count=12, queries=5, rng=random.Random(0))
    assert again == docs  # seeded
    assert len({d.text for d in docs}) == 12


def test_the_key_sits_at_its_depth() -> None:
    tokenizer = word_tokenizer()
    for doc in texts.passkey_documents(tokenizer, 400, count=20, queries=20, rng=random.Random(1)):
        where = doc.text.index("pass key is") / len(doc.text)
        assert abs(where - doc.depth) < 0.1


def test_needle_documents_are_prose_holding_one_fact() -> None:
    tokenizer = word_tokenizer()
    haystack = [prose(i, 500) for i in range(3)]
    docs = texts.needle_documents(
        tokenizer, 128, count=10, queries=4, haystack=haystack, rng=random.Random(0)
    )
    for doc in docs:
        assert count(tokenizer, doc.text) <= 128
        assert doc.text.count(" hid the ") == 1
    name = docs[0].query.removeprefix("where did ").split(" hide ")[0]
    assert docs[0].text.count(name) == 1


def test_halves_do_not_overlap_and_fit() -> None:
    tokenizer = word_tokenizer()
    corpus = [prose(i, 400) for i in range(2)]
    firsts, seconds = halves.draw(tokenizer, 40, count=50, texts=corpus, rng=random.Random(0))
    assert len(firsts) == len(seconds) >= 2
    assert all(count(tokenizer, t) <= 40 for t in firsts + seconds)
    assert len(set(firsts + seconds)) == 2 * len(firsts)
    with pytest.raises(texts.TooShort, match="need 2"):
        halves.draw(tokenizer, 4000, count=5, texts=corpus, rng=random.Random(0))


def test_wikitext_articles_split_at_titles(tiny_data: Path) -> None:
    articles = wikitext_articles(tiny_data)
    assert len(articles) == 3
    assert articles[1].startswith("= Title 1 =")
    assert "= = Part = =" in articles[1]


def _reader(tiny_bert_dir: Path, tokens_per_batch: int = 10_000) -> Reader:
    model = AutoModel.from_pretrained(tiny_bert_dir).eval()
    return Reader(model, AutoTokenizer.from_pretrained(tiny_bert_dir), 64, tokens_per_batch)


def test_rows_do_not_depend_on_batching(tiny_bert_dir: Path) -> None:
    docs = [prose(i, 10 + 9 * i) for i in range(6)]
    for method in ("whole", "chunks-best-512", "late-chunking-512"):
        big, one = (
            rows(method, _reader(tiny_bert_dir), docs, 16),
            rows(method, _reader(tiny_bert_dir, 1), docs, 16),
        )
        for a, b in zip(big, one, strict=True):
            torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def test_bucketed_batches_give_the_same_rows_in_one_shape_a_bucket(tiny_bert_dir: Path) -> None:
    """`longdocs --compile` pads every batch to a multiple of the bucket and to its full row count: one input
    shape a bucket (one compile each), and the rows do not change."""
    docs = [prose(i, 10 + 9 * i) for i in range(6)]
    plain = _reader(tiny_bert_dir, 64)
    bucketed = _reader(tiny_bert_dir, 64)
    bucketed.bucket = 16
    shapes: list[tuple[int, ...]] = []
    model = bucketed.model
    bucketed.model = lambda **inputs: shapes.append(tuple(inputs["input_ids"].shape)) or model(**inputs)  # type: ignore[assignment]
    bucketed.model.parameters = model.parameters  # type: ignore[attr-defined]
    for a, b in zip(rows("whole", plain, docs, 16), rows("whole", bucketed, docs, 16), strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    assert all(width % 16 == 0 and rows_ * width <= 64 for rows_, width in shapes)
    assert len(set(shapes)) == len({width for _, width in shapes})  # one shape a width


def test_the_methods_agree_on_a_text_of_one_chunk_and_split_a_long_one(tiny_bert_dir: Path) -> None:
    reader = _reader(tiny_bert_dir)
    short, long = prose(0, 8), prose(1, 100)
    assert count(reader.tokenizer, short) <= 16 < count(reader.tokenizer, long) - 2 * 14
    one = {
        m: rows(m, reader, [short], 16)[0]
        for m in ("whole", "truncate-512", "chunks-mean-512", "chunks-best-512")
    }
    for m, r in one.items():
        torch.testing.assert_close(r, one["whole"], msg=m)
    pieces = -(-(count(reader.tokenizer, long) - 2) // 14)  # chunks of 16 tokens hold 14 of the text
    assert rows("chunks-best-512", reader, [long], 16)[0].shape == (pieces, 32)
    mean = rows("chunks-mean-512", reader, [long], 16)[0]
    assert mean.shape == (1, 32)
    torch.testing.assert_close(mean.norm(dim=-1), torch.ones(1))
    late = rows("late-chunking-512", reader, [long], 16)[0]
    assert late.shape[0] == -(-min(count(reader.tokenizer, long) - 2, 62) // 16)
    assert not torch.allclose(
        rows("truncate-512", reader, [long], 16)[0], rows("whole", reader, [long], 16)[0]
    )


def test_retrieval_takes_the_best_row_of_each_document() -> None:
    e = torch.eye(3)
    documents = [e[[0]], torch.stack([e[2], e[1]]), e[[2]] * 0.5 + e[[0]] * 0.5]
    hits = retrieval_hits([e[[1]], e[[2]], e[[0]]], documents, [1, 1, 0])
    assert hits.tolist() == [True, True, True]
    assert retrieval_hits([e[[1]]], documents, [0]).tolist() == [False]


def test_chamfer_scores_each_query_row_against_its_best_document_row() -> None:
    """Query rows e0, e1. Document A holds both, B their normalised mean: the averaged query matches B
    (cosine 1 against A's best row 0.71), while each query row finds itself in A (Chamfer 1 against B's 0.71)."""
    e = torch.eye(3)
    query = [e[:2]]
    documents = [e[:2], F.normalize(e[:2].sum(0, keepdim=True), dim=-1)]
    torch.testing.assert_close(retrieval_scores(query, documents), torch.tensor([[0.5**0.5, 1.0]]))
    torch.testing.assert_close(
        retrieval_scores(query, documents, chamfer=True), torch.tensor([[1.0, 0.5**0.5]])
    )
    assert retrieval_ranks(query, documents, [0]).tolist() == [2]
    assert retrieval_ranks(query, documents, [0], chamfer=True).tolist() == [1]


def test_ranks_agree_with_hits_and_count_a_tie_as_argmax_does() -> None:
    torch.manual_seed(0)
    queries = [F.normalize(torch.randn(m, 8), dim=-1) for m in (1, 3, 2, 1)]
    documents = [F.normalize(torch.randn(m, 8), dim=-1) for m in (2, 1, 4, 3, 1)]
    documents.append(documents[1].clone())  # a tie with document 1: ranks after it, before it for 1
    targets = [1, 5, 0, 3]
    for chamfer in (False, True):
        ranks = retrieval_ranks(queries, documents, targets, chamfer)
        scores = retrieval_scores(queries, documents, chamfer)
        # a stable descending sort keeps tied documents in index order, as argmax reads them
        expected = [int((scores[i].argsort(descending=True, stable=True) == t).nonzero()) + 1
                    for i, t in enumerate(targets)]  # fmt: skip
        assert ranks.tolist() == expected
        assert (ranks == 1).tolist() == retrieval_hits(queries, documents, targets, chamfer).tolist()
    tied = retrieval_ranks([documents[1]], documents, [5])  # its own copy, document 1, scores the same
    assert int(tied) == 2
    assert int(retrieval_ranks([documents[1]], documents, [1])) == 1


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"queries": 200}, "queries=200: at most candidates=100"),
        ({"methods": ("whole", "chunks")}, "methods=.*expected one or more of whole"),
        ({"tasks": ("documents",)}, "tasks: documents reads your documents; give them with --documents FILE"),
        (
            {"documents": ("my.jsonl",), "tasks": ("passkey",)},
            r"documents: given, but tasks=\['passkey'\] do not",
        ),
        ({"lengths": (32, 128)}, "lengths=\\[32, 128\\]: expected lengths >= 64"),
        ({"probe_subset": 500}, "probe_subset=500: at most probe_train=400"),
        ({"pairs": 1}, "pairs=1: expected a whole number >= 2"),
        ({"baselines": (4,)}, r"baselines=\[4\]: expected chunk lengths >= 8 tokens"),
        ({"model_chunks": (2,)}, r"model_chunks=\[2\]: expected chunk lengths >= 8"),
        ({"model_chunks": (8192,)}, r"model_chunks=\[8192\]: at most the longest of lengths, 4096"),
    ],
)
def test_bad_values_are_named(change: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        LongDocsConfig(model="m", output_dir="out", **change)


def test_bad_files_are_named_before_any_model_loads(
    tmp_path: Path, tiny_bert_dir: Path, tiny_data: Path
) -> None:
    config = LongDocsConfig(model=str(tiny_bert_dir), data=str(tiny_data), output_dir=str(tmp_path / "out"))
    with pytest.raises(ValueError, match="chunk_length=512: longer than the original's longest input 64"):
        config.check_files()
    config = replace(config, chunk_length=32, data=str(tmp_path))
    with pytest.raises(ValueError, match=r"lacks gutenberg/test\.jsonl\.gz"):
        config.check_files()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "longdocs.json").write_text("{}")
    with pytest.raises(ValueError, match=r"already holds longdocs\.json"):
        replace(config, data=str(tiny_data)).check_files()
    assert (tmp_path / "out" / "longdocs.json").read_text() == "{}"  # untouched


@pytest.mark.slow
def test_the_suite_writes_every_record_table_and_plot(
    tmp_path: Path, tiny_bert_dir: Path, tiny_data: Path
) -> None:
    config = LongDocsConfig(
        model=str(tiny_bert_dir), data=str(tiny_data), output_dir=str(tmp_path / "out"), lengths=(64, 128),
        candidates=6, queries=3, pairs=3, probe_train=12, probe_subset=8, probe_test=10, chunk_length=32,
        full_extended_max=64, seeds=(1, 2), baselines=(16, 32), model_chunks=(64,),
    )  # fmt: skip
    records = run_suite(config)
    body = json.loads((tmp_path / "out" / "longdocs.json").read_text())
    assert len(body["records"]) == len(records)
    keys = {
        "task",
        "length",
        "method",
        "score",
        "model",
        "seed",
        "seconds_per_document",
        "depth",
        "queries",
        "hits",
        "ranks",
    }
    assert all(set(r) == keys for r in body["records"])
    for r in body["records"]:  # an accuracy keeps each query's outcome, in query order (models/paired.py)
        if r["queries"] is not None:
            assert len(r["hits"]) == r["queries"]
            assert set(r["hits"]) <= {0, 1}
            assert 100 * sum(r["hits"]) / r["queries"] == pytest.approx(r["score"], abs=0.01)
        if r["task"] != "imdb" and r["queries"] is not None:  # a retrieval keeps each own document's rank
            documents = 6 if r["task"] in ("passkey", "access-code", "needle") else 3  # candidates, or pairs
            assert all(1 <= rank <= documents for rank in r["ranks"])
        else:
            assert r["ranks"] is None
    overall = {(r.task, r.length, r.method, r.seed) for r in records if r.depth is None}
    for task in ("passkey", "needle", "books", "wikitext"):
        for seed in (1, 2):
            assert (task, 64, "full-extended", seed) in overall
            assert (task, 128, "full-extended", seed) not in overall  # above full_extended_max
            assert (task, 128, "chunks-best-32", seed) in overall  # named by the chunk length it ran at
    for method in ("chunks-best-32", "chunks-chamfer-32", "late-chamfer-32", "contextual-chamfer-32"):
        assert ("imdb", 128, method, 1) not in overall  # a retrieval reading only ...
        assert ("books", 128, method, 1) in overall
    assert ("imdb", 128, "chunks-mean-32", 1) in overall  # ... where the classifier's readings are
    assert not any("512" in r.method for r in records)
    # the baselines: every other chunk length, consecutive and overlapping, on the halves tasks alone
    chunkings = {f"chunks-{how}-{at}" for how in ("mean", "best", "chamfer")
                 for at in ("16", "16-overlap", "32-overlap")}  # fmt: skip
    for task in ("books", "wikitext"):
        assert {(task, 128, m, 1) for m in chunkings} <= overall
    assert not any(r.method in chunkings for r in records if r.task in ("passkey", "needle", "imdb"))
    # the model under test on chunks of 64 tokens, named as its reading (the paired table's rows)
    mine = {(r.task, r.method, r.model) for r in records if r.method.startswith("model-") and r.length == 128}
    assert mine == {
        (t, f"model-chunks-{m}-64", tiny_bert_dir.name)
        for t in ("books", "wikitext")
        for m in ("mean", "best", "chamfer")
    }
    halves = [r for r in records if r.task == "books" and r.length == 128 and r.seed == 1]
    assert all(r.queries == halves[0].queries for r in halves)  # the same pairs
    assert all(0 <= r.score <= 100 and r.seconds_per_document > 0 for r in records)
    again = run_suite(replace(config, output_dir=str(tmp_path / "again")))
    assert [r.score for r in again] == [r.score for r in records]  # seeded
    paths = write_report(config.output_dir)
    assert paths["plot"].stat().st_size > 0
    assert "| passkey | 64 |" in table(body["records"])
    assert "| books | 128 | whole | 6 |" in paths["table"].read_text()  # paired: 3 pairs a seed, two seeds
    assert "| books | 128 | whole | 6 | " in mrr_table(body["records"])  # and by MRR


def _fidelity(model: Path, original: Path, data: Path, out: Path) -> dict[tuple[str, str], Record]:
    config = LongDocsConfig(model=str(model), original=str(original), data=str(data), output_dir=str(out),
                            lengths=(64, 128), tasks=("fidelity",), pairs=3, chunk_length=64)  # fmt: skip
    records = run_suite(config)
    assert all(r.length == 64 for r in records)  # 128 > chunk_length: the original does not read it whole
    return {(r.task, r.method): r for r in records}


def test_fidelity_is_the_model_against_the_original_on_every_source(
    tmp_path: Path, tiny_bert_dir: Path, other_bert_dir: Path, tiny_data: Path
) -> None:
    """The `fidelity` task: the mean cosine of the model's and the original's embeddings of the same passages
    (method `whole`), beside the original's of two different passages. With an original that differs from the
    model it is below 100, the same read either way round (a cosine), and the reference is the original's
    alone; a model read as its own original keeps 100."""
    a, b = tiny_bert_dir, other_bert_dir
    ab = _fidelity(a, b, tiny_data, tmp_path / "ab")
    ba = _fidelity(b, a, tiny_data, tmp_path / "ba")
    bb = _fidelity(b, b, tiny_data, tmp_path / "bb")
    sources = {f"fidelity-{s}" for s in ("books", "wikitext", "imdb", "sst2")}
    assert {task for task, _ in ab} == sources
    for task in sources:
        whole, different = ab[(task, "whole")], ab[(task, DIFFERENT_TEXTS)]
        assert (whole.model, different.model) == (a.name, b.name)  # each method names the model it read
        assert whole.score < 99, (task, whole.score)  # not 100 by construction
        assert whole.score == pytest.approx(ba[(task, "whole")].score, abs=0.011)  # one cosine either way
        assert different.score == bb[(task, DIFFERENT_TEXTS)].score  # the original's alone
        assert bb[(task, "whole")].score == pytest.approx(100.0, abs=0.01)
        assert different.score < 100 - 0.01
    body = json.loads((tmp_path / "ab" / "longdocs.json").read_text())
    assert "| whole | two-different-texts |" in table(body["records"])  # the reference has its column


def _run_folder(folder: Path, records: list[dict]) -> Path:
    folder.mkdir()
    (folder / "longdocs.json").write_text(json.dumps({"records": records}))
    return folder


def test_runs_made_apart_are_gathered_into_one_table(tmp_path: Path) -> None:
    def record(method: str, model: str, score: float, task: str = "books") -> dict:
        return {"task": task, "length": 4096, "method": method, "score": score, "model": model, "seed": 1,
                "seconds_per_document": 1.0, "depth": None}  # fmt: skip

    mean = record("chunks-mean-512", "o", 46.0)
    student = _run_folder(
        tmp_path / "student", [record("whole", "s", 50.0), mean, record("whole", "s", 9, "imdb")]
    )
    baselines = _run_folder(tmp_path / "baselines", [record("whole", "t", 40.0), mean])
    records = gathered([Source(student, ("whole",), ("books",)), Source(baselines, ("chunks-mean-512",))])
    assert [(r["method"], r["model"]) for r in records] == [("whole", "s"), ("chunks-mean-512", "o")]
    assert "| books | 4096 | **50.0** | 46.0 |" in table(records)
    # the same record from two runs: kept once; another score for it: refused
    both = gathered([Source(student, ("chunks-mean-512",)), Source(baselines, ("chunks-mean-512",))])
    assert both == [mean]
    with pytest.raises(ValueError, match=r"both hold \('books', 4096, 'whole', 1, None\), with other scores"):
        gathered([Source(student, ("whole",)), Source(baselines, ("whole",))])
    with pytest.raises(ValueError, match=r"no record of method \['late-chunking-512'\] among those"):
        gathered([Source(student, ("whole", "late-chunking-512"))])  # one name right does not hide the other
    with pytest.raises(ValueError, match=r"no record of task \['book'\] among those"):
        gathered([Source(student, ("whole",), ("books", "book"))])
    assert "Seconds per document (timed apart):" in table(records, "timed apart")


def test_the_default_tasks_are_what_the_given_text_feeds() -> None:
    assert LongDocsConfig(model="m", output_dir="o").tasks == ("passkey", "access-code")  # no data at all
    every = LongDocsConfig(model="m", output_dir="o", data="d").tasks
    assert every == (
        "passkey",
        "access-code",
        "needle",
        "imdb",
        "books",
        "wikitext",
        "paragraphs",
        "fidelity",
    )
    assert LongDocsConfig(model="m", output_dir="o", documents=("my.jsonl",)).tasks == ("documents",)


def test_tasks_that_read_a_data_folder_are_refused_without_one(tmp_path: Path, tiny_bert_dir: Path) -> None:
    config = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "out"), chunk_length=32,
                            tasks=("passkey", "books", "imdb"))  # fmt: skip
    with pytest.raises(ValueError, match="tasks books, imdb read a data folder: give --data DIR"):
        config.check_files()


def test_access_code_documents_are_another_construction_of_the_passkey() -> None:
    tokenizer = word_tokenizer()
    for build in (texts.LONGEMBED, texts.ACCESS_CODE):
        docs = texts.passkey_documents(
            tokenizer, 128, count=8, queries=4, rng=random.Random(0), construction=build
        )
        assert all(count(tokenizer, d.text) <= 128 for d in docs)
        assert all(
            tokenizer.unk_token_id not in tokenizer(d.text + " " + (d.query or ""))["input_ids"] for d in docs
        )
        for doc in docs[:4]:
            name = (
                (doc.query or "").rsplit(" of ", 1)[-1].removesuffix("?")
                if build is texts.ACCESS_CODE
                else None
            )
            assert name is None or f"The access code of {name} is" in doc.text
    passkey = texts.passkey_documents(tokenizer, 128, 8, 4, random.Random(0))
    code = texts.passkey_documents(tokenizer, 128, 8, 4, random.Random(0), texts.ACCESS_CODE)
    assert [d.depth for d in passkey] == [d.depth for d in code]  # the same draws, another text

    def sentences(text: str) -> set[str]:
        return {s.strip() for s in text.split(".") if s.strip()}

    assert not sentences(passkey[0].text) & sentences(code[0].text)


def _documents_file(path: Path, texts_: list[str]) -> Path:
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts_))
    return path


def test_user_documents_read_json_lines_text_files_and_folders(tmp_path: Path) -> None:
    from linformer_kit.longdocs.sources import user_documents

    records = _documents_file(tmp_path / "a.jsonl", ["one", "two"])
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "b.txt").write_text("three\n\nstill three")
    (folder / "c.txt").write_text("four")
    (folder / "notes.md").write_text("not read")
    assert user_documents((str(records), str(folder))) == ["one", "two", "three\n\nstill three", "four"]
    with pytest.raises(ValueError, match=r"documents: 'missing\.jsonl' is not a file or a folder"):
        user_documents(("missing.jsonl",))
    (tmp_path / "bad.jsonl").write_text(json.dumps({"body": "x"}) + "\n")
    with pytest.raises(ValueError, match=r"line 1 of .*bad\.jsonl is not a JSON object with a 'text' string"):
        user_documents((str(tmp_path / "bad.jsonl"),))


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        (
            "corrupt.jsonl.gz",
            b"not gzip at all",
            r"corrupt\.jsonl\.gz is not a gzip file, as its name ends \.gz",
        ),
        ("cut.jsonl.gz", gzip.compress(b'{"text": "one"}\n')[:-6], r"cut\.jsonl\.gz is not a gzip file"),
        ("latin.txt", "caf\u00e9".encode("latin-1"), r"latin\.txt is not UTF-8 text \(byte 3"),
        ("lines.jsonl", b'{"text": "one"}\n{"text": \n', r"line 2 of .*lines\.jsonl is not JSON"),
        ("list.jsonl", b'["text"]\n', r"line 1 of .*list\.jsonl is not a JSON object with a 'text' string"),
    ],
    ids=["not-gzip", "cut-gzip", "latin-1", "bad-json", "not-object"],
)
def test_unreadable_documents_are_named_before_the_tokenizer_loads(
    name: str,
    content: bytes,
    match: str,
    tmp_path: Path,
    tiny_bert_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    """`linformer longdocs --documents` with a file that is not what its name says: a clear error naming it
    (not gzip.BadGzipFile's traceback), before the tokenizer, let alone a model, loads."""
    import transformers

    def no_load(*args, **kwargs):
        raise WorkStarted("the tokenizer loaded")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", no_load)
    (tmp_path / name).write_bytes(content)
    argv = ["longdocs", tiny_bert_dir, "--original", tiny_bert_dir, "--documents", tmp_path / name,
            "--chunk-length", 32, "--output-dir", tmp_path / "out"]  # fmt: skip
    check_cli(argv, match, capsys, watch=[tmp_path])


@pytest.mark.parametrize(
    ("documents", "lengths", "pairs", "match"),
    [
        (1, (64,), 2, r"documents: 1 document\(s\); the halves task needs at least 2"),
        (
            4,
            (64, 400),
            2,
            r"none is long enough for length 400 \(2 halves of 398 tokens; the longest holds \d+",
        ),
        (4, (64,), 50, r"they hold \d+ pair\(s\) of halves at length 64, fewer than pairs=50"),
    ],
)
def test_documents_too_few_or_too_short_are_named_before_any_model_loads(
    documents: int, lengths: tuple, pairs: int, match: str, tmp_path: Path, tiny_bert_dir: Path
) -> None:
    path = _documents_file(tmp_path / "my.jsonl", [prose(i, 200) for i in range(documents)])
    config = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "out"), documents=(str(path),),
                            lengths=lengths, pairs=pairs, chunk_length=32)  # fmt: skip
    with pytest.raises(ValueError, match=match):
        config.check_files()
    assert not (tmp_path / "out").exists()


def test_the_suite_reads_a_user_s_documents_and_passkeys_with_no_data(
    tmp_path: Path, tiny_bert_dir: Path
) -> None:
    path = _documents_file(tmp_path / "my.jsonl", [prose(i, 300) for i in range(6)])
    methods = ("whole", "truncate-512", "chunks-mean-512", "chunks-best-512")
    config = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "mine"), documents=(str(path),),
                            lengths=(64,), pairs=4, chunk_length=32, methods=methods)  # fmt: skip
    records = run_suite(config)
    assert {(r.task, r.method) for r in records} == {("documents", m.replace("512", "32")) for m in methods}
    generated = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "keys"), lengths=(64,),
                               candidates=6, queries=3, chunk_length=32, methods=("whole",))  # fmt: skip
    tasks = {r.task for r in run_suite(generated) if r.depth is None}
    assert tasks == {"passkey", "access-code"}


def _topic_paragraphs(data: Path) -> Path:
    """A WikiText file of 6 paragraphs of about 80 words, each of its own words (names, colours, things,
    prose): the halves of one paragraph share their words with each other only, so a model can match them."""
    topics = [texts.FIRST_NAMES[:15], texts.FIRST_NAMES[15:], texts.LAST_NAMES, texts.COLOURS, texts.THINGS,
              ("river", "mill", "ships", "storms", "sea", "stories", "men", "old")]  # fmt: skip
    rng = random.Random(0)
    paragraphs = [
        " ".join(" ".join(rng.choice(words) for _ in range(8)).capitalize() + "." for _ in range(10))
        for words in topics
    ]
    wiki = data / "wikitext" / "wikitext-2-raw"
    wiki.mkdir(parents=True)
    articles = [f" = Title {i} = \n \n {paragraphs[2 * i]}\n \n = = Part = = \n {paragraphs[2 * i + 1]}\n"
                for i in range(3)]  # fmt: skip
    (wiki / "wiki.test.raw").write_text(" \n" + "".join(articles), encoding="utf-8")
    return data


def test_paragraph_halves_are_read_whole_by_the_model_and_the_original(
    tmp_path: Path, tiny_bert_dir: Path, blind_bert_dir: Path, tiny_data: Path
) -> None:
    """The `paragraphs` task: WikiText paragraphs cut at their middle token, a first half finds its second half;
    every half fits one chunk, so `whole` is the model's recall and `truncate-512` the original's. On paragraphs
    of their own words the model finds every half; an original that tells no two texts apart (every score
    ties, so the first second half wins) finds one in `pairs`. A model read as its own original scores what
    the original does."""
    from linformer_kit.longdocs.sources import wikitext_paragraphs

    paragraphs = wikitext_paragraphs(tiny_data)
    assert len(paragraphs) == 6  # two a tiny article: its text and its part, no heading
    assert not any(p.startswith("=") for p in paragraphs)
    data = _topic_paragraphs(tmp_path / "data")

    def scores(original: Path, out: str) -> dict[tuple[str, int], float]:
        config = LongDocsConfig(model=str(tiny_bert_dir), original=str(original), data=str(data),
                                output_dir=str(tmp_path / out), tasks=("paragraphs",), pairs=4, chunk_length=64,
                                seeds=(1, 2))  # fmt: skip
        return {(r.method, r.seed): r.score for r in run_suite(config) if r.task == "paragraphs"}

    blind, itself = scores(blind_bert_dir, "blind"), scores(tiny_bert_dir, "itself")
    assert set(blind) == set(itself) == {(m, s) for m in ("whole", "truncate-64") for s in (1, 2)}
    for seed in (1, 2):
        assert blind[("truncate-64", seed)] == 25.0  # 1 of 4
        assert blind[("whole", seed)] == itself[("whole", seed)] == 100.0  # the model's own recall
        assert itself[("truncate-64", seed)] == itself[("whole", seed)]


def test_a_labelled_chunking_keeps_its_name(tmp_path: Path, tiny_bert_dir: Path) -> None:
    """A chunking of 512 tokens run beside chunks of 32 is `chunks-mean-512`, not the run's own `chunks-mean-32`."""
    from linformer_kit.longdocs.suite import Suite

    config = LongDocsConfig(model=str(tiny_bert_dir), output_dir=str(tmp_path / "out"), chunk_length=32)
    suite = Suite(config, load=lambda path, n: None)  # type: ignore[arg-type,return-value]
    hits = torch.tensor([True, False])
    suite.add("books", 64, "chunks-mean-512", hits, 1, 0.1)  # the methods' own reading, at chunk_length
    suite.add("books", 64, "chunks-mean-512", hits, 1, 0.1, labelled=True)  # a baseline of 512 tokens
    assert [r.method for r in suite.records] == ["chunks-mean-32", "chunks-mean-512"]
