"""What a benchmark sweep measures: one typed config, validated once (its named presets: bench/presets.py).

A sweep is the product  n x k x w x method x scope x pass.  Full-attention methods do not depend on k
or w and are measured once per n; the local window w (`local_windows`, None: none) multiplies the
Linformer methods only, so peers (other PyPI Linformers) are measured once per k, at layer scope only;
a training step (pass "train_step") is measured at encoder scope only.

Scope "student" (`--preset student`, bench/student.py) measures saved models instead: each of
`students` (distilled Linformers) against `original` (the encoder they replace) at every n, under each
of `runtimes` (and, with `encode_texts`, through `SentenceTransformer.encode`: bench/student_encode.py); it
shares the sweep's n, rounds, warm-up, threads, time cap, memory switch and output folder, and the synthetic
model's fields (methods, k, w, sizes) do not apply to it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from linformer_kit.bench.option_checks import check_choices, check_local_windows, is_int, parse_local_window
from linformer_kit.bench.student_options import STUDENT_FIELDS, check_student
from linformer_kit.output_dir import check_output_dir

Method = Literal[
    "linformer-none",  # E_i, F_i per head (paper order)
    "linformer-headwise",  # E, F per layer (fast order)
    "linformer-kv",  # E = F per layer (fast order, one E X)
    "linformer-layerwise",  # one E for every layer (fast order, one E X)
    "full-sdpa",  # full attention through torch's scaled_dot_product_attention (memory-linear kernels)
    "full-eager",  # full attention with an explicit (n x n) softmax: the paper's baseline
    "peer-linformer",  # PyPI `linformer` (lucidrains) LinformerSelfAttention
    "peer-linformer-pytorch",  # PyPI `linformer-pytorch` (tatp22) MHAttention, headwise sharing
]
METHODS: tuple[str, ...] = get_args(Method)
LINFORMER_METHODS: tuple[str, ...] = tuple(m for m in METHODS if m.startswith("linformer-"))
FULL_METHODS: tuple[str, ...] = ("full-sdpa", "full-eager")
PEER_METHODS: tuple[str, ...] = ("peer-linformer", "peer-linformer-pytorch")

Scope = Literal[
    "layer",  # one attention layer
    "encoder",  # an encoder of num_layers blocks (attention + FFN)
    "student",  # saved students against their original (bench/student.py): texts per second, memory
]
SCOPES: tuple[Scope, ...] = get_args(Scope)
PassType = Literal[
    "forward",  # under torch.inference_mode
    "forward+backward",  # backpropagate out.sum() into every parameter
    "train_step",  # forward + backward + AdamW step of the encoder, mixed precision for bf16/fp16
]
PASS_TYPES: tuple[PassType, ...] = get_args(PassType)
Device = Literal["cpu", "cuda"]
DEVICES: tuple[str, ...] = get_args(Device)
DType = Literal["float32", "bfloat16", "float16"]
DTYPES: tuple[str, ...] = get_args(DType)
Runtime = Literal[
    "torch", "torch-compile", "onnxruntime"
]  # scope student: eager PyTorch, torch.compile, ONNX Runtime
RUNTIMES: tuple[str, ...] = get_args(Runtime)


@dataclass(frozen=True)
class BenchmarkConfig:
    """One sweep. Defaults are the paper's base shape (d=768, 12 heads, 12 layers, FFN 3072), batch 1."""

    seq_lens: tuple[int, ...] = field(
        default=(1024, 2048, 4096), metadata={"help": "sequence lengths n", "metavar": "N"}
    )
    projected_lengths: tuple[int, ...] = field(
        default=(256,), metadata={"help": "projected lengths k (Linformer and peer methods)", "metavar": "K"}
    )
    local_windows: tuple[int | None, ...] = field(
        default=(None,),
        metadata={
            "help": "local windows w of the Linformer methods (none: no window, the paper's layer); each "
            "linformer-* case is measured at each w, full and peer methods once",
            "metavar": "W",
        },
    )
    methods: tuple[Method, ...] = field(
        default=("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager"),
        metadata={"help": f"from {', '.join(METHODS)}", "metavar": "METHOD"},
    )
    scopes: tuple[Scope, ...] = field(
        default=("layer",), metadata={"help": "one attention layer and/or the encoder stack"}
    )
    passes: tuple[PassType, ...] = field(
        default=("forward",), metadata={"help": "train_step: forward + backward + AdamW (encoder scope)"}
    )
    device: Device = field(default="cpu", metadata={"help": "where to measure"})
    dtype: DType = field(
        default="float32", metadata={"help": "one dtype per run; every method is cast to it"}
    )
    batch_size: int = field(default=1, metadata={"help": "sequences per call"})
    hidden_size: int = field(default=768, metadata={"help": "model dim D"})
    num_heads: int = field(default=12, metadata={"help": "attention heads"})
    num_layers: int = field(default=12, metadata={"help": "encoder blocks (encoder scope only)"})
    intermediate_size: int = field(default=3072, metadata={"help": "encoder FFN width (encoder scope only)"})
    threads: int | None = field(
        default=None,
        metadata={"help": "torch CPU threads (torch.set_num_threads); not given: torch's default"},
    )
    rounds: int = field(
        default=5, metadata={"help": "timed rounds; each round visits every method of one (scope, pass, n)"}
    )
    warmup: int = field(default=1, metadata={"help": "untimed calls per case before the first round"})
    min_time_s: float = field(
        default=0.02, metadata={"help": "a timed sample repeats a fast call until it lasts this long"}
    )
    time_cap_s: float = field(
        default=60.0,
        metadata={"help": "skip a case whose predicted (warmup + 1) calls take longer", "metavar": "SECONDS"},
    )
    measure_memory: bool = field(
        default=True,
        metadata={"help": "peak memory (CPU: a fresh subprocess per case; CUDA: max_memory_allocated)"},
    )
    matmul_size: int = field(
        default=2048, metadata={"help": "the (m x m) @ (m x m) GEMM whose FLOP/s rate cases are compared to"}
    )
    students: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "scope student: the saved students to measure, each DIR or NAME=DIR (a Linformer folder, "
            "e.g. written by `linformer distill`; NAME labels it, default the folder's name); --student DIR "
            "adds one",
            "metavar": "[NAME=]DIR",
        },
    )
    original: str | None = field(
        default=None,
        metadata={
            "help": "scope student: the encoder the students replace (a BERT / RoBERTa / sentence-transformers "
            "folder); its tokenizer makes every input",
            "metavar": "DIR",
        },
    )
    runtimes: tuple[Runtime, ...] = field(
        default=("torch",),
        metadata={
            "help": "scope student: torch (eager), torch-compile (each model under torch.compile, compiled in "
            "the warm-up; the students compile whole, no graph break), and/or onnxruntime (each model exported by "
            "torch.onnx.export(dynamo=True) with a dynamic batch and length, run in ONNX Runtime on the CPU)"
        },
    )
    chunk_length: int = field(
        default=512,
        metadata={
            "help": "scope student: at n above it, the original also reads each text as ceil(n / chunk_length) "
            "chunks of this many tokens in one batch (at most the original's longest input)",
            "metavar": "N",
        },
    )
    tokens_per_batch: int | None = field(
        default=None,
        metadata={
            "help": "scope student: each n is also measured at the batch a user encodes with, tokens_per_batch "
            "// n texts (at least 1; 4096: 32 at n=128, 8 at 512, 1 at 4096), beside batch_size",
            "metavar": "TOKENS",
        },
    )
    text_file: str | None = field(
        default=None,
        metadata={
            "help": "scope student: a .txt / .jsonl / .json file (.gz too; JSON records' `text`) whose text the "
            "inputs are cut from; default: a built-in English text, repeated",
            "metavar": "FILE",
        },
    )
    encode_texts: int = field(
        default=0,
        metadata={
            "help": "scope student: also time each student through `SentenceTransformer.encode` at batch 32 on this "
            "many texts of mixed lengths (128 tokens to the largest seq_len), against the original's `encode` of "
            "the same texts as chunk_length-token chunks averaged per text (both sentence-transformers folders; "
            "bench/student_encode.py); 0: not timed",
            "metavar": "TEXTS",
        },
    )
    output_dir: str | None = field(
        default=None,
        metadata={
            "help": "where benchmark.json, benchmark.md and the plot go (scope student: student.json, "
            "student.md); checked before any measuring"
        },
    )

    def __post_init__(self) -> None:
        if isinstance(self.local_windows, (tuple, list)) and any(
            isinstance(w, str) for w in self.local_windows
        ):
            # a config file's `local_windows: [none, 16]` (YAML reads `none` as text): the CLI's words
            windows = tuple(parse_local_window(w) if isinstance(w, str) else w for w in self.local_windows)
            object.__setattr__(self, "local_windows", windows)
        _validate(self)

    def replace(self, **changes: Any) -> BenchmarkConfig:
        return dataclasses.replace(self, **changes)


