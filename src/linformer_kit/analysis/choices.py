"""The spectrum's typed choices, apart from the code that computes with them (which imports torch).

`SpectrumConfig` (and so `linformer spectrum --help`) needs only these names; `curves` and `svd`
import them from here.
"""

from __future__ import annotations

from typing import Literal

Normalization = Literal["singular", "energy"]
HeadReduction = Literal["max", "mean"]
SvdMethod = Literal["exact", "randomized"]
