"""What the offset and distance masses say about heads: which copy a neighbour, which window holds them.

A head with SHIFT_MASS of its attention on the key at one offset is a shifted identity, full rank,
which no window-mean projection holds below n: it gets a note (`shift_notes`) and its layer is
recommended full attention (`copying_heads`). A local window holds such heads beside the k slots:
`window_reading` gives the local_window per layer and the global_tokens, where a head counts as
local only at OVER_UNIFORM times uniform attention's share. The rules, as analysis/curves.py's
maths reads them, apart from analysis/spectrum.py, which measures the masses.
"""

from __future__ import annotations

import torch

from linformer_kit.analysis.curves import recommend_global_tokens, recommend_local_window
from linformer_kit.analysis.spectrum_config import SpectrumConfig
from linformer_kit.analysis.spectrum_result import OFFSET_RADIUS, WINDOW_RADII

SHIFT_MASS = 0.5  # this much mass on the key at one offset (a shift: full rank): a note, and its layer exact
# a head is local at r only where it holds this many times uniform attention's share (so a window that
# covers most of a short input, where uniform attention already has half its mass, is not called local)
OVER_UNIFORM = 2.0


def copying_heads(mass: torch.Tensor) -> torch.Tensor:
    """(L, h, 2R+1) offset mass -> (L, h) bool: the heads with >= SHIFT_MASS of their attention on one offset."""
    return mass.amax(-1) >= SHIFT_MASS


def shift_notes(mass: torch.Tensor) -> list[str]:
    """A note per head that copies a neighbour (`copying_heads`; 0-based layer and head)."""
    notes = []
    for layer, head in zip(*torch.nonzero(copying_heads(mass), as_tuple=True), strict=True):
        share, at = mass[layer, head].max(-1)
        notes.append(
            f"layer {int(layer)} head {int(head)} puts {float(share):.0%} of its attention on the key at offset "
            f"{int(at) - OFFSET_RADIUS:+d} (key - query): P is near a shifted identity, full rank; a window-mean "
            "projection averages neighbouring keys and values and cannot hold it (recommended: this layer full attention, "
            "or a local window beside k: recommended_local_window)"
        )
    return notes


def window_reading(
    distances: torch.Tensor, firsts: torch.Tensor, uniform: torch.Tensor, config: SpectrumConfig
) -> tuple[list[int | None], int]:
    """(L, h, R) distance mass, (L, h) first-token mass, (R + 1,) uniform's -> (local_window per layer, global_tokens)."""
    window = recommend_local_window(distances, uniform[:-1], WINDOW_RADII, config.window_mass, OVER_UNIFORM)
    global_tokens = recommend_global_tokens(firsts, float(uniform[-1]), config.global_mass, OVER_UNIFORM)
    return window, global_tokens
