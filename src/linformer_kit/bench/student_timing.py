"""One group of scope "student": every model at one (runtime, n, batch), timed by bench/timing.py's harness.

    Group            builds the group's inputs and records, skips what the time cap or memory rules out,
                     warms the rest up and times them in rotating rounds (bench/timing.py: `warm_up`,
                     `time_in_rounds`, `summarise`), then measures their memory (bench/student_memory.py)
    growth_exponent  how a model's call grows with n, for the time cap's prediction (`predicted_seconds`)
    progress_line    the log line of a finished group

What is left here is what the harness cannot know: which models a group holds, how a student's time grows
with n, and the records' fields (texts/s rather than FLOP/s).
"""

from __future__ import annotations

import torch

from linformer_kit.bench import timing
from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.flops import least_encoder_flops
from linformer_kit.bench.student_config import Model, entries, tokens_needed
from linformer_kit.bench.student_inputs import Ends, chunked, token_rows, whole
from linformer_kit.bench.student_memory import measure_memory
from linformer_kit.bench.student_records import StudentRecord
from linformer_kit.bench.student_runtimes import Runner
from linformer_kit.models.configuration_linformer import LinformerConfig

MiB = 2**20
# (runtime, model, method) -> (its last n, seconds a text there; None: skipped there)
History = dict[tuple[str, str, str], tuple[int, float | None]]


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
        self, original: Model, students: list[Model], history: History, with_memory: bool
    ) -> list[StudentRecord]:
        records: list[StudentRecord] = []
        live: list[tuple[Model, StudentRecord, timing.Timed]] = []
        for model, method in entries(original, students, self.n, self.config.chunk_length):
            record = self.record(model, method)
            records.append(record)
            key = (self.runner.runtime, model.name, method)
            record.skipped = self.runner.unavailable(model, record.length) or self.skip_reason(
                model, record, history.get(key)
            )
            if record.skipped is None:
                try:
                    step = self.runner.step(model, record.length, self.inputs[method])
                    live.append((model, record, timing.warm_up(step, "cpu", self.config)))
                except (RuntimeError, MemoryError, ValueError) as err:
                    record.skipped = f"failed: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
            if record.skipped is not None:
                history[key] = (self.n, None)
        timing.time_in_rounds([timed for _, _, timed in live], "cpu")
        for model, record, timed in live:
            _fill_times(record, timing.summarise(timed.samples))
            history[(self.runner.runtime, model.name, record.method)] = (
                self.n, (record.seconds_median or 0.0) / self.batch,
            )  # fmt: skip
            if with_memory:
                self.memory(model, record)
        return records

    def skip_reason(
        self, model: Model, record: StudentRecord, before: tuple[int, float | None] | None
    ) -> str | None:
        """A call predicted above the time cap (from this model at its previous n, grown as n^growth_exponent),
        or a larger n of a skipped one; on ONNX Runtime, full attention whose n x n scores are predicted
        above the free memory."""
        cap = self.config.time_cap_s
        if before is not None:
            previous_n, per_text = before
            if per_text is None:
                return f"skipped at n={previous_n}"
            growth = growth_exponent(model, record.method, self.n)
            predicted = timing.predicted_seconds(per_text * self.batch, previous_n, self.n, growth)
            if predicted > cap:
                return f"predicted {predicted:.0f} s a call > time cap {cap:.0f} s"
        if self.runner.runtime == "onnxruntime" and model.name == "original" and record.method == "whole":
            import psutil

            need, available = 2 * record.rows * model.heads * self.n**2 * 4, psutil.virtual_memory().available
            if need > 0.8 * available:  # the exported graph writes each head's (n x n) scores out
                return f"predicted {need / 2**30:.1f} GiB > 80% of {available / 2**30:.1f} GiB available"
        return None

    def memory(self, model: Model, record: StudentRecord) -> None:
        spec = {
            **self.runner.memory_spec(model, record.length),
            "tokenizer": self.config.original, "text_file": self.config.text_file,
            "at_least": tokens_needed(self.config), "n": self.n, "batch": self.batch,
            "chunk": self.config.chunk_length if record.method == "chunks" else None,
            "threads": torch.get_num_threads(),
        }  # fmt: skip
        try:
            peak, after_build = measure_memory(spec, timeout_s=120.0 + 4 * (record.seconds_median or 0.0))
        except RuntimeError as err:
            record.note = f"memory not measured: {err}"
            return
        record.peak_mib, record.peak_rss_mib = max(0, peak - after_build) / MiB, peak / MiB


def growth_exponent(model: Model, method: str, n: int) -> int:
    """How the time of a call at n grows with n: 2 where a layer attends fully at n (a BERT / RoBERTa read
    whole; a student at n up to its exact_length, `LinformerConfig.attends_exactly`), 1 where every layer
    projects (a student above it: k slots and a window of w keys a query, whatever n) and for chunks (more
    chunks of one length). Scaling a Linformer's time as n^2 would skip it at an n it reads in time."""
    if method == "chunks":
        return 1
    if model.config.get("model_type") != "linformer":
        return 2
    return 2 if any(LinformerConfig.from_dict(dict(model.config)).attends_exactly(n)) else 1


def _fill_times(record: StudentRecord, times: timing.Summary) -> None:
    record.seconds_median, record.seconds_q1, record.seconds_q3 = times.median, times.q1, times.q3
    record.seconds_min, record.seconds_max, record.samples = times.min, times.max, times.samples
    record.texts_per_second = record.batch / times.median


def progress_line(records: list[StudentRecord]) -> str:
    """The log line of a finished group: each model's texts/s (or "skipped")."""
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
