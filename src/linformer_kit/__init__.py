"""linformer-kit: Linformer self-attention (Wang et al. 2020) for PyTorch and Hugging Face.

`linformer_kit.nn` needs torch only, and importing it never imports transformers. Importing
`linformer_kit` registers the Linformer models with transformers' `Auto*` classes
(`model_type="linformer"`) without importing transformers either: at once when transformers is
already imported, otherwise right after its first import. The subpackages (`nn`, `models`, `train`,
`bench`, `analysis`, `cli`) load on first use.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
from contextlib import suppress
from types import ModuleType

__version__ = "0.1.0"
SUBPACKAGES = ("analysis", "bench", "cli", "models", "nn", "train")


def __getattr__(name: str) -> ModuleType:
    if name in SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _register_models() -> None:
    # An incompatible transformers must not break the caller's import: the models stay unregistered.
    with suppress(ImportError):
        importlib.import_module(f"{__name__}.models")  # registers with the Auto classes on import


class _RegisterAfterTransformers(importlib.abc.MetaPathFinder):
    """Finds `transformers` through the other finders and registers the models once it has run."""

    def find_spec(self, name, path=None, target=None):
        if name != "transformers":
            return None
        sys.meta_path.remove(self)  # once, and never in the way of the real lookup below
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader: importlib.abc.Loader) -> None:
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__.loader = module.__loader__ = self.loader  # transformers sees its own loader
        self.loader.exec_module(module)
        _register_models()


if sys.modules.get("transformers") is not None:
    _register_models()
elif not any(isinstance(finder, _RegisterAfterTransformers) for finder in sys.meta_path):
    sys.meta_path.insert(0, _RegisterAfterTransformers())
