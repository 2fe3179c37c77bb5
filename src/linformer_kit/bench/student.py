"""Scope "student": saved students against the original they replace, in texts per second and peak memory.

    config = preset("student").replace(original="runs/models/all-MiniLM-L6-v2",
                                       students=("runs/distill/minilm-k128-w64-g1",), output_dir="runs/student")
    result = run_student_benchmark(config)             # a record per model, method, n, batch and runtime
    write_student_report(result, config.output_dir)    # student.json (records, ratios), student.md

At every n of `seq_lens`, under every runtime of `runtimes` (torch, torch-compile, onnxruntime), it measures:
    whole    every student reading texts of n tokens, and the original reading them: up to its longest
             input as it is; above it with full attention over a position table wrapped as `convert
             --max-length` wraps it (position p takes the trained row of p mod 512: `encoder_at`), the
             student read there as `linformer extend` reads it
    chunks   at n above `chunk_length`: the original reading each text as ceil(n / chunk_length)
             chunks of chunk_length tokens in one batch (bench/student_inputs.py), what a user of a
             512-token encoder does with a long text
at `batch_size` texts a call and at `tokens_per_batch // n` (the batch a user encodes with); the
inputs are real text cut to exactly n tokens (bench/student_inputs.py), the same for every model.

Timing (A/B in one process): the models of one (runtime, n, batch) are built and warmed up, then timed
in rounds that visit each in turn, the order rotating each round, so a slow moment of a shared machine
hits them all; a sample repeats a fast call until it lasts `min_time_s`. texts/s = batch / the median
seconds of a call. A call predicted above `time_cap_s` (from the same model at the previous n, as n^2)
is skipped, with the reason in its record, and so are its larger n.
Peak memory, at each n's largest batch: a fresh process builds the model (or ONNX Runtime session) and
the batch, reads its RSS, runs one call and reports the rise to its peak RSS (bench/memory.py's measure):
what the call needs above the weights.
ONNX: each model is exported at each length it reads (a student `shortened` to n, the original at its
longest input or extended to n: `OnnxRunner`) by `torch.onnx.export(..., dynamo=True)` with a dynamic
batch and length (into a temporary folder, removed at the end) and run by ONNX Runtime's CPU provider
with as many intra-op threads as torch uses. Without onnx, onnxscript and onnxruntime installed
the runtime is left out, with a note in the result.

Run as `python -m linformer_kit.bench.student '<memory spec json>'`: one memory measurement.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import torch

from linformer_kit.bench.config import BenchmarkConfig, named_students
from linformer_kit.bench.flops import least_encoder_flops
from linformer_kit.bench.measure import _environment, _sample
from linformer_kit.bench.memory import current_rss, peak_rss, run_memory_subprocess
from linformer_kit.bench.student_inputs import Ends, chunked, ends_of, pieces, text_ids, token_rows, whole

logger = logging.getLogger(__name__)
MiB = 2**20
Inputs = dict[str, torch.Tensor]


@dataclass
class StudentRecord:
    """One model reading one (n, batch) under one runtime: seconds a call, texts/s, peak memory."""

    model: str  # "original" or the student's name
    path: str
    runtime: str  # torch | onnxruntime
    method: str  # whole: each text as one sequence; chunks: each text as ceil(n / chunk_length) chunks
    n: int  # tokens a text
    batch: int  # texts a call
    rows: int  # sequences a call: batch (whole), batch * ceil(n / chunk_length) (chunks)
    length: int  # tokens a sequence: n (whole), chunk_length (chunks)
    longest_input: int  # the model's longest input as saved: above it the model is read extended
    threads: int
    gflop: float | None = None  # the least forward GFLOP of a call (bench/flops.py `least_encoder_flops`)
    seconds_median: float | None = None
    seconds_q1: float | None = None  # interquartile range of the samples
    seconds_q3: float | None = None
    seconds_min: float | None = None
    seconds_max: float | None = None
    samples: int = 0
    texts_per_second: float | None = None  # batch / seconds_median
    peak_mib: float | None = None  # peak RSS of one call in a fresh process minus its RSS after building
    peak_rss_mib: float | None = None  # that process's whole peak RSS (interpreter, libraries, weights)
    skipped: str | None = None  # why it was not timed (None: timed)
    note: str | None = None  # e.g. why its memory was not measured


@dataclass
class StudentResult:
    config: dict[str, Any]
    environment: dict[str, Any]
    records: list[StudentRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a runtime left out, and why
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Model:
    """A saved model as the benchmark reads it."""

    name: str
    path: str
    longest: int  # its longest input as saved
    heads: int
    config: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # its config.json


def run_student_benchmark(config: BenchmarkConfig) -> StudentResult:
    """Measure every student of `config` against its original (module docstring); ValueError before any
    work for a missing or unreadable folder, a student that is no Linformer or cannot read an n."""
    start = time.perf_counter()
    original, students = check_student_files(config)
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    tokenizer = load_tokenizer(original.path)
    ids, ends = text_ids(tokenizer, config.text_file, _tokens_needed(config)), ends_of(tokenizer)
    result = StudentResult(dataclasses.asdict(config), environment(config))
    # (runtime, model, method) -> (its last n, seconds a text there; None: skipped)
    history: dict[tuple[str, str, str], tuple[int, float | None]] = {}
    for runtime in config.runtimes:
        with _runner(runtime, config, original, students, ids, ends, result.notes) as runner:
            if runner is None:
                continue
            for n in sorted(set(config.seq_lens)):
                runner.prepare(original, students, n, config.chunk_length)
                for batch in batches(config, n):
                    group = Group(config, runner, ids, ends, n, batch)
                    memory = config.measure_memory and batch == batches(config, n)[0]
                    records = group.measure(original, students, history, memory)
                    result.records += records
                    logger.info(_progress_line(records))
    result.elapsed_s = time.perf_counter() - start
    return result


# --- what is measured -----------------------------------------------------------------------------------


def check_student_files(config: BenchmarkConfig) -> tuple[Model, list[Model]]:
    """The original and the students as `Model`s; ValueError naming the first folder or length that cannot be
    read: a missing folder or tokenizer, a student that is no Linformer or has another vocabulary, a
    chunk_length above the original's longest input, an n a student cannot be extended to."""
    from linformer_kit.models.loading import check_model_dir, longest_input, read_config_json

    if config.scopes != ("student",):
        raise ValueError(f"run_student_benchmark measures scopes ('student',), got scopes {config.scopes}")
    if not config.original:
        raise ValueError("original: missing; give the encoder the students replace (--original DIR)")
    if not config.students:
        raise ValueError("students: none given; give a saved student (--student DIR or --student NAME=DIR)")
    check_model_dir(config.original, "original", tokenizer=True)
    original_config = read_config_json(config.original, "original")
    original = _model("original", config.original, original_config)
    if config.chunk_length > original.longest:
        raise ValueError(
            f"chunk_length={config.chunk_length} is above what the original reads ({original.longest} tokens, "
            f"{config.original!r}): a chunk must fit its longest input"
        )
    students = []
    for name, path in named_students(config.students).items():
        what = f"student {name!r}"
        check_model_dir(path, what)
        student_config = read_config_json(path, what)
        if student_config["model_type"] != "linformer":
            raise ValueError(
                f"{what}: {path!r} is a {student_config['model_type']!r} model, not a Linformer (a student is "
                "what `linformer distill` or `linformer convert` writes)"
            )
        if student_config.get("vocab_size") != original_config.get("vocab_size"):
            raise ValueError(
                f"{what}: vocab_size {student_config.get('vocab_size')} in {path!r}, the original's is "
                f"{original_config.get('vocab_size')}: the inputs are the original's token ids (a student of "
                "another encoder?)"
            )
        student = _model(name, path, student_config)
        for n in sorted(set(config.seq_lens)):
            if n > longest_input(student_config):
                _check_readable(student, n)
        students.append(student)
    if config.text_file is not None:
        from linformer_kit.data_files import check_data_file, file_format

        if not Path(config.text_file).is_file():
            raise ValueError(f"text_file: no such file: {config.text_file!r}")
        json_records = file_format(config.text_file) in ("json", "jsonl")
        check_data_file(config.text_file, "text_file", columns=("text",) if json_records else ())
    return original, students


