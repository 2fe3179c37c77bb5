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
from types import ModuleType

__version__ = "0.1.0"
SUBPACKAGES = ("analysis", "bench", "cli", "models", "nn", "train")


def __getattr__(name: str) -> ModuleType:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
