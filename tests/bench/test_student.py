"""Scope "student" (`linformer benchmark --preset student`): saved students against their original, on tiny
models. The inputs and chunks, records complete, ratios from the records, the report files, bad input named
before any work. No timing asserts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import linformer_kit.bench.student as student
import linformer_kit.bench.student_runtimes as student_runtimes
from linformer_kit.bench import BenchmarkConfig, preset
from linformer_kit.bench.flops import least_encoder_flops
from linformer_kit.bench.student import StudentRecord, StudentResult, run_student_benchmark
from linformer_kit.bench.student_inputs import (
    BUILT_IN_TEXT,
    Ends,
    chunked,
    pieces,
    text_ids,
    token_rows,
    whole,
)
from linformer_kit.bench.student_options import named_students
from linformer_kit.bench.student_report import (
    RESULT_FILES,
    format_student_report,
    load_student_result,
    student_ratios,
    write_student_report,
)
from linformer_kit.bench.timing import predicted_seconds
from linformer_kit.cli.main import main
from tests.bad_input_checks import WorkStarted, check_cli, check_raises
from tests.fixtures.models import with_core

LONGEST = 64  # the tiny original's longest input
ENDS = Ends(first=2, last=3, pad=0)


def word_tokenizer():
    """BERT-style ([CLS] ... [SEP], lower case, punctuation split) over the words of the built-in text."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    words = pre_tokenizers.BertPreTokenizer().pre_tokenize_str(BUILT_IN_TEXT.lower())
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted({word for word, _ in words})]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")  # fmt: skip


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A tiny BertModel reading 64 tokens (the original) and two Linformers converted from it (students)."""
    from transformers import BertConfig, BertModel

    from linformer_kit.models import from_bert

    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=37, max_position_embeddings=LONGEST)  # fmt: skip
    root = tmp_path_factory.mktemp("student-bench")
    folders = {name: root / name for name in ("teacher", "w4", "k8", "pooled")}
    folders["original"] = folders.pop("teacher")  # its folder's name is not the reserved name "original"
    bert = BertModel(config).eval()  # with its pooler, as all-MiniLM-L6-v2 is saved
    bert.save_pretrained(folders["original"])
    options = {
        "w4": {"projected_length": 8, "local_window": 4, "global_tokens": 1},
        "k8": {"projected_length": 8},
        "pooled": {"projected_length": 64, "projection": "mean"},
    }  # fmt: skip  (64 divides 64, not 96)
    for name, chosen in options.items():
        from_bert(bert, **chosen).save_pretrained(folders[name])
    for folder in folders.values():
        tokenizer.save_pretrained(folder)
    return folders


def tiny(models: dict[str, Path], out: Path, **changes) -> BenchmarkConfig:
    return preset("student").replace(**{
        "original": str(models["original"]), "students": (f"w4={models['w4']}", str(models["k8"])),
        "seq_lens": (16, 48, 96), "chunk_length": 32, "tokens_per_batch": 64, "rounds": 2, "min_time_s": 0.0,
        "runtimes": ("torch",), "measure_memory": False, "output_dir": str(out), **changes,
    })  # fmt: skip


# --- inputs -------------------------------------------------------------------------------------------------


def test_token_rows_are_exactly_n_tokens_each_the_next_stretch_of_the_text() -> None:
    ids = list(range(10, 40))  # 30 ids: the third row wraps around
    rows = token_rows(ids, n=14, batch=3, ends=ENDS)
    assert rows.shape == (3, 14)
    assert rows.dtype == torch.long
    assert (rows[:, 0] == 2).all()
    assert (rows[:, -1] == 3).all()
    assert rows[0, 1:-1].tolist() == ids[:12]
    assert rows[1, 1:-1].tolist() == ids[12:24]
    assert rows[2, 1:-1].tolist() == ids[24:] + ids[:6]
    assert whole(rows)["attention_mask"].sum() == 3 * 14


@pytest.mark.parametrize(
    ("n", "chunk", "count", "last"), [(4096, 512, 8, 512), (100, 32, 4, 4), (65, 32, 3, 1)]
)
def test_chunking_splits_n_into_ceil_n_over_chunk_pieces(n: int, chunk: int, count: int, last: int) -> None:
    rows = token_rows(list(range(10, 5000)), n=n, batch=2, ends=ENDS)
    batch = chunked(rows, chunk, ENDS)
    assert pieces(n, chunk) == count
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2 * count, chunk)
    real = batch["attention_mask"].sum(-1).view(2, count)
    assert real[:, :-1].eq(chunk).all()
    assert real[:, -1].eq(last).all()
    assert real.sum(-1).tolist() == [n, n]  # a text's chunks hold as many tokens as the text
    ids = batch["input_ids"].view(2, count, chunk)
    assert ids[:, :, 0].eq(2).all()  # every chunk starts with [CLS] ...
    full = ids[:, :-1]
    assert full[..., -1].eq(3).all()  # ... and a full one ends with [SEP]
    assert (batch["input_ids"][batch["attention_mask"] == 0] == 0).all()  # padding is [PAD]
    body = rows[0, 1:-1].tolist()
    assert ids[0, 0, 1:-1].tolist() == body[: chunk - 2]  # the text's own ids, in order
    assert ids[0, 1, 1:6].tolist() == body[chunk - 2 : chunk + 3]


def test_text_ids_read_a_file_until_enough_and_refuse_an_empty_text(tmp_path: Path) -> None:
    tokenizer = word_tokenizer()
    assert len(text_ids(tokenizer, None, 10)) > 100  # the built-in text, whole
    file = tmp_path / "texts.jsonl"
    file.write_text("\n".join(json.dumps({"text": "the river rose " * 20}) for _ in range(50)) + "\n")
    assert len(text_ids(tokenizer, str(file), 100)) == 120  # two records: enough
    (tmp_path / "blank.txt").write_text("   \n")
    with pytest.raises(ValueError, match=r"blank\.txt.*no token"):
        text_ids(tokenizer, str(tmp_path / "blank.txt"), 10)


# --- ratios from records ---------------------------------------------------------------------------------------


def record(
    model: str,
    method: str,
    n: int,
    tps: float | None,
    peak: float | None,
    runtime: str = "torch",
    batch: int = 1,
):
    return StudentRecord(model=model, path=model, runtime=runtime, method=method, n=n, batch=batch, rows=batch,
                         length=n, longest_input=512, threads=2, texts_per_second=tps, peak_mib=peak)  # fmt: skip


def test_ratios_are_computed_from_the_records() -> None:
    records = [
        record("s", "whole", 512, 8.0, 30.0, batch=8), record("original", "whole", 512, 10.0, 20.0, batch=8),
        record("s", "whole", 4096, 1.5, 100.0), record("original", "whole", 4096, 0.5, 200.0),
        record("original", "chunks", 4096, 1.0, 50.0), record("t", "whole", 4096, None, None),
        record("s", "whole", 4096, 1.0, None, runtime="onnxruntime"),
        record("original", "chunks", 4096, 2.0, None, runtime="onnxruntime"),
    ]  # fmt: skip
    got = {(r.student, r.runtime, r.n, r.baseline): (r.speed, r.memory) for r in student_ratios(records)}
    assert got == {
        ("s", "torch", 512, "original"): (0.8, 1.5),
        ("s", "torch", 4096, "full"): (3.0, 0.5),  # above the original's longest input: full attention
        ("s", "torch", 4096, "chunks"): (1.5, 2.0),
        ("t", "torch", 4096, "full"): (None, None),  # not timed: no ratio to invent
        ("t", "torch", 4096, "chunks"): (None, None),
        ("s", "onnxruntime", 4096, "chunks"): (0.5, None),
    }


def test_flop_limits_are_the_baseline_s_least_gflop_over_the_student_s() -> None:
    s, full, chunks = record("s", "whole", 4096, 1.5, None), record("original", "whole", 4096, 0.5, None), \
        record("original", "chunks", 4096, 1.0, None)  # fmt: skip
    s.gflop, full.gflop, chunks.gflop = 10.0, 30.0, 12.0
    got = {r.baseline: r.flop_limit for r in student_ratios([s, full, chunks])}
    assert got == {"full": 3.0, "chunks": pytest.approx(1.2)}
    old = record("t", "whole", 4096, 1.5, None)  # a result saved before records counted FLOPs
    assert {r.flop_limit for r in student_ratios([old, full])} == {None}


BERT_FIELDS = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 37}
# a Linformer's fields build a LinformerConfig, whose heads must divide hidden_size (12 by default)
LINFORMER_FIELDS = {**BERT_FIELDS, "model_type": "linformer", "num_attention_heads": 4}


def test_least_flops_of_bert_are_torch_s_count_of_its_matmuls() -> None:
    """The counter sees every product of a BERT encoder (eager attention; the pooler left out)."""
    from torch.utils.flop_counter import FlopCounterMode
    from transformers import BertConfig, BertModel

    config = BertConfig(**BERT_FIELDS, num_attention_heads=4, vocab_size=50, attn_implementation="eager")
    model = BertModel(config, add_pooling_layer=False).eval()
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=torch.randint(5, 50, (3, 24)))
    assert least_encoder_flops(BERT_FIELDS, 3, 24) == counter.get_total_flops()


def test_least_flops_of_a_windowed_linformer_by_hand() -> None:
    # b 1, n 64, D 32, I 37, 2 layers; k 8, w 4, g 1: per layer linears 8·64·32² = 524 288, FFN 4·64·32·37
    # = 303 104, E K and F V 4·8·64·32 = 65 536, slots and window 4·64·(8 + 9)·32 = 139 264, global 8·64·32
    # = 16 384
    linformer = {**LINFORMER_FIELDS, "projected_length": 8, "local_window": 4, "global_tokens": 1,
                 "exact_length": 16}  # fmt: skip
    assert least_encoder_flops(linformer, 1, 64) == 2 * (524288 + 303104 + 65536 + 139264 + 16384)
    # at n <= exact_length the student reads with full attention: BERT's count
    assert least_encoder_flops(linformer, 5, 16) == least_encoder_flops(BERT_FIELDS, 5, 16)
    per_layer = {**linformer, "projected_length": [8, None], "exact_length": None}  # a k per layer
    bert_layer = least_encoder_flops({**BERT_FIELDS, "num_hidden_layers": 1}, 1, 64)
    assert least_encoder_flops(per_layer, 1, 64) == 524288 + 303104 + 65536 + 139264 + 16384 + bert_layer


def test_least_flops_of_a_linformer_with_a_window_per_layer() -> None:
    # b 1, n 64, D 32, I 37, 2 layers, k 8, local_window [16, None] (the CLI's '16,none'), g 0: per layer
    # linears 8·64·32² = 524 288, FFN 4·64·32·37 = 303 104, E K and F V 4·8·64·32 = 65 536; slots and window
    # 4·64·(8 + 2·16 + 1)·32 = 335 872 in the first layer, slots alone 4·64·8·32 = 65 536 in the second
    per_layer = {**LINFORMER_FIELDS, "projected_length": 8, "local_window": [16, None]}
    first, second = 524288 + 303104 + 65536 + 335872, 524288 + 303104 + 65536 + 65536
    assert least_encoder_flops(per_layer, 1, 64) == first + second == 2187264
    # n 12 caps the window at n (2·12 + 1 keys) in the first layer: 4·12·(8 + 25)·32 of slots and window
    short = 8 * 12 * 32**2 + 4 * 12 * 32 * 37 + 4 * 8 * 12 * 32
    assert least_encoder_flops(per_layer, 1, 12) == 2 * short + 4 * 12 * (8 + 25) * 32 + 4 * 12 * 8 * 32


def test_least_flops_of_one_window_for_every_layer_are_unchanged() -> None:
    # the per-layer test's first layer, twice: one int w is every layer's w
    one = {**LINFORMER_FIELDS, "projected_length": 8, "local_window": 16}
    assert least_encoder_flops(one, 1, 64) == 2 * (524288 + 303104 + 65536 + 335872) == 2457600
    assert least_encoder_flops({**one, "local_window": [16, 16]}, 1, 64) == 2457600


def test_least_flops_are_below_what_the_banded_core_does() -> None:
    """The least count is a bound: the kit's banded core (query blocks, a block's whole band) does more."""
    from torch.utils.flop_counter import FlopCounterMode

    from linformer_kit.models import LinformerConfig, LinformerModel

    fields = {
        **LINFORMER_FIELDS,
        "projected_length": 8,
        "local_window": 4,
        "global_tokens": 1,
        "vocab_size": 50,
        "max_position_embeddings": 66,
    }
    config = LinformerConfig(**{k: v for k, v in fields.items() if k != "model_type"})
    model = with_core(
        LinformerModel(config, add_pooling_layer=False).eval(), "blocked"
    )  # matmuls the counter sees
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        model(input_ids=torch.randint(5, 50, (2, 64)))
    # per layer, in units of 4 b n D: 8 of E K and F V, then the least 8 slots + 9 window + 2 global keys
    # against the core's 8 + 40 (a block of 32 queries reads its 32 + 2w band keys) + 2
    least, done = least_encoder_flops(fields, 2, 64), counter.get_total_flops()
    assert done - least == 2 * (40 - 9) * 4 * 2 * 64 * 32


# --- a run on tiny models -------------------------------------------------------------------------------------


def test_a_run_records_every_model_length_batch_and_writes_the_ratios(models, tmp_path: Path, capsys) -> None:
    config = tiny(models, tmp_path / "out")
    assert main(["benchmark", "--preset", "student", "--original", config.original, "--student", config.students[0],
                 "--student", config.students[1], "--seq-lens", "16", "48", "96", "--chunk-length", "32",
                 "--tokens-per-batch", "64", "--rounds", "2", "--min-time-s", "0", "--runtimes", "torch",
                 "--no-memory", "--output-dir", config.output_dir]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    result = load_student_result(tmp_path / "out" / "student.json")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(RESULT_FILES)
    found = {(r.model, r.method, r.n, r.batch): r for r in result.records}
    expected = {(m, "whole", 16, b) for m in ("w4", "k8", "original") for b in (4, 1)}
    expected |= {(m, "whole", n, 1) for m in ("w4", "k8", "original") for n in (48, 96)}
    expected |= {("original", "chunks", n, 1) for n in (48, 96)}  # above chunk_length only
    assert set(found) == expected
    for r in result.records:
        assert r.skipped is None
        assert r.runtime == "torch"
        assert r.samples == 2
        assert r.texts_per_second == pytest.approx(r.batch / r.seconds_median)
        assert r.seconds_q1 <= r.seconds_median <= r.seconds_q3
    assert (found["original", "chunks", 96, 1].rows, found["original", "chunks", 96, 1].length) == (3, 32)
    assert (found["w4", "whole", 96, 1].rows, found["w4", "whole", 96, 1].length) == (1, 96)
    assert found["original", "whole", 96, 1].longest_input == LONGEST  # read at 96: positions copied
    ratios = json.loads((tmp_path / "out" / "student.json").read_text())["ratios"]
    assert len(ratios) == 2 * (2 + 2 + 2)  # per student: 16 at 2 batches, 48 and 96 against whole and chunks
    assert {r["baseline"] for r in ratios if r["n"] == 96} == {"full", "chunks"}
    assert {r["baseline"] for r in ratios if r["n"] == 48} == {"original", "chunks"}
    assert all(r["speed"] > 0 and r["memory"] is None for r in ratios)
    assert all(r["flop_limit"] > 0 for r in ratios)  # every record counted its least FLOPs
    limits = {(r["student"], r["n"], r["baseline"]): r["flop_limit"] for r in ratios}
    assert limits["w4", 96, "full"] > limits["w4", 48, "original"]  # full attention's n² grows away
    assert "w4 FLOP limit" in printed
    assert "| 96 | 1 | original on 3 chunks of 32 |" in printed
    assert "| 96 | 1 | original, full attention (positions copied) |" in printed
    assert "w4 texts/s" in printed
    assert "k8 texts/s" in printed
    assert (tmp_path / "out" / "student.md").read_text() in printed


def test_a_slow_call_is_skipped_with_its_reason_and_so_are_its_larger_lengths(models, tmp_path: Path) -> None:
    config = tiny(models, tmp_path / "out", seq_lens=(16, 96), tokens_per_batch=None)
    history = {("torch", "original", "whole"): (16, 10.0)}  # 10 s a text at 16: 360 s predicted at 96
    runner = student.TorchRunner(config)
    original, students = student.check_student_files(config)
    runner.prepare(original, students, 96, config.chunk_length)
    group = student.Group(config, runner, list(range(5, 60)), ENDS, 96, 1)
    records = {(r.model, r.method): r for r in group.measure(original, students, history, with_memory=False)}
    assert records["original", "whole"].skipped == "predicted 360 s a call > time cap 60 s"
    assert records["w4", "whole"].skipped is None
    assert records["original", "chunks"].skipped is None
    assert history["torch", "original", "whole"] == (96, None)
    assert group.skip_reason(
        original, records["original", "whole"], history[("torch", "original", "whole")]
    ) == ("skipped at n=96")


def test_the_time_cap_grows_a_linear_student_as_n_and_full_attention_as_n_squared() -> None:
    """bench/timing.py's `predicted_seconds`, as a group of scope student calls it: from 2 s a text at n = 16, a call
    at n = 96 (6x longer) is predicted 12 s for a student that projects there and for the original on chunks,
    72 s for the original's full attention. Virtual seconds (the history): no model loaded, nothing timed."""
    config = preset("student").replace(original="o", students=("s=d",), chunk_length=32, time_cap_s=10.0)
    linformer = {**LINFORMER_FIELDS, "projected_length": 8, "local_window": 4, "global_tokens": 1,
                 "exact_length": 16}  # fmt: skip
    original = student.Model("original", "o", LONGEST, 4, {**BERT_FIELDS, "num_attention_heads": 4})
    linear = student.Model("s", "d", LONGEST, 4, linformer)
    group = student.Group(config, student.TorchRunner(config), list(range(5, 60)), ENDS, 96, 1)
    reasons = {
        (model.name, method): group.skip_reason(model, group.record(model, method), (16, 2.0))
        for model, method in student.entries(original, [linear], 96, config.chunk_length)
    }
    assert reasons == {
        ("s", "whole"): "predicted 12 s a call > time cap 10 s",  # linear: not 72 s
        ("original", "whole"): "predicted 72 s a call > time cap 10 s",
        ("original", "chunks"): "predicted 12 s a call > time cap 10 s",
    }
    # up to its exact_length (16) the student attends fully: n^2 there, n above it
    assert [student.growth_exponent(linear, "whole", n) for n in (16, 96)] == [2, 1]
    assert predicted_seconds(2.0, 16, 96, exponent=1) == pytest.approx(12.0)
    assert predicted_seconds(2.0, 16, 96, exponent=2) == pytest.approx(72.0)


