"""Paper-style tables (Markdown, also what the CLI prints) and the files a run writes.

Table 3 of the paper: rows n, columns k, cells the speed-up (time of full attention / time of
Linformer) and memory saving (peak memory delta of full / of Linformer). One table per scope, pass
and full-attention baseline, columns every Linformer method (and peer) times k (times the local
window w, `w=none` for no window, when the run has one: w = 0, 16, 64 side by side); and one per peer
(another Linformer) present, comparing our Linformer methods with it at the same k. Training steps
also get a table of tokens/s. The project's own acceptance targets are not here: scripts/cpu/targets.py.
"""

from __future__ import annotations

import json
from pathlib import Path

from linformer_kit.bench.config import (
    FULL_METHODS,
    LINFORMER_METHODS,
    METHODS,
    PASS_TYPES,
    PEER_METHODS,
    SCOPES,
)
from linformer_kit.bench.flops import case_flops
from linformer_kit.bench.measure import BenchmarkRecord, BenchmarkResult
from linformer_kit.nn.options import checked_choice

MiB = 2**20


def format_report(result: BenchmarkResult) -> str:
    """The whole Markdown report: environment, speed-up tables, training tokens/s, then every record."""
    parts = [format_header(result)]
    parts += [format_speedup_table(result, s, p, b) for s, p, b in _table_keys(result)]
    parts.append(format_training_table(result))
    parts.append(format_records_table(result))
    return "\n\n".join(p for p in parts if p) + "\n"


def format_header(result: BenchmarkResult) -> str:
    env, cfg = result.environment, result.config
    return (
        f"Device {cfg['device']} ({env['device_name']}), dtype {cfg['dtype']}, torch {env['torch_version']}, "
        f"{env['threads']} threads, batch {cfg['batch_size']}, d={cfg['hidden_size']}, {cfg['num_heads']} heads "
        f"(encoder: {cfg['num_layers']} layers, FFN {cfg['intermediate_size']}), {env['date_utc']}.\n"
        f"Matmul rate of this run ({result.matmul_reference or str(cfg['matmul_size']) + '^3 GEMM'}): "
        f"{result.matmul_flops_per_s / 1e9:.1f} GFLOP/s (median over the run; each case is compared with "
        "the samples of its own rounds). "
        f"Run took {result.elapsed_s:.0f} s."
    )


def format_speedup_table(result: BenchmarkResult, scope: str, pass_type: str, baseline: str) -> str:
    """Rows n, columns method x k (x w); cells `time speed-up / memory saving` of each method over `baseline`.

    A full-attention baseline is one case per n; a peer baseline (another Linformer) is compared at
    the same k, and only our Linformer methods are its columns.
    """
    records = [r for r in result.records if r.scope == scope and r.pass_type == pass_type]
    per_k = baseline not in FULL_METHODS
    base = {(r.n, r.k if per_k else None): r for r in records if r.method == baseline}
    others = [r for r in records if r.method not in FULL_METHODS and r.method != baseline]
    if per_k:
        others = [r for r in others if r.method.startswith("linformer-")]
    columns = sorted({(r.method, r.k, r.local_window) for r in others}, key=_column_order)
    if not columns or not base:
        return ""
    cells = {(r.n, r.method, r.k, r.local_window): r for r in records}
    windowed = any(r.local_window is not None for r in records)
    header = ["n"] + [
        f"{m.removeprefix('linformer-')} k={k}"
        + (f" w={window_text(w)}" if windowed and m in LINFORMER_METHODS else "")
        for m, k, w in columns
    ]
    rows = []
    for n in sorted({n for n, _ in base}):
        row = [str(n)]
        for m, k, w in columns:
            r, b = cells.get((n, m, k, w)), base.get((n, k if per_k else None))
            row.append(_ratio_cell(b, r) if r is not None and b is not None else "")
        rows.append(row)
    title = (
        f"**{scope}, {pass_type}: speed-up / memory saving over {baseline}** "
        f"(time of {baseline} / time of the method; peak-memory delta of {baseline} / of the method"
        + (", at the same k)" if per_k else ")")
    )
    return title + "\n\n" + markdown_table(header, rows)


def format_training_table(result: BenchmarkResult) -> str:
    """Training steps (pass train_step): tokens/s of each method, speed-up over full attention, % matmul.

    A step is forward + backward + AdamW of the encoder; its FLOPs are forward + backward (the
    optimizer's elementwise update is under 1% of them, see `linformer_kit.bench.flops`).
    """
    records = [r for r in result.records if r.pass_type == "train_step"]
    if not records:
        return ""
    full = {(r.n, r.method): r for r in records if r.method in FULL_METHODS}
    bases = [m for m in FULL_METHODS if any(r.method == m for r in records)]
    header = ["n", "method", "k", "w", "tokens/s", *[f"speed-up over {b}" for b in bases], "% matmul", "note"]
    rows = []
    for r in sorted(records, key=lambda r: (r.n, *_column_order((r.method, r.k, r.local_window)))):
        measured = r.tokens_per_s is not None
        rows.append([
            str(r.n), r.method, "" if r.k is None else str(r.k), record_window_text(r),
            f"{r.tokens_per_s:.0f}" if measured else "",
            *[_speedup(full.get((r.n, b)), r) for b in bases],
            f"{matmul_share(r, result):.0%}" if measured else "", r.skipped or "",
        ])  # fmt: skip
    title = (
        "**encoder, train_step: tokens/s** (batch x n / median time of one forward + backward + AdamW "
        "step; speed-up = tokens/s of the method / of full attention; % matmul as in the table of all cases)"
    )
    return title + "\n\n" + markdown_table(header, rows)