def _model(name: str, path: str, config: dict[str, Any]) -> Model:
    from linformer_kit.models.loading import longest_input

    return Model(name, path, longest_input(config), int(config.get("num_attention_heads", 1)), config)


def _check_readable(student: Model, n: int) -> None:
    """ValueError unless the student's options hold at n (e.g. a pooling k must divide n): what `linformer
    extend` would refuse, found from config.json, before any weight is read."""
    from transformers import AutoConfig

    import linformer_kit.models  # noqa: F401  (registers model_type "linformer")
    from linformer_kit.models.convert import CONVERSION_OPTIONS, converted_config

    saved = AutoConfig.from_pretrained(student.path)
    try:
        converted_config(saved, **{name: getattr(saved, name) for name in CONVERSION_OPTIONS}, max_length=n)
    except ValueError as err:
        raise ValueError(
            f"student {student.name!r} cannot read n={n} (its longest input is {student.longest}; read "
            f"longer, as `linformer extend` would): {err}"
        ) from None


def batches(config: BenchmarkConfig, n: int) -> list[int]:
    """Texts a call at n, largest first: batch_size, and tokens_per_batch // n (at least 1) if set."""
    sizes = {config.batch_size}
    if config.tokens_per_batch is not None:
        sizes.add(max(1, config.tokens_per_batch // n))
    return sorted(sizes, reverse=True)


def entries(original: Model, students: list[Model], n: int, chunk_length: int) -> list[tuple[Model, str]]:
    """(model, method) at n: every student and the original whole, and the original on chunks above chunk_length."""
    found = [(student, "whole") for student in students] + [(original, "whole")]
    return found + ([(original, "chunks")] if n > chunk_length else [])


def _tokens_needed(config: BenchmarkConfig) -> int:
    return max(n * batches(config, n)[0] for n in config.seq_lens)


def _max_rows(config: BenchmarkConfig) -> int:
    """The most sequences one call holds (the batch dimension an export must allow)."""
    return max(
        b * (pieces(n, config.chunk_length) if n > config.chunk_length else 1)
        for n in config.seq_lens
        for b in batches(config, n)
    )


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    # the inputs are cut to n by us: no length limit (and no warning) when tokenizing a long text
    return AutoTokenizer.from_pretrained(path, model_max_length=10**9)


def load_encoder(path: str, length: int, dtype: str = "float32") -> torch.nn.Module:
    """The encoder at `path` reading `length` tokens (`encoder_at`: extended above its longest input), eval mode."""
    import linformer_kit.models  # noqa: F401  (registers model_type "linformer")

    # the study's helper, which imports models/ only; read here as `linformer longdocs` reads it
    from linformer_kit.models.extend import encoder_at

    return encoder_at(path, length).to(getattr(torch, dtype))


# --- runtimes -------------------------------------------------------------------------------------------


class TorchRunner:
    """Eager PyTorch: each model loaded at the length it reads (`encoder_at`), kept while an n needs it."""

    runtime = "torch"

    def __init__(self, config: BenchmarkConfig) -> None:
        self.dtype = config.dtype
        self.loaded: dict[tuple[str, int], torch.nn.Module] = {}

    @staticmethod
    def extent(model: Model, length: int) -> int:
        return max(model.longest, length)

    def prepare(self, original: Model, students: list[Model], n: int, chunk_length: int) -> None:
        needed = {(m.path, self.extent(m, n if method == "whole" else chunk_length))
                  for m, method in entries(original, students, n, chunk_length)}  # fmt: skip
        for key in [key for key in self.loaded if key not in needed]:
            del self.loaded[key]  # an extended model of a smaller n
        for path, extent in sorted(needed - set(self.loaded)):
            self.loaded[path, extent] = load_encoder(path, extent, self.dtype)

    def step(self, model: Model, length: int, inputs: Inputs) -> Callable[[], None]:
        encoder = self.loaded[model.path, self.extent(model, length)]

        def call() -> None:
            with torch.inference_mode():
                encoder(**inputs)

        return call

    def memory_spec(self, model: Model, length: int) -> dict[str, Any]:
        return {
            "runtime": "torch",
            "path": model.path,
            "extent": self.extent(model, length),
            "dtype": self.dtype,
        }

    def unavailable(self, model: Model, length: int) -> str | None:
        return None


class CompiledRunner(TorchRunner):
    """`TorchRunner` with each model under `torch.compile(dynamic=False)`: one compile per (batch, n), in the
    warm-up calls of each shape, as a deployment serving a few fixed shapes compiles. (With the default,
    the second shape turns the lengths symbolic, which sends the window to its banded core; on 2 CPU cores
    that run recompiled at every call at n = 512, 10-13 s a call.) Its memory is measured on the same model
    compiled in a fresh process."""

    runtime = "torch-compile"

    def prepare(self, original: Model, students: list[Model], n: int, chunk_length: int) -> None:
        before = set(self.loaded)
        super().prepare(original, students, n, chunk_length)
        for key in set(self.loaded) - before:
            self.loaded[key] = cast(torch.nn.Module, torch.compile(self.loaded[key], dynamic=False))

    def memory_spec(self, model: Model, length: int) -> dict[str, Any]:
        return {**super().memory_spec(model, length), "runtime": self.runtime}


class OnnxRunner:
    """ONNX Runtime: each model exported at each length it reads (as a deployment exports for the lengths it
    serves), with a dynamic batch and length up to it, when an n first needs it.

    A student reading n tokens is exported `shortened` to n (its E, F and positions cut; the same outputs; at
    or below its exact_length, full attention with its weights, which is what exact_length runs there):
    under a symbolic length the window's core pads every input to the model's longest input
    (nn/local.py, `banded_attention`), so one export at 4 096 would compute a 4 096-token band at n = 128.
    The original is exported at its own longest input (512), and above it extended to n as `encoder_at`
    reads it.
    """

    runtime = "onnxruntime"

    def __init__(self, config: BenchmarkConfig, ids: list[int], ends: Ends, folder: Path) -> None:
        self.ort = importlib.import_module("onnxruntime")  # by name: it ships no type information
        self.config, self.ids, self.ends, self.folder = config, ids, ends, folder
        self.threads = torch.get_num_threads()
        self.students: set[str] = set()
        self.files: dict[tuple[str, int], Path] = {}
        self.sessions: dict[tuple[str, int], Any] = {}
        self.failed: dict[tuple[str, int], str] = {}
        self.notes: list[str] = []

    def extent(self, model: Model, length: int) -> int:
        return length if model.name in self.students else max(model.longest, length)

    def prepare(self, original: Model, students: list[Model], n: int, chunk_length: int) -> None:
        self.students = {student.name for student in students}
        needed = {(m, self.extent(m, n if method == "whole" else chunk_length))
                  for m, method in entries(original, students, n, chunk_length)}  # fmt: skip
        keys = {(m.name, extent) for m, extent in needed}
        for key in [key for key in self.sessions if key not in keys]:
            del self.sessions[key]  # a length no longer read: its session and file go
            self.files.pop(key).unlink(missing_ok=True)
        for model, extent in sorted(needed, key=lambda pair: (pair[0].name, pair[1])):
            if (model.name, extent) not in self.sessions and (model.name, extent) not in self.failed:
                self.export(model, extent)

    def export(self, model: Model, extent: int) -> None:
        key = (model.name, extent)
        file = self.folder / f"{len(self.files)}-{model.name}-{extent}.onnx"
        try:
            encoder = load_encoder(model.path, max(model.longest, extent))
            if model.name in self.students and extent < model.longest:
                from linformer_kit.models import LinformerPreTrainedModel
                from linformer_kit.models.extend import shortened

                # at or below its exact_length: full attention with its weights, what exact_length runs
                encoder = shortened(cast(LinformerPreTrainedModel, encoder), extent)
            if without_exact_length(encoder):
                note = (f"onnxruntime: {model.name} exported with exact_length=None (it has no exported form, "
                        "nn/exact_rows.py): its rows past k are projected there, at every n above its "
                        "exact_length (at or below it the export is full attention: `shortened`)")  # fmt: skip
                self.notes += [] if note in self.notes else [note]
            length = min(extent, max(16, min(self.config.seq_lens)))
            export_onnx(
                encoder,
                whole(token_rows(self.ids, length, 2, self.ends)),
                file,
                _max_rows(self.config),
                extent,
            )
            self.sessions[key], self.files[key] = onnx_session(self.ort, str(file), self.threads), file
        except Exception as err:  # an exporter's failure is a result: noted, the other models go on
            self.failed[key] = f"ONNX export failed: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
            self.notes.append(f"onnxruntime: {model.name} at {extent}: {self.failed[key]}")
            logger.info(f"student benchmark: {self.notes[-1]}")

    def step(self, model: Model, length: int, inputs: Inputs) -> Callable[[], None]:
        session = self.sessions[model.name, self.extent(model, length)]
        names = [i.name for i in session.get_inputs()]
        feeds = {name: inputs[name].numpy() for name in names}

        def call() -> None:
            session.run(None, feeds)

        return call

    def memory_spec(self, model: Model, length: int) -> dict[str, Any]:
        return {"runtime": "onnxruntime", "path": str(self.files[model.name, self.extent(model, length)])}

    def unavailable(self, model: Model, length: int) -> str | None:
        return self.failed.get((model.name, self.extent(model, length)))


Runner = TorchRunner | CompiledRunner | OnnxRunner


@contextlib.contextmanager
def _runner(
    runtime: str, config: BenchmarkConfig, original: Model, students: list[Model], ids: list[int], ends: Ends,
    notes: list[str],
) -> Iterator[Runner | None]:  # fmt: skip
    """The runner of `runtime`, or None (with a note) when its packages are not installed."""
    if runtime in ("torch", "torch-compile"):
        yield TorchRunner(config) if runtime == "torch" else CompiledRunner(config)
        return
    missing = [name for name in ("onnxruntime", "onnxscript", "onnx") if not _importable(name)]
    if missing:
        notes.append(
            f"onnxruntime: not measured, {' and '.join(missing)} not installed (pip install onnx onnxscript "
            "onnxruntime)"
        )
        logger.info(f"student benchmark: {notes[-1]}")
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="linformer-student-onnx-") as folder:
        runner = OnnxRunner(config, ids, ends, Path(folder))
        try:
            yield runner
        finally:
            notes += runner.notes  # each failed export and each exact_length left out, as the lengths ran


def without_exact_length(model: torch.nn.Module) -> bool:
    """Sets exact_length None in every attention layer of `model` (the form torch.export can trace); whether
    any layer had one."""
    from linformer_kit.nn import LinformerSelfAttention

    layers = [
        m for m in model.modules() if isinstance(m, LinformerSelfAttention) and m.exact_length is not None
    ]
    for layer in layers:
        layer.exact_length = None
    return bool(layers)


def export_onnx(model: torch.nn.Module, example: Inputs, file: Path, max_rows: int, max_length: int) -> None:
    """`torch.onnx.export(..., dynamo=True)` of `model` on `example`, with a dynamic batch (1 ... max_rows)
    and length (2 ... max_length), saved to `file`."""
    from torch.export import Dim

    batch = Dim("batch", min=1, max=max(2, max_rows))
    length = Dim("length", min=2, max=max(3, max_length))
    shapes = {name: {0: batch, 1: length} for name in example}
    with (
        warnings.catch_warnings(),
        _quiet_loggers("torch.onnx", "torch.export", "torch._dynamo", "onnxscript"),
    ):
        warnings.simplefilter("ignore")
        program = torch.onnx.export(
            model, (), kwargs=example, dynamic_shapes=shapes, dynamo=True, verbose=False
        )
        if program is None:
            raise RuntimeError("torch.onnx.export(dynamo=True) returned no program")
        program.save(str(file))


def onnx_session(ort: Any, file: str, threads: int) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # each session has its own thread pool, whose threads spin after a call: they would take the cores from
    # the next model's call in the same round (A/B), so they sleep instead
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3  # errors only
    return ort.InferenceSession(file, options, providers=["CPUExecutionProvider"])


@contextlib.contextmanager
def _quiet_loggers(*names: str) -> Iterator[None]:
    levels = {name: logging.getLogger(name).level for name in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


# --- one group: every model at one (runtime, n, batch), timed round-robin ---------------------------


@dataclass
class _Live:
    model: Model
    record: StudentRecord
    step: Callable[[], None]
    inputs: Inputs
    number: int = 1  # calls a sample
    rounds: int = 1
    samples: list[float] = field(default_factory=list)


class Group:
    """The models of one (runtime, n, batch): built, warmed up, timed in rotating rounds, then their memory."""

    def __init__(
        self, config: BenchmarkConfig, runner: Runner, ids: list[int], ends: Ends, n: int, batch: int
    ) -> None:
        self.config, self.runner, self.n, self.batch = config, runner, n, batch
        rows = token_rows(ids, n, batch, ends)
        self.inputs = {"whole": whole(rows)}
        if n > config.chunk_length:
            self.inputs["chunks"] = chunked(rows, config.chunk_length, ends)

    def record(self, model: Model, method: str) -> StudentRecord:
        shape = self.inputs[method]["input_ids"].shape
        gflop = least_encoder_flops(model.config, shape[0], shape[1]) / 1e9
        return StudentRecord(model=model.name, path=model.path, runtime=self.runner.runtime, method=method, n=self.n,
                             batch=self.batch, rows=shape[0], length=shape[1], longest_input=model.longest,
                             threads=torch.get_num_threads(), gflop=gflop)  # fmt: skip

    def measure(
        self, original: Model, students: list[Model], history: dict, with_memory: bool
    ) -> list[StudentRecord]:
        config, records, live = self.config, [], []
        for model, method in entries(original, students, self.n, config.chunk_length):
            record = self.record(model, method)
            records.append(record)
            key = (self.runner.runtime, model.name, method)
            record.skipped = self.runner.unavailable(model, record.length) or self.skip_reason(
                model, record, history.get(key)
            )
            if record.skipped is None:
                try:
                    live.append(self.warm_up(model, record))
                except (RuntimeError, MemoryError, ValueError) as err:
                    record.skipped = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
            if record.skipped is not None:
                history[key] = (self.n, None)
        for r in range(max((c.rounds for c in live), default=0)):
            order = live[r % len(live) :] + live[: r % len(live)]  # rotate: no model always goes first
            for c in order:
                if r < c.rounds:
                    c.samples += _sample(c.step, "cpu", warmup=0, repeats=1, number=c.number)
        for c in live:
            _summarise(c.record, c.samples)
            history[(self.runner.runtime, c.model.name, c.record.method)] = (
                self.n, (c.record.seconds_median or 0.0) / self.batch,
            )  # fmt: skip
            if with_memory:
                self.memory(c)
        return records

    def skip_reason(
        self, model: Model, record: StudentRecord, before: tuple[int, float | None] | None
    ) -> str | None:
        """A call predicted above the time cap (from this model at its previous n), or a larger n of a
        skipped one; on ONNX Runtime, full attention whose n x n scores are predicted above the free memory."""
        cap = self.config.time_cap_s
        if before is not None:
            previous_n, per_text = before
            if per_text is None:
                return f"skipped at n={previous_n}"
            growth = (self.n / previous_n) ** (1 if record.method == "chunks" else 2)
            predicted = per_text * self.batch * growth
            if predicted > cap:
                return f"predicted {predicted:.0f} s a call > time cap {cap:.0f} s"
        if self.runner.runtime == "onnxruntime" and model.name == "original" and record.method == "whole":
            import psutil

            need, available = 2 * record.rows * model.heads * self.n**2 * 4, psutil.virtual_memory().available
            if need > 0.8 * available:  # the exported graph writes each head's (n x n) scores out
                return f"predicted {need / 2**30:.1f} GiB > 80% of {available / 2**30:.1f} GiB available"
        return None

    def warm_up(self, model: Model, record: StudentRecord) -> _Live:
        config = self.config
        inputs = self.inputs[record.method]
        step = self.runner.step(model, record.length, inputs)
        first = _sample(step, "cpu", warmup=0, repeats=1, number=1)[0]  # also a time estimate
        kept = [first] if first > config.time_cap_s / 4 else []  # a long call is its own warm-up
        for _ in range(0 if kept else config.warmup - 1):
            step()
        number = max(1, math.ceil(config.min_time_s / max(first, 1e-9)))
        calls_left = int(config.time_cap_s / max(first, 1e-9)) - (1 if kept else config.warmup)
        rounds = max(1, min(config.rounds - len(kept), calls_left))
        return _Live(model, record, step, inputs, number, rounds, samples=kept)

    def memory(self, c: _Live) -> None:
        spec = {
            **self.runner.memory_spec(c.model, c.record.length),
            "tokenizer": self.config.original, "text_file": self.config.text_file,
            "at_least": _tokens_needed(self.config), "n": self.n, "batch": self.batch,
            "chunk": self.config.chunk_length if c.record.method == "chunks" else None,
            "threads": torch.get_num_threads(),
        }  # fmt: skip
        try:
            peak, after_build = measure_memory(spec, timeout_s=120.0 + 4 * (c.record.seconds_median or 0.0))
        except RuntimeError as err:
            c.record.note = f"memory not measured: {err}"
            return
        c.record.peak_mib, c.record.peak_rss_mib = max(0, peak - after_build) / MiB, peak / MiB


def _summarise(record: StudentRecord, samples: list[float]) -> None:
    s = sorted(samples)
    q1, _, q3 = statistics.quantiles(s, n=4, method="inclusive") if len(s) > 1 else (s[0], s[0], s[0])
    record.seconds_median = statistics.median(s)
    record.seconds_q1, record.seconds_q3, record.seconds_min, record.seconds_max = q1, q3, s[0], s[-1]
    record.samples = len(s)
    record.texts_per_second = record.batch / record.seconds_median


def _progress_line(records: list[StudentRecord]) -> str:
    first = records[0]
    cells = [
        f"{r.model}{' on chunks' if r.method == 'chunks' else ''} "
        + (f"{r.texts_per_second:.2f}" if r.texts_per_second is not None else "skipped")
        for r in records
    ]
    return (
        f"student benchmark: {first.runtime} n={first.n} batch {first.batch}: "
        + ", ".join(cells)
        + " texts/s"
    )


def environment(config: BenchmarkConfig) -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    found = _environment(config)
    for package in ("transformers", "onnxruntime"):
        try:
            found[f"{package}_version"] = version(package)
        except PackageNotFoundError:
            found[f"{package}_version"] = None
    found["cpu"] = _cpu_name() or found["device_name"]
    return found


def _cpu_name() -> str | None:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


# --- peak memory in a fresh process -----------------------------------------------------------------


def measure_memory(spec: dict[str, Any], timeout_s: float) -> tuple[int, int]:
    """(peak RSS, RSS after building) in bytes of one call described by `spec`, in a fresh process."""
    cmd = [sys.executable, "-m", "linformer_kit.bench.student", json.dumps(spec)]
    report = run_memory_subprocess(cmd, timeout_s, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    return int(report["peak_bytes"]), int(report["rss_after_build"])


def _memory_main(spec: dict[str, Any]) -> None:
    torch.set_num_threads(int(spec["threads"]))
    tokenizer = load_tokenizer(spec["tokenizer"])
    ends = ends_of(tokenizer)
    rows = token_rows(
        text_ids(tokenizer, spec["text_file"], int(spec["at_least"])), spec["n"], spec["batch"], ends
    )
    inputs = chunked(rows, spec["chunk"], ends) if spec["chunk"] else whole(rows)
    if spec["runtime"] in ("torch", "torch-compile"):
        encoder = load_encoder(spec["path"], int(spec["extent"]), spec["dtype"])
        if spec["runtime"] == "torch-compile":
            encoder = cast(torch.nn.Module, torch.compile(encoder, dynamic=False))

        def call() -> None:
            with torch.inference_mode():
                encoder(**inputs)
    else:
        session = onnx_session(importlib.import_module("onnxruntime"), spec["path"], int(spec["threads"]))
        feeds = {i.name: inputs[i.name].numpy() for i in session.get_inputs()}

        def call() -> None:
            session.run(None, feeds)

    rss_after_build = current_rss()
    call()
    print(json.dumps({"peak_bytes": peak_rss(), "rss_after_build": rss_after_build}))  # noqa: T201


if __name__ == "__main__":
    _memory_main(json.loads(sys.argv[1]))
