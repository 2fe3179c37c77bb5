"""What a run of scope "student" records (student.json holds them; student_report.py reads them back).

StudentRecord  one model reading one (n, batch) under one runtime: seconds a call, texts/s, peak memory
EncodeRecord   one student's encode case (bench/student_encode.py): the seconds of its rounds, both models'
StudentResult  the run: its config, environment, records, encode records and notes
environment    the machine and software of the run: measure.py's, with transformers, onnxruntime and
               the CPU's name
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from linformer_kit.bench import measure
from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.nn.autotune import cpu_model_name


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
class EncodeRecord:
    """One student's encode case: `SentenceTransformer.encode` of texts of mixed lengths, whole, against the
    original's `encode` of the same texts as chunks (bench/student_encode.py). The seconds are kept, not the
    ratio: student_report.py's `encode_speed` computes it from them, so a saved student.json gives it back."""

    student: str  # the student's name
    path: str
    original: str  # the original's folder
    texts: int
    batch_size: int  # encode's batch size
    shortest: int  # the texts' lengths are drawn from [shortest, longest] tokens
    longest: int
    chunk_length: int  # tokens a chunk of the original (special tokens included)
    dtype: str
    cpu: str | None
    threads: int
    chunks: int = 0  # the original's sequences: every text's chunks
    student_max_seq_length: int | None = None  # where the student's `encode` cuts a text (as saved)
    seconds_student: list[float] = field(default_factory=list)  # a call of each round
    seconds_chunks: list[float] = field(default_factory=list)  # the original's call of the same round
    skipped: str | None = None  # why it was not timed (None: timed)


@dataclass
class StudentResult:
    config: dict[str, Any]
    environment: dict[str, Any]
    records: list[StudentRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a runtime left out, and why
    elapsed_s: float = 0.0
    # the encode case's (encode_texts > 0), one a student
    encode: list[EncodeRecord] = field(default_factory=list)


def environment(config: BenchmarkConfig) -> dict[str, Any]:
    """measure.py's environment, with the versions of transformers and onnxruntime (None: not installed)
    and the CPU's name (the report's header)."""
    from importlib.metadata import PackageNotFoundError, version

    found = measure.environment(config)
    for package in ("transformers", "onnxruntime"):
        try:
            found[f"{package}_version"] = version(package)
        except PackageNotFoundError:
            found[f"{package}_version"] = None
    found["cpu"] = cpu_model_name() or found["device_name"]
    return found
