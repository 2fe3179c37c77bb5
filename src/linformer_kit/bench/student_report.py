"""What scope "student" reports: the ratios of each student to its baselines, as tables and files.

A ratio compares a student with the original at the same runtime, n and batch (the same texts):

    baseline  "original"  the original reading each text whole (n at most its longest input)
              "chunks"    the original reading each text as ceil(n / chunk_length) chunks in one batch
              "full"      the original reading each text whole above its longest input: full attention,
                          positions copied (`encoder_at`)
    speed     texts/s of the student / texts/s of the baseline (above 1: the student is faster)
    memory    peak memory of a call, student / baseline (below 1: the student needs less); measured at
              each n's largest batch only
    FLOP limit  the baseline's least FLOPs / the student's (bench/flops.py `least_encoder_flops`): the speed
              ratio a machine running both at one matmul rate would show, what the arithmetic allows

`student_ratios(records)` computes them from the records alone, so a saved student.json gives them back; so
does `encode_speed(record)` the encode case's ratio (bench/student_encode.py: `SentenceTransformer.encode` of
texts of mixed lengths, the original's seconds on chunks / the student's whole, the median over rounds).
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from linformer_kit.bench.student_encode import median_ratio
from linformer_kit.bench.student_records import EncodeRecord, StudentRecord, StudentResult

RESULT_FILES = ("student.json", "student.md")


@dataclass
class StudentRatio:
    student: str
    runtime: str
    n: int
    batch: int
    baseline: str  # original | chunks | full
    speed: float | None  # texts/s of the student / of the baseline (None: either was not timed)
    memory: float | None  # peak MiB of a call, student / baseline (None: not measured)
    flop_limit: float | None = None  # the baseline's least GFLOP / the student's (None: not counted)


def baseline_of(record: StudentRecord) -> str:
    """What the original's record is to a student: "chunks", "full" (whole above its longest input) or "original"."""
    if record.method == "chunks":
        return "chunks"
    return "full" if record.n > record.longest_input else "original"


def student_ratios(records: list[StudentRecord]) -> list[StudentRatio]:
    """Every student against every baseline of its (runtime, n, batch), in the order of the records."""
    originals: dict[tuple[str, int, int], list[StudentRecord]] = {}
    for r in records:
        if r.model == "original":
            originals.setdefault((r.runtime, r.n, r.batch), []).append(r)
    ratios = []
    for s in records:
        if s.model == "original":
            continue
        for b in originals.get((s.runtime, s.n, s.batch), []):
            speed = (
                s.texts_per_second / b.texts_per_second
                if s.texts_per_second is not None and b.texts_per_second
                else None
            )
            memory = s.peak_mib / b.peak_mib if s.peak_mib is not None and b.peak_mib else None
            limit = b.gflop / s.gflop if s.gflop and b.gflop is not None else None
            ratios.append(
                StudentRatio(s.model, s.runtime, s.n, s.batch, baseline_of(b), speed, memory, limit)
            )
    return ratios


