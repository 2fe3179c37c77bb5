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

Timing (A/B in one process, bench/timing.py's harness, as scope layer and encoder are timed): the models of
one (runtime, n, batch) are built and warmed up, then timed in rounds that visit each in turn, the order
rotating each round, so a slow moment of a shared machine hits them all; a sample repeats a fast call until
it lasts `min_time_s`. texts/s = batch / the median seconds of a call. A call predicted above `time_cap_s`
(from the same model at the previous n: grown as n^2 where a layer attends fully at n, as n where every
layer projects, and for chunks) is skipped, with the reason in its record, and so are its larger n.
Peak memory, at each n's largest batch: a fresh process builds the model (or ONNX Runtime session) and
the batch, reads its RSS, runs one call and reports the rise to its peak RSS (bench/memory.py's measure):
what the call needs above the weights.
ONNX: each model is exported at each length it reads (a student `shortened` to n, the original at its
longest input or extended to n: `OnnxRunner`) by `torch.onnx.export(..., dynamo=True)` with a dynamic
batch and length (into a temporary folder, removed at the end) and run by ONNX Runtime's CPU provider
with as many intra-op threads as torch uses. Without onnx, onnxscript and onnxruntime installed
the runtime is left out, with a note in the result.
With `encode_texts` > 0 (the preset: 64), each student is also timed as users call it, through
`SentenceTransformer.encode` at batch 32 on texts of mixed lengths, against the original's `encode` of the same
texts as chunk_length-token chunks averaged per text (bench/student_encode.py: the ratio, or why it was skipped).

This module is the run; its pieces, each importable from here too:

    bench/student_config.py    Model, check_student_files (before any work), the sweep: batches, entries
    bench/student_inputs.py    the texts cut to n tokens, and the same texts as chunks
    bench/student_runtimes.py  loading, exporting and calling a model: Torch-, Compiled-, OnnxRunner
    bench/student_timing.py    Group: one (runtime, n, batch) timed by bench/timing.py's harness; growth_exponent
    bench/student_memory.py    the peak memory of one call, in a fresh process
    bench/student_encode.py    the encode case: SentenceTransformer.encode, student whole against original chunks
    bench/student_records.py   StudentRecord, EncodeRecord, StudentResult, environment
    bench/student_report.py    the ratios, student.md and student.json
"""

from __future__ import annotations

import dataclasses
import logging
import time

import torch

from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.student_config import Model, batches, check_student_files, entries, tokens_needed
from linformer_kit.bench.student_encode import measure_encode
from linformer_kit.bench.student_inputs import ends_of, text_ids
from linformer_kit.bench.student_memory import measure_memory
from linformer_kit.bench.student_records import EncodeRecord, StudentRecord, StudentResult, environment
from linformer_kit.bench.student_report import encode_line
from linformer_kit.bench.student_runtimes import (
    CompiledRunner,
    OnnxRunner,
    Runner,
    TorchRunner,
    export_onnx,
    load_encoder,
    load_tokenizer,
    onnx_session,
    open_runner,
    without_exact_length,
)
from linformer_kit.bench.student_timing import Group, History, growth_exponent, progress_line

__all__ = [
    "CompiledRunner",
    "EncodeRecord",
    "Group",
    "Model",
    "OnnxRunner",
    "Runner",
    "StudentRecord",
    "StudentResult",
    "TorchRunner",
    "batches",
    "check_student_files",
    "entries",
    "environment",
    "export_onnx",
    "growth_exponent",
    "load_encoder",
    "load_tokenizer",
    "measure_encode",
    "measure_memory",
    "onnx_session",
    "run_student_benchmark",
    "without_exact_length",
]

logger = logging.getLogger(__name__)


def run_student_benchmark(config: BenchmarkConfig) -> StudentResult:
    """Measure every student of `config` against its original (module docstring); ValueError before any
    work for a missing or unreadable folder, a student that is no Linformer or cannot read an n."""
    start = time.perf_counter()
    original, students = check_student_files(config)
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    tokenizer = load_tokenizer(original.path)
    ids, ends = text_ids(tokenizer, config.text_file, tokens_needed(config)), ends_of(tokenizer)
    result = StudentResult(dataclasses.asdict(config), environment(config))
    history: History = {}  # each model's last n and seconds a text there: the time cap's prediction
    for runtime in config.runtimes:
        with open_runner(runtime, config, original, students, ids, ends, result.notes) as runner:
            if runner is None:
                continue
            for n in sorted(set(config.seq_lens)):
                runner.prepare(original, students, n, config.chunk_length)
                for batch in batches(config, n):
                    group = Group(config, runner, ids, ends, n, batch)
                    memory = config.measure_memory and batch == batches(config, n)[0]
                    records = group.measure(original, students, history, memory)
                    result.records += records
                    logger.info(progress_line(records))
    if config.encode_texts:
        result.encode = measure_encode(config, original, students)
        logger.info(encode_line(result.encode))
    result.elapsed_s = time.perf_counter() - start
    return result
