"""linformer-kit: Linformer self-attention (Wang et al. 2020) for PyTorch and Hugging Face.

`linformer_kit.nn` needs torch only. When `transformers` is installed, importing `linformer_kit`
also registers the Linformer models with the `Auto*` classes (`model_type="linformer"`).
"""

from contextlib import suppress
from importlib.util import find_spec

__version__ = "0.1.0"

if find_spec("transformers") is not None:  # register LinformerConfig & co. with the Auto classes
    # An incompatible transformers must not break `linformer_kit.nn`, which needs torch only.
    with suppress(ImportError):
        from linformer_kit import models as _models  # noqa: F401