def matmul_share(r: BenchmarkRecord, result: BenchmarkResult) -> float:
    """Achieved FLOP/s of a measured record over the GEMM rate of its own rounds (else of the run)."""
    # the record's own GEMM rate, else the run's (results written before records had one)
    achieved, rate = r.achieved_flops_per_s, r.matmul_flops_per_s or result.matmul_flops_per_s
    assert achieved is not None, "a measured record"
    assert rate is not None
    return achieved / rate


def format_records_table(result: BenchmarkResult) -> str:
    """Every case: median time, IQR, FLOPs, achieved FLOP/s (and % of the matmul rate), memory."""
    header = [
        "scope", "pass", "method", "n", "k", "w", "median ms", "IQR ms", "samples", "GFLOP", "GFLOP/s",
        "% matmul", "FLOP limit", "mem delta MiB", "peak RSS MiB", "note",
    ]  # fmt: skip
    rows = []
    for r in result.records:
        # measured (time_median_s set): the quartiles and the achieved rate are set with it
        median, q1, q3, achieved = r.time_median_s, r.time_q1_s, r.time_q3_s, r.achieved_flops_per_s
        rows.append([
            r.scope, r.pass_type, r.method, str(r.n), "" if r.k is None else str(r.k), record_window_text(r),
            f"{median * 1e3:.1f}" if median is not None else "",
            f"{(q3 - q1) * 1e3:.1f}" if q1 is not None and q3 is not None else "",
            str(r.samples) if median is not None else "",
            f"{r.flops / 1e9:.1f}",
            f"{achieved / 1e9:.1f}" if achieved is not None else "",
            f"{matmul_share(r, result):.0%}" if achieved is not None else "",
            f"{flop_limit(r):.2f}x" if r.method not in FULL_METHODS else "",
            _mib(r.memory_delta_bytes), _mib(r.peak_memory_bytes), r.skipped or "",
        ])  # fmt: skip
    title = (
        "**All cases** (w = the local window of a Linformer method, none: no window; FLOP limit = "
        "FLOPs of full attention / FLOPs of the method: the speed-up a FLOP-bound machine would show; "
        "% matmul = achieved FLOP/s / the rate of the reference GEMM sampled in the rounds that timed the case)"
    )
    return title + "\n\n" + markdown_table(header, rows)


def flop_limit(r: BenchmarkRecord) -> float:
    """FLOPs of full attention at the same scope, pass and n, divided by the FLOPs of `r`."""
    scope, pass_type = (
        checked_choice("scope", r.scope, SCOPES),
        checked_choice("pass_type", r.pass_type, PASS_TYPES),
    )
    full = case_flops(
        "full-sdpa", scope, pass_type, batch=r.batch_size, n=r.n, k=None, hidden=r.hidden_size,
        layers=r.num_layers, intermediate=r.intermediate_size,
    )  # fmt: skip
    return full / r.flops


def write_report(result: BenchmarkResult, output_dir: str | Path, *, plot: bool = True) -> dict[str, Path]:
    """Write benchmark.json, benchmark.md and (with matplotlib) the PNG plot; return their paths."""
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"json": out / "benchmark.json", "markdown": out / "benchmark.md"}
    paths["json"].write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    paths["markdown"].write_text(format_report(result))
    if plot:
        from linformer_kit.bench.plot import plot_result

        paths["plot"] = plot_result(
            result, out / f"{result.config['device']}_{_short(result.config['dtype'])}.png"
        )
    return paths


def load_result(path: str | Path) -> BenchmarkResult:
    """Read a benchmark.json back (to re-render its tables or plot)."""
    data = json.loads(Path(path).read_text())
    records = [BenchmarkRecord(**r) for r in data.pop("records")]
    return BenchmarkResult(**data, records=records)


# --- helpers -------------------------------------------------------------------------------------


def _table_keys(result: BenchmarkResult) -> list[tuple[str, str, str]]:
    seen: list[tuple[str, str, str]] = []
    for r in result.records:
        for baseline in (*FULL_METHODS, *PEER_METHODS):
            key = (r.scope, r.pass_type, baseline)
            if key not in seen and any(x.method == baseline for x in result.records):
                seen.append(key)
    return seen


def _speedup(base: BenchmarkRecord | None, r: BenchmarkRecord) -> str:
    if base is None or base.time_median_s is None or r.time_median_s is None:
        return "–"
    return f"{base.time_median_s / r.time_median_s:.2f}x"


def _ratio_cell(base: BenchmarkRecord, r: BenchmarkRecord) -> str:
    """The speed-up, then ' / memory saving' where both memory deltas were measured."""
    cell = _speedup(base, r)
    if cell == "–" or not (base.memory_delta_bytes and r.memory_delta_bytes):
        return cell
    return f"{cell} / {base.memory_delta_bytes / r.memory_delta_bytes:.1f}x"


def _column_order(column: tuple[str, int | None, int | None]) -> tuple[int, int, int]:
    method, k, w = column
    return (METHODS.index(method), k or 0, -1 if w is None else w)


def window_text(w: int | None) -> str:
    """A local window as the report shows it: `16`, or `none` (no window)."""
    return "none" if w is None else str(w)


def record_window_text(r: BenchmarkRecord) -> str:
    """The w column of a record: its Linformer method's window (`none`: no window); blank for full / peers."""
    return window_text(r.local_window) if r.method in LINFORMER_METHODS else ""


def _mib(value: int | None) -> str:
    return "" if value is None else f"{value / MiB:.0f}"


def _short(dtype: object) -> str:
    return {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}.get(str(dtype), str(dtype))


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub Markdown table (public: scripts/cpu/targets.py prints its table with it)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
