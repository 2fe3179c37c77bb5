"""PEFT LoRA on query / key / value works in every sharing mode and both projection orders.

A LoRA adapter wraps the `key` / `value` linears. Were the fast order to read `value.weight`
instead of calling the module, the value adapter would get no gradient and merging it into the
weights (`merge_and_unload`) would change the outputs.
"""

from __future__ import annotations

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.blocks import Block, padded_inputs
from tests.fixtures.models import tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerForSequenceClassification

peft = pytest.importorskip("peft")

SHARING = ["none", "headwise", "kv", "layerwise"]
TARGETS = ["query", "key", "value"]


def _lora(model: torch.nn.Module, *, random_b: bool, **config) -> torch.nn.Module:
    # init_lora_weights=False draws B at random too: the adapters then change the output from the start
    lora = peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=TARGETS, init_lora_weights=not random_b, **config
    )
    return peft.get_peft_model(model, lora)


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("order", ["auto", "paper"])
def test_lora_merged_equals_unmerged(sharing: str, order: str) -> None:
    block = Block(sharing, order).double()
    x, mask = padded_inputs()
    reference = block(x, mask)
    adapted = _lora(block, random_b=True)

    unmerged = adapted(x, mask)
    merged = adapted.merge_and_unload()(x, mask)

    assert (unmerged - reference).abs().max() > 1e-3  # the adapters do something
    assert_close(unmerged, merged, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("sharing", SHARING)
@pytest.mark.parametrize("order", ["auto", "paper"])
def test_every_adapter_gets_a_gradient(sharing: str, order: str) -> None:
    adapted = _lora(Block(sharing, order).double(), random_b=False)  # B = 0: only B gets a gradient
    adapted(*padded_inputs()).square().sum().backward()

    for target in TARGETS:
        (lora_b,) = (p for name, p in adapted.named_parameters() if f"{target}.lora_B" in name)
        assert lora_b.grad is not None, target
        assert lora_b.grad.abs().sum() > 0, target


@pytest.mark.parametrize("sharing", ["headwise", "kv", "layerwise"])
@pytest.mark.parametrize("lora_bias", [False, True])
def test_lora_on_a_linformer_classifier(sharing: str, lora_bias: bool) -> None:
    model = LinformerForSequenceClassification(tiny_linformer_config(sharing=sharing)).double().eval()
    adapted = _lora(model, random_b=True, task_type="SEQ_CLS", lora_bias=lora_bias)  # bias: B has one too
    input_ids, attention_mask = padded_batch(model.config.pad_token_id)

    unmerged = adapted(input_ids=input_ids, attention_mask=attention_mask).logits
    merged = adapted.merge_and_unload()(input_ids=input_ids, attention_mask=attention_mask).logits

    assert_close(unmerged, merged, rtol=1e-10, atol=1e-10)
