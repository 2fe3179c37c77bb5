"""The named sweeps of `linformer benchmark --preset NAME`: each a BenchmarkConfig (bench/config.py)."""

from __future__ import annotations

from typing import Literal, get_args

from linformer_kit.bench.config import BenchmarkConfig

Preset = Literal["quick", "full", "training", "window", "student"]
PRESETS: tuple[Preset, ...] = get_args(Preset)


def preset(name: Preset) -> BenchmarkConfig:
    """The named sweeps of `linformer benchmark --preset NAME` (see docs/benchmarks.md)."""
    if name == "quick":  # about two minutes on a 2-core CPU
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
        from linformer_kit.models.presets import PRESETS as SHAPES  # here: `import bench` stays light

        small = SHAPES["small"]
        return BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096),
            projected_lengths=(128,),
            methods=("linformer-headwise", "full-sdpa"),
            scopes=("encoder",),
            passes=("train_step",),
            batch_size=2,
            hidden_size=small["hidden_size"],
            num_heads=small["num_attention_heads"],
            num_layers=small["num_hidden_layers"],
            intermediate_size=small["intermediate_size"],
            rounds=3,
            time_cap_s=45.0,
        )
    if name == "window":  # the local window's targets (scripts/cpu/targets.py): about 10 minutes on 2 cores
        return BenchmarkConfig(
            seq_lens=(512, 1024, 2048, 4096, 8192, 16384),
            projected_lengths=(128,),
            local_windows=(None, 0, 16, 64),
            methods=("linformer-headwise", "full-sdpa"),
            scopes=("layer",),
            passes=("forward", "forward+backward"),
            rounds=3,
            time_cap_s=10.0,  # a call over 10 s is skipped: full-sdpa's largest n; each w runs at every n
        )
    if name == "student":  # saved students against their original: give --original DIR and --student DIR
        return BenchmarkConfig(
            seq_lens=(128, 256, 512, 4096),
            scopes=("student",),
            runtimes=("torch", "onnxruntime"),
            batch_size=1,
            tokens_per_batch=4096,  # 32 texts at n = 128, 16 at 256, 8 at 512, and batch 1 beside
            encode_texts=64,  # SentenceTransformer.encode: two batches of 32 texts of 128 to 4096 tokens
            rounds=5,
            time_cap_s=60.0,
        )
    raise ValueError(f"preset must be one of {PRESETS}, got {name!r}")
