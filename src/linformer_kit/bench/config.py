"""What a benchmark sweep measures: one typed config, validated once, and the named presets.

A sweep is the product  n x k x method x scope x pass.  Full-attention methods do not depend on k and
are measured once per n; peers (other PyPI Linformers) are measured at layer scope only; a training
step (pass "train_step") is measured at encoder scope only.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal, get_args

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
    "layer", "encoder"
]  # one attention layer, or an encoder of num_layers blocks (attention + FFN)
SCOPES: tuple[str, ...] = get_args(Scope)
PassType = Literal[
    "forward",  # under torch.inference_mode
    "forward+backward",  # backpropagate out.sum() into every parameter
    "train_step",  # forward + backward + AdamW step of the encoder, mixed precision for bf16/fp16
]
PASS_TYPES: tuple[str, ...] = get_args(PassType)
Device = Literal["cpu", "cuda"]
DEVICES: tuple[str, ...] = get_args(Device)
DType = Literal["float32", "bfloat16", "float16"]
DTYPES: tuple[str, ...] = get_args(DType)
Preset = Literal["quick", "full", "training"]
PRESETS: tuple[str, ...] = get_args(Preset)


@dataclass(frozen=True)
class BenchmarkConfig:
    """One sweep. Defaults are the paper's base shape (d=768, 12 heads, 12 layers, FFN 3072), batch 1."""

    seq_lens: tuple[int, ...] = (1024, 2048, 4096)
    projected_lengths: tuple[int, ...] = (256,)
    methods: tuple[Method, ...] = ("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager")
    scopes: tuple[Scope, ...] = ("layer",)
    passes: tuple[PassType, ...] = ("forward",)
    device: Device = "cpu"
    dtype: DType = "float32"
    batch_size: int = 1
    hidden_size: int = 768
    num_heads: int = 12
    num_layers: int = 12  # encoder scope only
    intermediate_size: int = 3072  # encoder scope only
    threads: int | None = None  # torch.set_num_threads (CPU); None keeps torch's default
    rounds: int = 5  # timed rounds; each round visits every method of one (scope, pass, n) in turn
    warmup: int = 1  # untimed calls per case before the first round
    min_time_s: float = 0.02  # a timed sample repeats a fast call until it lasts this long
    time_cap_s: float = 60.0  # predicted (warmup + 1) calls longer than this: the case is skipped
    measure_memory: bool = True  # CPU: fresh subprocess per case; CUDA: max_memory_allocated
    matmul_size: int = 2048  # the (m x m) @ (m x m) GEMM whose rate achieved FLOP/s is compared to
    output_dir: str | None = None  # where the report goes (`write_report`); checked before any measuring

    def __post_init__(self) -> None:
        _validate(self)

    def replace(self, **changes: object) -> BenchmarkConfig:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def preset(name: Preset) -> BenchmarkConfig:
    """The named sweeps of `linformer benchmark --preset NAME` (see docs/benchmarks.md)."""
    if name == "quick":  # about a minute on a 2-core laptop CPU
        return BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096),
            projected_lengths=(256,),
            methods=("linformer-headwise", "full-sdpa", "full-eager"),
            rounds=3,
            time_cap_s=10.0,
        )
    if name == "full":  # the docs/benchmarks.md sweep (one dtype per run: add --dtype bfloat16 for bf16)
        return BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096, 8192, 16384),
            projected_lengths=(128, 256),
            methods=("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager", "peer-linformer"),
            scopes=("layer",),
            passes=("forward",),
            rounds=3,
            time_cap_s=45.0,
        )
    if name == "training":  # encoder training steps at the `linformer pretrain --preset small` shape
        return BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096),
            projected_lengths=(128,),
            methods=("linformer-headwise", "full-sdpa"),
            scopes=("encoder",),
            passes=("train_step",),
            batch_size=2,
            hidden_size=256,
            num_heads=4,
            num_layers=4,
            intermediate_size=1024,
            rounds=3,
            time_cap_s=45.0,
        )
    raise ValueError(f"preset must be one of {PRESETS}, got {name!r}")


def _validate(c: BenchmarkConfig) -> None:
    if c.output_dir is not None:  # first: a report that cannot be written must not cost a sweep
        check_output_dir(c.output_dir)
    _check_choices("methods", c.methods, METHODS)
    _check_choices("scopes", c.scopes, SCOPES)
    _check_choices("passes", c.passes, PASS_TYPES)
    if "train_step" in c.passes and c.scopes != ("encoder",):
        # an optimizer step of one attention layer is not a training step of any model
        raise ValueError(f"passes 'train_step' needs scopes ('encoder',) only, got scopes {c.scopes}")
    if c.device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {c.device!r}")
    if c.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {c.dtype!r}")
    if not c.seq_lens or not all(_is_int(n) and n >= 1 for n in c.seq_lens):
        raise ValueError(f"seq_lens must be a non-empty list of lengths >= 1, got {c.seq_lens}")
    needs_k = any(m.startswith(("linformer-", "peer-")) for m in c.methods)
    if needs_k and (not c.projected_lengths or not all(_is_int(k) and k >= 1 for k in c.projected_lengths)):
        raise ValueError(f"projected_lengths must be a non-empty list of k >= 1, got {c.projected_lengths}")
    if needs_k and min(c.projected_lengths) > max(c.seq_lens):
        raise ValueError(
            f"projected_lengths {c.projected_lengths} are all above the longest seq_len {max(c.seq_lens)}: "
            "no Linformer case could run (k must be <= n)"
        )
    for name in (
        "hidden_size",
        "num_heads",
        "batch_size",
        "num_layers",
        "intermediate_size",
        "rounds",
        "matmul_size",
    ):
        if not _is_int(getattr(c, name)) or getattr(c, name) < 1:
            raise ValueError(f"{name} must be an int >= 1, got {getattr(c, name)!r}")
    if c.hidden_size % c.num_heads:
        raise ValueError(f"hidden_size={c.hidden_size} must be divisible by num_heads={c.num_heads}")
    if not _is_int(c.warmup) or c.warmup < 0:
        raise ValueError(f"warmup must be an int >= 0, got {c.warmup!r}")
    if c.threads is not None and (not _is_int(c.threads) or c.threads < 1):
        raise ValueError(f"threads must be >= 1 or None, got {c.threads!r}")
    if not (math.isfinite(c.time_cap_s) and c.time_cap_s > 0):
        raise ValueError(f"time_cap_s must be a finite number of seconds > 0, got {c.time_cap_s}")
    if not (math.isfinite(c.min_time_s) and c.min_time_s >= 0):
        raise ValueError(f"min_time_s must be a finite number of seconds >= 0, got {c.min_time_s}")
    if c.device == "cuda" and not torch_cuda_available():
        raise ValueError("device='cuda' was requested but torch.cuda.is_available() is False")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def torch_cuda_available() -> bool:
    import torch  # here, not at the top: `linformer benchmark --help` stays fast

    return torch.cuda.is_available()


def _check_choices(name: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not values:
        raise ValueError(f"{name} must not be empty; choose from {allowed}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {name} {bad}; choose from {allowed}")
