"""The peak memory of one call of scope "student", measured in a fresh process.

    measure_memory  (peak RSS, RSS after building) of one call described by a spec, in a fresh process
    memory_main     that process: builds the model (or ONNX Runtime session) and the batch as the spec
                    says, reads its RSS, runs one call, prints its peak RSS (bench/memory.py's measure)

A fresh process, because memory freed by an earlier model is not reliably returned to the system: the peak
of one call in a process that ran others would hold theirs. The spec is a runner's `memory_spec` (which
model, at which length, under which runtime) with the inputs' n, batch and chunking (bench/student_timing.py).

Run as `python -m linformer_kit.bench.student_memory '<memory spec json>'`: one memory measurement.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any, cast

import torch

from linformer_kit.bench.memory import current_rss, peak_rss, run_memory_subprocess
from linformer_kit.bench.student_inputs import chunked, ends_of, text_ids, token_rows, whole
from linformer_kit.bench.student_runtimes import load_encoder, load_tokenizer, onnx_session


def measure_memory(spec: dict[str, Any], timeout_s: float) -> tuple[int, int]:
    """(peak RSS, RSS after building) in bytes of one call described by `spec`, in a fresh process."""
    cmd = [sys.executable, "-m", "linformer_kit.bench.student_memory", json.dumps(spec)]
    report = run_memory_subprocess(cmd, timeout_s, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
    return int(report["peak_bytes"]), int(report["rss_after_build"])


def memory_main(spec: dict[str, Any]) -> None:
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
    memory_main(json.loads(sys.argv[1]))
