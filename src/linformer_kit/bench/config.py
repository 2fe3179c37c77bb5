"""What a benchmark sweep measures: one typed config, validated once, and the named presets.

A sweep is the product  n x k x method x scope x pass.  Full-attention methods do not depend on k and
are measured once per n; peers (other PyPI Linformers) are measured at layer scope only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args

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
PassType = Literal["forward", "forward+backward"]
PASS_TYPES: tuple[str, ...] = get_args(PassType)
Device = Literal["cpu", "cuda"]
DEVICES: tuple[str, ...] = get_args(Device)
DType = Literal["float32", "bfloat16", "float16"]
DTYPES: tuple[str, ...] = get_args(DType)
Preset = Literal["quick", "full", "targets"]
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
    if name == "full":  # the docs/benchmarks.md sweep (the encoder rows come from "targets")
        return BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096, 8192, 16384),
            projected_lengths=(128, 256),
            methods=("linformer-headwise", "linformer-kv", "full-sdpa", "full-eager", "peer-linformer"),
            scopes=("layer",),
            passes=("forward",),
            rounds=3,
            time_cap_s=45.0,
        )
    if name == "targets":  # exactly the rows of the targets
        return BenchmarkConfig(
            seq_lens=(4096, 16384),
            projected_lengths=(256,),
            methods=("linformer-headwise", "linformer-kv", "full-sdpa", "peer-linformer"),
            scopes=("layer", "encoder"),
            passes=("forward",),
            threads=2,
            rounds=3,
            time_cap_s=250.0,
        )
    raise ValueError(f"preset must be one of {PRESETS}, got {name!r}")


def _validate(c: BenchmarkConfig) -> None:
    _check_choices("methods", c.methods, METHODS)
    _check_choices("scopes", c.scopes, SCOPES)
    _check_choices("passes", c.passes, PASS_TYPES)
    if c.device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, got {c.device!r}")
    if c.dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {c.dtype!r}")
    if not c.seq_lens or min(c.seq_lens) < 1:
        raise ValueError(f"seq_lens must be a non-empty list of lengths >= 1, got {c.seq_lens}")
    needs_k = any(m.startswith(("linformer-", "peer-")) for m in c.methods)
    if needs_k and (not c.projected_lengths or min(c.projected_lengths) < 1):
        raise ValueError(f"projected_lengths must be a non-empty list of k >= 1, got {c.projected_lengths}")
    if c.hidden_size < 1 or c.num_heads < 1 or c.hidden_size % c.num_heads:
        raise ValueError(f"hidden_size={c.hidden_size} must be divisible by num_heads={c.num_heads}")
    for name in ("batch_size", "num_layers", "intermediate_size", "rounds", "matmul_size"):
        if getattr(c, name) < 1:
            raise ValueError(f"{name} must be >= 1, got {getattr(c, name)}")
    if c.warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {c.warmup}")
    if c.threads is not None and c.threads < 1:
        raise ValueError(f"threads must be >= 1 or None, got {c.threads}")
    if c.time_cap_s <= 0 or c.min_time_s < 0:
        raise ValueError(f"time_cap_s must be > 0 and min_time_s >= 0, got {c.time_cap_s}, {c.min_time_s}")


def _check_choices(name: str, values: tuple[str, ...], allowed: tuple[str, ...]) -> None:
    if not values:
        raise ValueError(f"{name} must not be empty; choose from {allowed}")
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {name} {bad}; choose from {allowed}")