@pytest.mark.slow
def test_memory_and_onnx_runtime_are_measured_beside_torch(models, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    config = tiny(models, tmp_path / "out", students=(f"w4={models['w4']}",), seq_lens=(16, 96),
                  tokens_per_batch=None, runtimes=("torch", "onnxruntime"), measure_memory=True)  # fmt: skip
    result = run_student_benchmark(config)
    assert result.notes == []
    found = {(r.runtime, r.model, r.method, r.n): r for r in result.records}
    assert len(found) == 2 * (2 + 3)  # per runtime: w4 and the original at 16; and on chunks at 96
    for r in result.records:
        assert (r.skipped, r.note) == (None, None), r
        assert r.texts_per_second > 0
        assert r.peak_mib is not None
        assert r.peak_rss_mib > r.peak_mib
    text = format_student_report(result)
    assert "**torch: student / baseline**" in text
    assert "**onnxruntime: student / baseline**" in text
    ratios = [r for r in student_ratios(result.records) if r.runtime == "onnxruntime"]
    assert len(ratios) == 3
    assert all(r.speed for r in ratios)


def test_without_onnxruntime_the_runtime_is_left_out_with_a_note(models, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(student_runtimes, "_importable", lambda name: name != "onnxscript")
    config = tiny(
        models, tmp_path / "out", seq_lens=(16,), tokens_per_batch=None, runtimes=("torch", "onnxruntime")
    )
    result = run_student_benchmark(config)
    assert {r.runtime for r in result.records} == {"torch"}
    assert result.notes == [
        "onnxruntime: not measured, onnxscript not installed (pip install onnx onnxscript onnxruntime)"
    ]
    write_student_report(result, config.output_dir)
    assert (
        "Note: onnxruntime: not measured, onnxscript not installed"
        in (tmp_path / "out" / "student.md").read_text()
    )


# --- the command line and bad input -----------------------------------------------------------------------------


def test_the_student_preset_and_repeated_student_flags(tmp_path: Path) -> None:
    from linformer_kit.cli.benchmark import build_parser
    from linformer_kit.config_parser import parse_config

    argv = [
        "--original",
        "o",
        "--students",
        "a",
        "--student",
        "k64=b",
        "--student",
        "c/d/",
        "--output-dir",
        str(tmp_path),
    ]
    config = parse_config(build_parser("student"), argv)
    assert config == preset("student").replace(
        original="o", students=("a", "k64=b", "c/d/"), output_dir=str(tmp_path)
    )
    assert named_students(config.students) == {"a": "a", "k64": "b", "d": "c/d/"}
    assert (config.scopes, config.runtimes, config.seq_lens) == (
        ("student",),
        ("torch", "onnxruntime"),
        (128, 256, 512, 4096),
    )
    assert [student.batches(config, n) for n in (128, 256, 512, 4096)] == [[32, 1], [16, 1], [8, 1], [1]]


@pytest.fixture
def before_work(monkeypatch: pytest.MonkeyPatch) -> None:
    def work(*args, **kwargs):
        raise WorkStarted("a model or tokenizer loaded before the bad input was reported")

    monkeypatch.setattr(student, "load_tokenizer", work)  # where the run loads it
    monkeypatch.setattr(student_runtimes, "load_encoder", work)  # where the runners load them


def _argv(models: dict[str, Path], out: Path, *extra: object, students: tuple = ("w4",)) -> list:
    given = [x for name in students for x in ("--student", models.get(name, name))]
    return ["benchmark", "--preset", "student", "--original", models["original"], *given, "--seq-lens", "16",
            "96", "--chunk-length", "32", "--rounds", "1", "--no-memory", "--output-dir", out, *extra]  # fmt: skip


BAD = {
    "student not a Linformer": ({"students": ("original",)}, [], r"student 'teacher'.*'bert' model, not a Linformer"),
    "a length the student cannot read": ({"students": ("pooled",)}, [], r"student 'pooled' cannot read n=96.*k=64 must divide"),
    "chunk above what the original reads": ({}, ["--chunk-length", "128"], r"chunk_length=128 is above what the original reads \(64"),
    "batch 0": ({}, ["--batch-size", "0"], r"batch_size.*\b0\b"),
    "tokens per batch 0": ({}, ["--tokens-per-batch", "0"], r"tokens_per_batch.*\b0\b"),
    "length 1": ({}, ["--seq-lens", "1", "16"], r"seq_lens of scope 'student' must be >= 2.*\[1\]"),
    "no student": ({"students": ()}, [], r"students: none given"),
    "a student folder missing": ({"students": ("nowhere",)}, [], r"student 'nowhere'.*no such directory: 'nowhere'"),
    "two students of one name": ({"students": ("w4", "w4")}, [], r"two are named 'w4'"),
    "a student named original": ({"students": ("original=x",)}, [], r"'original=x'.*the name 'original'"),
    "onnx in bfloat16": ({}, ["--dtype", "bfloat16"], r"onnxruntime.*float32.*'bfloat16'"),
    "another scope beside it": ({}, ["--scopes", "student", "layer"], r"give it alone.*'layer'"),
    "a backward": ({}, ["--passes", "forward+backward"], r"passes \('forward',\).*forward\+backward"),
    "an unknown runtime": ({}, ["--runtimes", "tensorrt"], r"'tensorrt'"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD)
def test_bad_input_is_named_before_any_work(
    case: str, models, before_work: None, tmp_path: Path, capsys
) -> None:
    changes, extra, match = BAD[case]
    argv = _argv(models, tmp_path / "out", *extra, **changes)
    check_cli(argv, match, capsys, watch=[tmp_path, *models.values()])


def test_student_options_outside_scope_student_are_refused() -> None:
    check_raises(
        lambda: BenchmarkConfig(students=("a",)), ValueError, r"students are options of scopes \('student',\)"
    )
    check_raises(
        lambda: BenchmarkConfig(runtimes=("onnxruntime",)), ValueError, r"runtimes are options of scopes"
    )
    check_raises(
        lambda: BenchmarkConfig(scopes=("student",), device="cuda"), ValueError, r"device 'cpu'.*'cuda'"
    )


def test_run_benchmark_refuses_scope_student() -> None:
    from linformer_kit.bench import run_benchmark

    with pytest.raises(ValueError, match="run_student_benchmark"):
        run_benchmark(preset("student"))


def test_a_report_from_a_saved_result_is_the_same(tmp_path: Path) -> None:
    result = StudentResult(
        config={**preset("student").replace(original="o", students=("s=d",)).__dict__},
        environment={"cpu": "a CPU", "threads": 2, "torch_version": "2", "date_utc": "today"},
        records=[record("s", "whole", 512, 8.0, 30.0, batch=8), record("original", "whole", 512, 10.0, 20.0, batch=8)],
        notes=["a note"],
    )  # fmt: skip
    paths = write_student_report(result, tmp_path)
    again = load_student_result(paths["json"])
    assert format_student_report(again) == paths["markdown"].read_text() == format_student_report(result)
    assert "| 512 | 8 | original | 0.80x | – | 1.50x |" in paths["markdown"].read_text()  # no FLOPs counted
    assert "a CPU, 2 threads" in paths["markdown"].read_text()  # a record from before the capability was kept


def test_the_report_names_the_instruction_set_that_picks_the_window_core(tmp_path: Path) -> None:
    result = StudentResult(
        config={**preset("student").replace(original="o", students=("s=d",)).__dict__},
        environment={"cpu": "a CPU", "cpu_capability": "AVX2", "threads": 2, "torch_version": "2", "date_utc": "x"},
        records=[record("s", "whole", 512, 8.0, 30.0, batch=8), record("original", "whole", 512, 10.0, 20.0, batch=8)],
        notes=[],
    )  # fmt: skip
    text = write_student_report(result, tmp_path)["markdown"].read_text()
    assert "a CPU (PyTorch's CPU kernels: AVX2), 2 threads" in text


def test_onnx_exports_a_student_without_exact_length_which_has_no_exported_form() -> None:
    from linformer_kit.bench.student import without_exact_length
    from linformer_kit.nn import LinformerSelfAttention
    from tests.exported import exported

    layer = LinformerSelfAttention(16, 2, 32, 4, exact_length=8).eval()
    inputs = {"x": torch.randn(2, 20, 16)}
    with pytest.raises(ValueError, match="has no exported form"):
        exported(layer, inputs, 32)
    assert without_exact_length(layer)
    assert layer.exact_length is None
    assert not without_exact_length(layer)  # nothing left to drop
    torch.testing.assert_close(exported(layer, inputs, 32)(**inputs), layer(**inputs))


@pytest.mark.slow  # compiles three encoders (~1 minute on 2 cores)
def test_the_compiled_runtime_times_every_model_compiled(models, tmp_path: Path) -> None:
    config = tiny(
        models, tmp_path / "out", seq_lens=(48,), tokens_per_batch=None, runtimes=("torch", "torch-compile")
    )
    result = run_student_benchmark(config)
    compiled = [r for r in result.records if r.runtime == "torch-compile"]
    assert {r.model for r in compiled} == {r.model for r in result.records if r.runtime == "torch"}
    assert all(r.seconds_median and r.seconds_median > 0 for r in compiled)
    assert "**torch-compile: student / baseline**" in format_student_report(result)
