"""How scope "student" loads, exports and calls a model under each runtime.

    load_tokenizer, load_encoder  the original's tokenizer; an encoder at the length it reads (`encoder_at`)
    TorchRunner      eager PyTorch: each model loaded at the length it reads, kept while an n needs it
    CompiledRunner   TorchRunner under `torch.compile(dynamic=False)`: one compile per shape
    OnnxRunner       ONNX Runtime: each model exported at each length it reads, run by the CPU provider
    open_runner      the runner of a runtime, or None with a note when its packages are not installed
    without_exact_length, export_onnx, onnx_session   the export and the session OnnxRunner uses

A runner's `prepare` loads (or exports) what an n needs, `step` is one call of a model on a batch (what is
timed), `memory_spec` tells the memory subprocess (bench/student_memory.py) how to build the same call.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import tempfile
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import torch

from linformer_kit.bench.config import BenchmarkConfig
from linformer_kit.bench.student_config import Model, entries, max_rows
from linformer_kit.bench.student_inputs import Ends, token_rows, whole

logger = logging.getLogger(__name__)
Inputs = dict[str, torch.Tensor]


def load_tokenizer(path: str) -> Any:
    """The tokenizer saved at `path` (the original's: every model reads its ids)."""
    from transformers import AutoTokenizer

    # the inputs are cut to n by us: no length limit (and no warning) when tokenizing a long text
    return AutoTokenizer.from_pretrained(path, model_max_length=10**9)


def load_encoder(path: str, length: int, dtype: str = "float32") -> torch.nn.Module:
    """The encoder at `path` reading `length` tokens (`encoder_at`: extended above its longest input), eval mode."""
    import linformer_kit.models  # noqa: F401  (registers model_type "linformer")

    # the study's helper, which imports models/ only; read here as `linformer longdocs` reads it
    from linformer_kit.models.extend import encoder_at

    return encoder_at(path, length).to(getattr(torch, dtype))


# --- the runners -------------------------------------------------------------------------------------------


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
                max_rows(self.config),
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
def open_runner(
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
