"""The fast projection order goes through the `key` / `value` modules, so hooks and wrappers work.

The fast order projects the sequence before the key/value linears. It must still *call* those
modules (not read their `.weight`): forward hooks, dynamic quantization and adapters (LoRA, see
tests/models/test_peft.py) replace or wrap them.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.testing import assert_close

from tests.fixtures.blocks import Block, padded_inputs


def _pair(sharing: str) -> tuple[Block, Block]:
    fast = Block(sharing, "auto").double()
    paper = Block(sharing, "paper").double()
    paper.load_state_dict(fast.state_dict())
    return fast, paper


@pytest.mark.parametrize("sharing", ["headwise", "kv", "layerwise"])
def test_forward_hooks_on_key_and_value_fire_and_act_in_the_fast_order(sharing: str) -> None:
    fast, paper = _pair(sharing)
    assert fast.attn.uses_fast_order
    calls: list[str] = []

    def rescale(name: str, factor: float):
        def hook(module: nn.Module, inputs: tuple, output: torch.Tensor) -> torch.Tensor:
            calls.append(name)
            return output * factor  # changes the result, so a bypassed hook shows in the output

        return hook

    for block in (fast, paper):
        block.attn.key.register_forward_hook(rescale("key", 0.5))
        block.attn.value.register_forward_hook(rescale("value", 3.0))
    x, mask = padded_inputs()

    calls.clear()
    out = fast(x, mask)
    assert "key" in calls
    assert "value" in calls
    assert_close(out, paper(x, mask))  # E(m * hook(f(X))) either way


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")
@pytest.mark.parametrize("sharing", ["none", "headwise", "kv", "layerwise"])
def test_quantize_dynamic_runs_and_stays_close(sharing: str) -> None:
    block = Block(sharing, "auto").eval()
    x, mask = (t.float() if t.is_floating_point() else t for t in padded_inputs())
    expected = block(x, mask)

    quantized = torch.ao.quantization.quantize_dynamic(block, {nn.Linear}, dtype=torch.qint8)
    assert not isinstance(quantized.attn.value, nn.Linear)  # really replaced by a quantized module
    got = quantized(x, mask)

    # int8 weights and activations: within 5 % of the output's scale; a lost bias term is off by ~2
    assert_close(got, expected, atol=0.05 * expected.abs().max().item(), rtol=0.0)
