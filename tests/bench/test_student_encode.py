"""Scope student's encode case (bench/student_encode.py, issue 81): a student through `SentenceTransformer.encode`
against the original's `encode` of the same texts as chunks, on tiny sentence-transformers folders.

The clock is a stand-in (`student_encode.timed` returns scripted seconds after making the real call): the ratio is
checked against the seconds recorded, never against the machine. Also: the texts and chunks, the skips (no
sentence-transformers folder, no sentence-transformers installed, past the time cap) and the option's checks.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import linformer_kit.bench.student_encode as student_encode
import linformer_kit.bench.timing as timing
from linformer_kit.bench import BenchmarkConfig, preset
from linformer_kit.bench.student_config import Model
from linformer_kit.bench.student_encode import (
    chunks_of,
    measure_encode,
    median_ratio,
    mixed_lengths,
    stretches,
    time_arms,
)
from linformer_kit.bench.student_records import EncodeRecord, StudentResult
from linformer_kit.bench.student_report import (
    encode_speed,
    format_student_report,
    load_student_result,
    write_student_report,
)
from tests.bad_input_checks import check_raises
from tests.bench.test_student import word_tokenizer

LONGEST = 64  # what the tiny original reads


@pytest.fixture
def sentence_transformers() -> None:
    pytest.importorskip("sentence_transformers")


MODULES = [  # all-MiniLM-L6-v2's pipeline: Transformer -> mean Pooling -> Normalize
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
]


def _pipeline_files(folder: Path) -> Path:
    """The files that make a model folder a sentence-transformers folder (mean pooling, max_seq_length 64)."""
    (folder / "modules.json").write_text(json.dumps(MODULES))
    (folder / "1_Pooling").mkdir()
    pooling = {"word_embedding_dimension": 32, "pooling_mode_mean_tokens": True}
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": LONGEST}))
    return folder


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny BERT (the original) and a Linformer converted from it (the student), both sentence-transformers
    folders, and the same student without the pipeline files ("plain")."""
    from transformers import BertConfig, BertModel

    from linformer_kit.models import from_bert

    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=LONGEST)  # fmt: skip
    root = tmp_path_factory.mktemp("student-encode")
    found = {name: root / name for name in ("teacher", "student", "plain")}
    bert = BertModel(config).eval()
    bert.save_pretrained(found["teacher"])
    for name in ("student", "plain"):
        from_bert(bert, projected_length=8, local_window=4, global_tokens=1).save_pretrained(found[name])
    for name, folder in found.items():
        tokenizer.save_pretrained(folder)
        if name != "plain":
            _pipeline_files(folder)
    return found


def _config(folders: dict[str, Path], **changes) -> BenchmarkConfig:
    return preset("student").replace(**{
        "original": str(folders["teacher"]), "students": (str(folders["student"]),), "seq_lens": (16, 48),
        "chunk_length": 16, "encode_texts": 5, "rounds": 3, "warmup": 1, "runtimes": ("torch",),
        "measure_memory": False, **changes,
    })  # fmt: skip


def _models(folders: dict[str, Path], *names: str) -> list[Model]:
    return [Model(name, str(folders[name]), LONGEST, 4) for name in names]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """Stand-in seconds: each timed call is made, then takes the next of the list (filled by the test)."""
    seconds: list[float] = []

    def timed(call, device: str = "cpu") -> float:
        call()
        return seconds.pop(0)

    def sample(call, device: str, *, warmup: int, repeats: int, number: int) -> list[float]:
        assert (warmup, number) == (0, 1)  # time_arms: one call a sample
        return [timed(call) for _ in range(repeats)]

    monkeypatch.setattr(student_encode, "timed", timed)  # warm_up's
    monkeypatch.setattr(timing, "sample", sample)  # time_arms' rounds (timing.time_in_rounds)
    yield seconds
    assert not seconds, "a scripted second was not used: the calls are not the ones the test expects"


# --- the texts, the rounds and the ratio ------------------------------------------------------------------------


