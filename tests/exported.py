"""Round trips through torch.export and ONNX Runtime with a dynamic batch and sequence length.

Both take the inputs as keyword arguments (their names become the ONNX input names) and return a
function that runs the exported graph on new keyword inputs. `onnx_runner` skips the test cleanly
when onnxruntime or onnxscript (which `torch.onnx.export(..., dynamo=True)` needs) is not installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch.export import Dim, export


def dynamic_shapes(inputs: dict[str, torch.Tensor], n_max: int) -> dict[str, dict[int, Dim]]:
    """Every input (b, n, ...) gets batch and length dimensions: 1 <= b <= 8, 2 <= n <= n_max."""
    batch = Dim("batch", min=1, max=8)
    seq = Dim("seq", min=2, max=n_max)  # torch.export treats 0 and 1 as special sizes
    return {name: {0: batch, 1: seq} for name in inputs}


def exported(module: torch.nn.Module, inputs: dict[str, torch.Tensor], n_max: int) -> Callable[..., object]:
    """`torch.export.export` of `module` traced on `inputs`, as a callable module.

    Trace on b >= 2 and n >= 2: torch.export pins a dimension traced at size 0 or 1.
    """
    program = export(module, (), inputs, dynamic_shapes=dynamic_shapes(inputs, n_max))
    return program.module()


def onnx_runner(
    module: torch.nn.Module, inputs: dict[str, torch.Tensor], n_max: int, path: Path
) -> Callable[..., list[torch.Tensor]]:
    """`torch.onnx.export(..., dynamo=True)` of `module` saved to `path`, run by ONNX Runtime on CPU.

    The returned function takes tensors by input name and returns the graph's outputs, flattened
    (a model output's `None` fields are left out: logits first).
    """
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    program = torch.onnx.export(
        module, (), kwargs=inputs, dynamic_shapes=dynamic_shapes(inputs, n_max), dynamo=True, verbose=False
    )
    program.save(str(path))
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def run(**feeds: torch.Tensor) -> list[torch.Tensor]:
        outputs = session.run(None, {name: tensor.numpy() for name, tensor in feeds.items()})
        return [torch.from_numpy(output) for output in outputs]

    return run
