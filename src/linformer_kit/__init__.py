"""linformer-kit: Linformer self-attention (Wang et al. 2020) for PyTorch and Hugging Face.

Importing `linformer_kit` imports neither torch nor transformers; the subpackages (`nn`, `models`,
`train`, `bench`, `analysis`, `cli`) load on first use. `linformer_kit.nn` needs torch only.
Importing `linformer_kit.models` (or anything under it) registers `model_type="linformer"` with
transformers' `Auto*` classes; nothing else does:

    import linformer_kit.models  # noqa: F401  (registers the Auto classes)
    model = AutoModelForMaskedLM.from_pretrained(saved_dir)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

__version__ = "0.1.0"
SUBPACKAGES = ("analysis", "bench", "cli", "models", "nn", "train")


def __getattr__(name: str) -> ModuleType:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def lazy_attributes(package: str, modules: dict[str, str]) -> Callable[[str], object]:
    """A package's module `__getattr__`: `name` from its submodule `modules[name]`, imported on first use
    (so that a command's `--help` does not import torch)."""

    def __getattr__(name: str) -> object:
        if name in modules:
            return getattr(importlib.import_module(f"{package}.{modules[name]}"), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