def baseline_label(baseline: str, n: int, chunk_length: int) -> str:
    if baseline == "chunks":
        count = -(-n // chunk_length)
        return f"original on {count} chunks of {chunk_length}"
    return "original, full attention (positions copied)" if baseline == "full" else "original"


def format_ratio_tables(result: StudentResult) -> str:
    """One table per runtime: rows (n, batch, baseline), per student its speed and memory ratio."""
    ratios = student_ratios(result.records)
    students = list(dict.fromkeys(r.student for r in ratios))
    chunk_length = int(result.config["chunk_length"])
    parts = []
    for runtime in dict.fromkeys(r.runtime for r in ratios):
        rows: dict[tuple[int, int, str], dict[str, StudentRatio]] = {}
        for r in ratios:
            if r.runtime == runtime:
                rows.setdefault((r.n, r.batch, r.baseline), {})[r.student] = r
        head = (
            "| n | batch | baseline | "
            + " | ".join(f"{s} texts/s | {s} FLOP limit | {s} memory" for s in students)
            + " |"
        )
        lines = [
            f"**{runtime}: student / baseline** (texts/s: above 1x the student is faster; FLOP limit: the "
            "baseline's least FLOPs / the student's, the texts/s ratio the arithmetic allows at one matmul "
            "rate; memory: the peak memory of a call, below 1x the student needs less; measured at each n's "
            "largest batch)",
            "",
            head,
            "|" + "---|" * (3 + 3 * len(students)),
        ]
        order = {"original": 0, "full": 1, "chunks": 2}
        for (n, batch, baseline), cells in sorted(
            rows.items(), key=lambda item: (item[0][0], -item[0][1], order[item[0][2]])
        ):
            values = []
            for student in students:
                cell = cells.get(student)
                values += [_times(cell.speed if cell else None), _times(cell.flop_limit if cell else None),
                           _times(cell.memory if cell else None)]  # fmt: skip
            lines.append(
                f"| {n} | {batch} | {baseline_label(baseline, n, chunk_length)} | "
                + " | ".join(values)
                + " |"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def encode_speed(record: EncodeRecord) -> float | None:
    """The original's seconds on chunks / the student's whole, the median over rounds (above 1: the student is
    faster); None where it was not timed."""
    return median_ratio(record.seconds_chunks, record.seconds_student)


def format_encode_table(result: StudentResult) -> str:
    """The encode case: a row a student, its ratio or why it was skipped ("" where the case was not run)."""
    if not result.encode:
        return ""
    first = result.encode[0]
    lines = [
        f"**encode: student / original on chunks** (`SentenceTransformer.encode` at batch {first.batch_size}, "
        f"{first.texts} texts of {first.shortest} to {first.longest} tokens, the original on chunks of "
        f"{first.chunk_length} averaged per text; {first.cpu or 'CPU ?'}, {first.threads} threads, {first.dtype}; "
        "the original's seconds / the student's, median of alternated rounds: above 1x the student is faster)",
        "",
        "| student | student reads up to | original's chunks | student median s | original median s | speed | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in result.encode:
        student_s = statistics.median(r.seconds_student) if r.seconds_student else None
        chunks_s = statistics.median(r.seconds_chunks) if r.seconds_chunks else None
        lines.append(
            f"| {r.student} | {r.student_max_seq_length or ''} | {r.chunks or ''} | {_number(student_s, 3)} | "
            f"{_number(chunks_s, 3)} | {_times(encode_speed(r))} | {r.skipped or ''} |"
        )
    return "\n".join(lines)


def encode_line(records: list[EncodeRecord]) -> str:
    """The log line of the encode case."""
    return "encode: " + ", ".join(
        f"{r.student} {r.skipped}"
        if r.skipped
        else f"{r.student} {_times(encode_speed(r))} the original's chunks"
        for r in records
    )


def format_records_table(result: StudentResult) -> str:
    lines = [
        "**Every record** (median seconds a call over the rounds; peak MiB: what one call needs above the "
        "built model, in a fresh process)",
        "",
        "| runtime | model | method | n | batch | sequences x tokens | texts/s | median s | IQR s | samples | peak MiB | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in result.records:
        iqr = None if r.seconds_q1 is None or r.seconds_q3 is None else r.seconds_q3 - r.seconds_q1
        lines.append(
            f"| {r.runtime} | {r.model} | {r.method} | {r.n} | {r.batch} | {r.rows} x {r.length} | "
            f"{_number(r.texts_per_second, 2)} | {_number(r.seconds_median, 4)} | {_number(iqr, 4)} | {r.samples} | "
            f"{_number(r.peak_mib, 0)} | {r.skipped or r.note or ''} |"
        )
    return "\n".join(lines)


def format_header(result: StudentResult) -> str:
    cfg, env = result.config, result.environment
    students = ", ".join(f"{name} ({path})" for name, path in _students(result).items())
    text = cfg.get("text_file") or "the built-in text"
    versions = f"torch {env.get('torch_version')}" + (
        f", onnxruntime {env['onnxruntime_version']}"
        if "onnxruntime" in cfg["runtimes"] and env.get("onnxruntime_version")
        else ""
    )
    lines = [
        f"Students {students} against the original {cfg['original']}.",
        f"{env.get('cpu')}{_capability(env)}, {env.get('threads')} threads, {cfg['dtype']}, {versions}, "
        f"{env.get('date_utc')}. "
        f"Inputs: {text}, cut to exactly n tokens. Median of {cfg['rounds']} alternated rounds after "
        f"{cfg['warmup']} warm-up call(s), in one process. Run took {result.elapsed_s:.0f} s.",
    ]
    lines += [f"Note: {note}" for note in result.notes]
    return "\n".join(lines)


def format_student_report(result: StudentResult) -> str:
    """The whole Markdown report: header, the ratio tables, the encode case, every record."""
    parts = [format_header(result), format_ratio_tables(result), format_encode_table(result),
             format_records_table(result)]  # fmt: skip
    return "\n\n".join(p for p in parts if p) + "\n"


def write_student_report(result: StudentResult, output_dir: str | Path) -> dict[str, Path]:
    """student.json (config, environment, notes, records and ratios) and student.md in `output_dir`."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {
        **dataclasses.asdict(result),
        "ratios": [dataclasses.asdict(r) for r in student_ratios(result.records)],
        "encode": [{**dataclasses.asdict(r), "speed_over_chunks": encode_speed(r)} for r in result.encode],
    }
    paths = {"json": out / RESULT_FILES[0], "markdown": out / RESULT_FILES[1]}
    paths["json"].write_text(json.dumps(data, indent=2) + "\n")
    paths["markdown"].write_text(format_student_report(result))
    return paths


def load_student_result(path: str | Path) -> StudentResult:
    """A student.json back as the result it was written from (its ratios are recomputed from the records)."""
    data = json.loads(Path(path).read_text())
    records = [StudentRecord(**r) for r in data["records"]]
    encode = [
        EncodeRecord(**{k: v for k, v in r.items() if k != "speed_over_chunks"})
        for r in data.get("encode", [])
    ]
    return StudentResult(
        data["config"],
        data["environment"],
        records,
        data.get("notes", []),
        data.get("elapsed_s", 0.0),
        encode,
    )


def _students(result: StudentResult) -> dict[str, str]:
    from linformer_kit.bench.student_options import named_students

    return named_students(tuple(result.config["students"]))


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}x"


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def _capability(env: dict) -> str:
    """The instruction set PyTorch's CPU kernels run at, for the header: it decides "auto"'s window core (none in
    a record from before it was kept)."""
    return f" (PyTorch's CPU kernels: {env['cpu_capability']})" if env.get("cpu_capability") else ""