def _validate(c: BenchmarkConfig) -> None:
    if c.output_dir is not None:  # first: a report that cannot be written must not cost a sweep
        check_output_dir(c.output_dir)
    check_choices("methods", c.methods, METHODS)
    check_choices("scopes", c.scopes, SCOPES)
    check_choices("passes", c.passes, PASS_TYPES)
    check_choices("runtimes", c.runtimes, RUNTIMES)
    student = "student" in c.scopes
    if student:
        check_student(c)
    else:
        given = [name for name in STUDENT_FIELDS if getattr(c, name) not in (None, ())]
        given += ["runtimes"] if c.runtimes != ("torch",) else []
        given += ["encode_texts"] if c.encode_texts != 0 else []
        if given:
            raise ValueError(
                f"{', '.join(given)} are options of scopes ('student',) (--preset student), got scopes {c.scopes}"
            )
    if "train_step" in c.passes and c.scopes != ("encoder",):
        # an optimizer step of one attention layer is not a training step of any model
        raise ValueError(f"passes 'train_step' needs scopes ('encoder',) only, got scopes {c.scopes}")
    if c.device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {c.device!r}")
    if c.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {c.dtype!r}")
    if not c.seq_lens or not all(is_int(n) and n >= 1 for n in c.seq_lens):
        raise ValueError(f"seq_lens must be a non-empty list of lengths >= 1, got {c.seq_lens}")
    needs_k = not student and any(m.startswith(("linformer-", "peer-")) for m in c.methods)
    if needs_k and (not c.projected_lengths or not all(is_int(k) and k >= 1 for k in c.projected_lengths)):
        raise ValueError(f"projected_lengths must be a non-empty list of k >= 1, got {c.projected_lengths}")
    if needs_k and min(c.projected_lengths) > max(c.seq_lens):
        raise ValueError(
            f"projected_lengths {c.projected_lengths} are all above the longest seq_len {max(c.seq_lens)}: "
            "no Linformer case could run (k must be <= n)"
        )
    check_local_windows(c.local_windows)
    for name in (
        "hidden_size",
        "num_heads",
        "batch_size",
        "num_layers",
        "intermediate_size",
        "rounds",
        "matmul_size",
    ):
        if not is_int(getattr(c, name)) or getattr(c, name) < 1:
            raise ValueError(f"{name} must be an int >= 1, got {getattr(c, name)!r}")
    if c.hidden_size % c.num_heads:
        raise ValueError(f"hidden_size={c.hidden_size} must be divisible by num_heads={c.num_heads}")
    if not is_int(c.warmup) or c.warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {c.warmup!r}")
    if c.threads is not None and (not is_int(c.threads) or c.threads < 1):
        raise ValueError(f"threads must be >= 1 or None, got {c.threads!r}")
    if not (math.isfinite(c.time_cap_s) and c.time_cap_s > 0):
        raise ValueError(f"time_cap_s must be a finite number of seconds > 0, got {c.time_cap_s}")
    if not (math.isfinite(c.min_time_s) and c.min_time_s >= 0):
        raise ValueError(f"min_time_s must be a finite number of seconds >= 0, got {c.min_time_s}")
    if c.device == "cuda" and not torch_cuda_available():
        raise ValueError("device='cuda' was requested but torch.cuda.is_available() is False")


def torch_cuda_available() -> bool:
    import torch  # here, not at the top: `linformer benchmark --help` stays fast

    return torch.cuda.is_available()
