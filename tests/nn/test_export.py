"""Export with a dynamic batch and sequence length: one graph for every n up to max_seq_len.

torch.export and ONNX (`torch.onnx.export(..., dynamo=True)`, run in ONNX Runtime), every sharing
mode and projection kind, both `short_inputs` (docs/models.md, "Export"). The exported graph must give
the eager output at n <= k and n > k, at n = max_seq_len, with padding, and for a short sequence
padded into a long batch: with short_inputs="exact" the graph cannot branch on n, so it takes the
one-graph form of nn/short_inputs.py, and these tests are what prove it equals the eager paths.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import PROJECTION_KINDS, SHARING_MODES, LinformerSelfAttention, SequenceProjection
from tests.exported import exported, onnx_runner
from tests.fixtures.batches import length_mask

D, H, N, K = 32, 4, 16, 4
LENGTHS = (2, 3, K, K + 1, 9, N)  # n < k, n = k, just past k, n = max_seq_len (where guards used to break)


class Block(torch.nn.Module):
    """The same attention with short_inputs="exact" and "project" side by side: one export covers both."""

    def __init__(self, sharing: str, kind: str) -> None:
        super().__init__()
        self.projection = SequenceProjection(N, K, kind) if sharing == "layerwise" else None

        def layer(short_inputs: str) -> LinformerSelfAttention:
            return LinformerSelfAttention(
                D, H, N, K, sharing=sharing, projection=kind, shared_projection=self.projection,
                short_inputs=short_inputs,
            )  # fmt: skip

        self.exact, self.project = layer("exact"), layer("project")

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.exact(x, mask), self.project(x, mask)


CASES = [(sharing, "linear") for sharing in SHARING_MODES] + [
    ("headwise", kind) for kind in PROJECTION_KINDS if kind != "linear"
]


def padded(n: int) -> dict[str, torch.Tensor]:
    """x (3, n, D) and its mask: row 0 full, row 1 half padding, row 2 three tokens (a short row at any n)."""
    x = torch.randn(3, n, D)
    mask = length_mask([n, max(1, n // 2), min(n, 3)], n)
    x[~mask] = float("nan")  # pad content must not matter, in the graph either
    return {"x": x, "mask": mask}


def at_real_tokens(outputs: tuple[torch.Tensor, ...], mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The outputs at real positions only: a NaN pad row's own output is NaN in every path."""
    return tuple(output[mask] for output in outputs)


def example_inputs() -> dict[str, torch.Tensor]:
    return {"x": torch.randn(2, 10, D), "mask": torch.ones(2, 10, dtype=torch.bool)}


@pytest.mark.parametrize(("sharing", "kind"), CASES)
def test_export_with_a_dynamic_length_up_to_max_seq_len(sharing: str, kind: str) -> None:
    block = Block(sharing, kind).eval()
    graph = exported(block, example_inputs(), N)
    for n in LENGTHS:
        inputs = padded(n)
        mask = inputs["mask"]
        assert_close(at_real_tokens(graph(**inputs), mask), at_real_tokens(block(**inputs), mask))


@pytest.mark.slow
@pytest.mark.parametrize(("sharing", "kind"), CASES)
def test_onnx_export_runs_in_onnx_runtime(sharing: str, kind: str, tmp_path: Path) -> None:
    block = Block(sharing, kind).eval()
    run = onnx_runner(block, example_inputs(), N, tmp_path / "block.onnx")
    for n in LENGTHS:
        inputs = padded(n)
        mask = inputs["mask"]
        with torch.no_grad():
            assert_close(at_real_tokens(run(**inputs), mask), at_real_tokens(block(**inputs), mask))


@pytest.mark.parametrize("short_inputs", ["exact", "project"])
def test_export_without_a_mask_accepts_the_full_length(short_inputs: str) -> None:
    layer = LinformerSelfAttention(D, H, N, K, sharing="kv", short_inputs=short_inputs).eval()
    graph = exported(layer, {"x": torch.randn(2, 5, D)}, N)  # b = 1 would pin the batch
    for n in (3, N):
        x = torch.randn(3, n, D)
        assert_close(graph(x=x), layer(x))