def test_texts_are_the_drawn_lengths_and_their_chunks_hold_every_token() -> None:
    tokenizer = word_tokenizer()
    lengths = mixed_lengths(40, 128, 4096)
    assert lengths == mixed_lengths(40, 128, 4096)  # seeded: every run reads the same texts
    assert all(128 <= n <= 4096 for n in lengths)
    assert len(set(lengths)) > 30  # mixed
    texts = stretches(tokenizer, None, lengths[:6])  # the built-in text, repeated far past its end
    counts = [len(tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
    assert counts == [n - 2 for n in lengths[:6]]  # [CLS] and [SEP] counted in a length
    assert texts[0] != texts[1]  # text i is the stretch after text i - 1
    for text, count in zip(texts, counts):
        pieces = chunks_of(tokenizer, text, 14)
        sizes = [len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in pieces]
        assert sizes[:-1] == [14] * (len(pieces) - 1)
        assert 0 < sizes[-1] <= 14
        assert sum(sizes) == count
        assert len(pieces) == -(-count // 14)


def test_rounds_rotate_the_order_and_keep_each_arm_s_seconds(clock: list[float]) -> None:
    calls: list[str] = []
    arms = [("a", lambda: calls.append("a")), ("b", lambda: calls.append("b"))]
    clock += [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    seconds = time_arms(arms, 3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    assert seconds == {"a": [1.0, 4.0, 5.0], "b": [2.0, 3.0, 6.0]}
    calls.clear()
    arms.append(("c", lambda: calls.append("c")))
    clock += [0.0] * 6
    time_arms(arms, 2)
    assert calls == ["a", "b", "c", "b", "c", "a"]  # three arms: each goes first in turn


def test_the_ratio_is_the_median_over_rounds_of_the_original_s_seconds_over_the_student_s() -> None:
    record = EncodeRecord("s", "d", "o", 64, 32, 128, 4096, 512, "float32", "a CPU", 2)
    assert encode_speed(record) is None  # not timed
    record.seconds_student, record.seconds_chunks = [2.0, 3.0, 1.0], [4.0, 3.0, 5.0]
    assert encode_speed(record) == statistics.median([2.0, 1.0, 5.0]) == 2.0
    assert median_ratio([1.0, 3.0], [0.0, 1.0]) == 3.0  # a round of no time is no ratio


# --- the case on tiny models --------------------------------------------------------------------------------------


def test_a_student_is_timed_against_the_original_s_chunks_and_reported(
    folders: dict[str, Path], clock: list[float], tmp_path: Path, sentence_transformers: None
) -> None:
    config = _config(folders)
    clock += [9.0, 9.0, 2.0, 4.0, 6.0, 3.0, 1.0, 5.0]  # warm-up: student, chunks; rounds: s c, c s, s c
    (record,) = measure_encode(config, _models(folders, "teacher")[0], _models(folders, "student"))
    assert record.skipped is None
    assert (record.seconds_student, record.seconds_chunks) == ([2.0, 3.0, 1.0], [4.0, 6.0, 5.0])
    assert encode_speed(record) == 2.0  # the median of 2, 2 and 5
    assert (record.texts, record.batch_size, record.shortest, record.longest) == (5, 32, 48, 48)
    assert record.chunks == 5 * 4  # 46 tokens a text: 4 chunks of 14 beside [CLS] and [SEP]
    assert record.student_max_seq_length == LONGEST
    assert (record.dtype, record.threads) == ("float32", torch.get_num_threads())
    result = StudentResult(config.__dict__, {"cpu": record.cpu, "threads": 2}, encode=[record])
    paths = write_student_report(result, tmp_path)
    saved = json.loads(paths["json"].read_text())["encode"]
    assert saved[0]["speed_over_chunks"] == 2.0
    again = load_student_result(paths["json"])
    assert again.encode == [record]
    assert format_student_report(again) == paths["markdown"].read_text()
    assert f"| student | {LONGEST} | 20 | 2.000 | 5.000 | 2.00x |  |" in paths["markdown"].read_text()


def test_a_warm_up_past_the_time_cap_skips_the_rounds(
    folders: dict[str, Path], clock: list[float], sentence_transformers: None
) -> None:
    clock += [61.0, 1.0]  # the student's warm-up call, the original's
    config = _config(folders, time_cap_s=60.0)
    (record,) = measure_encode(config, _models(folders, "teacher")[0], _models(folders, "student"))
    assert record.skipped == "a warm-up call took 61 s > time cap 60 s"
    assert (record.seconds_student, record.seconds_chunks, encode_speed(record)) == ([], [], None)


@pytest.fixture
def no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    def load(*args, **kwargs):
        raise AssertionError("a model was loaded for a case that is skipped")

    monkeypatch.setattr(student_encode, "_load", load)


def test_a_folder_that_is_no_sentence_transformers_folder_is_skipped_with_the_reason(
    folders: dict[str, Path], no_loading: None, sentence_transformers: None
) -> None:
    original = _models(folders, "teacher")[0]
    (plain,) = measure_encode(_config(folders), original, _models(folders, "plain"))
    assert "student 'plain'" in plain.skipped
    assert f"{str(folders['plain'])!r}) is no sentence-transformers folder (no modules.json)" in plain.skipped
    plain_original = Model("original", str(folders["plain"]), LONGEST, 4)
    (record,) = measure_encode(_config(folders), plain_original, _models(folders, "student"))
    assert record.skipped.startswith(f"the original ({str(folders['plain'])!r}) is no sentence-transformers")
    result = StudentResult(_config(folders).__dict__, {}, encode=[plain])
    assert "no modules.json" in format_student_report(result)  # the reason is in the report's row


def test_without_sentence_transformers_the_case_is_skipped_with_the_reason(
    folders: dict[str, Path], no_loading: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(student_encode, "sentence_transformers_installed", lambda: False)
    records = measure_encode(
        _config(folders), _models(folders, "teacher")[0], _models(folders, "student", "plain")
    )
    assert [r.skipped for r in records] == [
        "sentence-transformers not installed (pip install 'linformer-kit[sentence]')"
    ] * 2


# --- the option ---------------------------------------------------------------------------------------------------


def test_encode_texts_is_on_in_the_student_preset_and_off_by_default() -> None:
    from linformer_kit.bench.config import BenchmarkConfig as Config
    from linformer_kit.cli.benchmark import build_parser
    from linformer_kit.config_parser import parse_config

    assert Config().encode_texts == 0
    assert preset("student").encode_texts == 64
    argv = ["--original", "o", "--student", "s", "--encode-texts", "0", "--output-dir", "out"]
    assert parse_config(build_parser("student"), argv).encode_texts == 0


@pytest.mark.parametrize("value", [-1, 2.5, True, "8"])
def test_encode_texts_must_be_an_int_of_at_least_0(value: object) -> None:
    check_raises(
        lambda: preset("student").replace(encode_texts=value),
        ValueError,
        rf"encode_texts must be an int >= 0.*got {value!r}",
    )


def test_encode_texts_outside_scope_student_is_refused() -> None:
    check_raises(
        lambda: BenchmarkConfig(encode_texts=8),
        ValueError,
        r"encode_texts are options of scopes \('student',\)",
    )
