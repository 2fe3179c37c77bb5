"""What `linformer spectrum` analyses and how: one typed config, validated once, before any model loads.

`SpectrumConfig` checks its options, the output directory, the device, the text file, and (for a
local model directory) the model's files and config.json. `linformer spectrum`'s flags are its
fields (`cli/spectrum.py`); the help text of each is its `metadata["help"]`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from linformer_kit.analysis.choices import HeadReduction, Normalization, SvdMethod
from linformer_kit.data_files import check_data_file, file_format, is_local

DType = Literal["float32", "float64"]


@dataclass
class SpectrumConfig:
    """What to analyse and how. Validated once, here, before any model is loaded: the options, the
    output directory, the device, the text file, and (for a local model directory) its files and its
    config.json (a Linformer with projected_length=k has no n x n maps; seq_len and index must fit)."""

    model: str = field(
        default="",
        metadata={"help": "model directory or Hub name (loading only; unused by `compute_spectrum`)"},
    )
    text_file: str = field(
        default="",
        metadata={
            "help": 'text to cut into inputs: .txt, or .jsonl / .json records with a "text" field (each may '
            "be .gz), as pretrain reads",
            "aliases": ["--text"],
            "metavar": "FILE",
        },
    )
    output_dir: str | None = field(
        default=None,
        metadata={
            "help": "where `write_spectrum_report` goes (spectrum.json and two PNGs); checked here when given",
            "metavar": "DIR",
        },
    )
    seq_len: int | None = field(
        default=None,
        metadata={"help": "tokens per input, special tokens included; None = the model's maximum"},
    )
    max_inputs: int = field(
        default=64, metadata={"help": "bounds the work: at most this many chunks of the text"}
    )
    batch_size: int = field(default=8, metadata={"help": "inputs per forward pass"})
    keep: float = field(
        default=0.9,
        metadata={"help": "share of the spectrum each layer's k must keep (a layer with a head that copies a "
                  "neighbour is recommended full attention instead)"},
    )  # fmt: skip
    window_mass: float = field(
        default=0.5,
        metadata={"help": "share of a local head's attention its layer's window must hold (local_window: the "
                  "smallest of 1, 4, 16, 64 that holds it for every local head; SHIFT_MASS's 0.5, docs/spectrum.md)"},
    )  # fmt: skip
    global_mass: float = field(
        default=0.1,
        metadata={"help": "share of attention on the first token (position 0) that makes a head ask for "
                  "global_tokens=1 (51 times uniform attention's 1/n at n = 512)"},
    )  # fmt: skip
    index: int | None = field(
        default=None,
        metadata={
            "help": "heatmap at c(index), 1-based; None: the paper's 128th (of 512), or a quarter of a "
            "shorter curve"
        },
    )
    thresholds: tuple[float, ...] = field(
        default=(0.9, 0.99), metadata={"help": "effective rank reported at each", "metavar": "T"}
    )
    normalization: Normalization = field(
        default="singular", metadata={"help": "c(i) from the singular values σ, or from σ² ('energy')"}
    )
    method: SvdMethod = field(
        default="exact", metadata={"help": "all n singular values, or the top --rank ('randomized')"}
    )
    rank: int = field(
        default=128, metadata={"help": "top singular values estimated when method='randomized'"}
    )
    head_reduction: HeadReduction = field(
        default="max",
        metadata={
            "help": "k per layer from the worst head ('max') or the head average (a head that copies "
            "a neighbour makes its layer full attention either way)"
        },
    )
    dtype: DType = field(
        default="float32", metadata={"help": "precision of the SVD (attention maps are cast to it)"}
    )
    device: str | None = field(
        default=None, metadata={"help": "cpu, cuda, cuda:1, mps, ...; None = cuda if available else cpu"}
    )
    seed: int = field(default=0, metadata={"help": "for the randomized method's Gaussian test matrices"})
    progress: bool = field(default=True, metadata={"help": "show a progress bar"})

    def __post_init__(self) -> None:
        if self.output_dir is not None:
            from linformer_kit.output_dir import check_output_dir

            check_output_dir(self.output_dir)
        self._check_options()
        if self.device is not None:
            check_device(self.device)
        if self.text_file:
            check_text_file(self.text_file)
        if self.model and is_local(self.model):
            self._check_model_dir()

    def _check_options(self) -> None:
        self.thresholds = tuple(float(t) for t in self.thresholds)
        for name in ("keep", "window_mass", "global_mass"):
            if not 0.0 < getattr(self, name) <= 1.0:  # also refuses NaN
                raise ValueError(f"{name}={getattr(self, name)} must be in (0, 1]")
        for t in self.thresholds:
            if not 0.0 < t <= 1.0:
                raise ValueError(f"threshold {t} must be in (0, 1]")
        if self.index is not None and self.index < 1:
            raise ValueError(f"index={self.index} must be >= 1 (1-based, like 'the 128th singular value')")
        if self.seq_len is not None and self.seq_len < 2:
            raise ValueError(f"seq_len={self.seq_len} must be >= 2")
        for name in ("max_inputs", "batch_size", "rank"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be >= 1")
        for name, choices in (
            ("normalization", ("singular", "energy")),
            ("method", ("exact", "randomized")),
            ("head_reduction", ("max", "mean")),
            ("dtype", ("float32", "float64")),
        ):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name}={getattr(self, name)!r} must be one of {choices}")

    def _check_model_dir(self) -> None:
        """From the files alone: weights, tokenizer, full attention, and the lengths that fit."""
        from linformer_kit.models.folder_checks import check_model_dir, read_config_json

        folder = check_model_dir(self.model, "model", tokenizer=True)
        config = read_config_json(folder)
        ks = config.get("projected_length")
        if config["model_type"] == "linformer" and any(
            k is not None for k in (ks if isinstance(ks, list) else [ks])
        ):
            raise ValueError(
                f"model: {self.model!r} is a Linformer with projected_length={ks}: its attention maps are "
                "(n x k), and the spectrum needs the full (n x n) maps; use a full-attention model "
                "(projected_length=None, e.g. `linformer pretrain --projected-length none`)"
            )
        limit = _longest_input(config, folder)
        seq_len = self.seq_len or limit
        if seq_len > limit:
            raise ValueError(f"seq_len={seq_len} exceeds the model's longest input {limit}")
        width = seq_len if self.method == "exact" else min(self.rank, seq_len)
        if self.index is not None and self.index > width:
            raise ValueError(
                f"index={self.index} exceeds the curve length {width} (seq_len={seq_len}, "
                f"method={self.method!r}); pass a smaller --index"
            )


def default_index(width: int) -> int:
    """The paper's c(128) of 512; on a shorter curve the same place, a quarter of the way."""
    return min(128, max(1, width // 4))


def check_device(device: str) -> None:
    """ValueError unless `device` names a torch device that is there."""
    import torch  # here, not at the top: the config (and `linformer spectrum --help`) loads without it

    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device={device!r} is not a torch device (cpu, cuda, cuda:1, mps, ...)") from None
    if parsed.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            f"device={device!r}: CUDA is not available here (torch.cuda.is_available() is False)"
        )
    if parsed.type == "cuda" and parsed.index is not None and parsed.index >= torch.cuda.device_count():
        raise ValueError(f"device={device!r}: there are {torch.cuda.device_count()} CUDA devices")
    if parsed.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device={device!r}: MPS is not available here")


def check_text_file(path: str) -> None:
    """A readable, non-blank UTF-8 text file, or JSON records with a "text" field (what pretrain reads)."""
    file = Path(path)
    if file.is_dir():
        raise ValueError(
            f"text_file: {path!r} is a directory; give a text file (.txt, .jsonl, .json, or .gz)"
        )
    if not file.is_file():
        raise ValueError(f"text_file: no such file: {path!r}")
    if file_format(file) in ("csv", "tsv"):
        raise ValueError(
            f"text_file: {path!r} is a table; spectrum reads text: .txt, or .jsonl / .json records with a "
            '"text" field (each may be .gz)'
        )
    records = file_format(file) != "text"
    check_data_file(file, "text_file", ("text",) if records else ())
    if not records and not file.read_text(encoding="utf-8").strip():
        raise ValueError(f"text_file: {path!r} holds no text (only whitespace)")


def _longest_input(config: dict, folder: Path) -> int:
    """The longest input from config.json (and tokenizer_config.json's model_max_length if smaller)."""
    from linformer_kit.models.config_rules import longest_input

    limit = longest_input(config)
    try:
        tokenizer_limit = json.loads((folder / "tokenizer_config.json").read_text()).get("model_max_length")
    except (OSError, ValueError):
        tokenizer_limit = None
    if isinstance(tokenizer_limit, int) and 0 < tokenizer_limit < limit:
        limit = tokenizer_limit
    return limit
