"""projection_init: new models start E, F as window means (or the paper's random start); loaded weights never re-start."""

import json

import pytest
import torch
from tests.fixtures.models import N, tiny_linformer_config
from torch.testing import assert_close

from linformer_kit.models import LinformerForMaskedLM
from linformer_kit.nn import SequenceProjection


@pytest.mark.parametrize("sharing", ["none", "headwise", "kv", "layerwise"])
def test_a_checkpoint_saved_before_projection_init_existed_loads_unchanged(sharing, tmp_path):
    torch.manual_seed(0)
    old = LinformerForMaskedLM(tiny_linformer_config(sharing=sharing, projection_init="random")).eval()
    old.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    for key in ("projection_init", "layer_norm"):  # what a config.json written before them lacks
        config.pop(key)
    (tmp_path / "config.json").write_text(json.dumps(config))

    loaded = LinformerForMaskedLM.from_pretrained(tmp_path).eval()
    assert loaded.config.projection_init == "window"  # the default now, but the weights are the file's
    for name, tensor in old.state_dict().items():
        assert_close(loaded.state_dict()[name], tensor, rtol=0, atol=0, msg=name)
    input_ids = torch.randint(3, 99, (2, N), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert_close(loaded(input_ids).logits, old(input_ids).logits)


def test_window_start_is_local_means_and_random_start_is_zero_mean():
    window = SequenceProjection(64, 16).weight  # (k, n): the default start
    assert_close(window.sum(-1), torch.ones(16))
    assert torch.equal(window.nonzero()[:, 0], torch.arange(64) // 4)  # position t -> slot t // 4 only
    random = SequenceProjection(64, 16, init="random").weight
    assert abs(random.mean().item()) < 0.02
    assert random.std().item() == pytest.approx(64**-0.5, rel=0.1)  # N(0, 1/n)


def test_unknown_projection_init_is_named():
    with pytest.raises(
        ValueError, match=r"projection_init must be one of \('window', 'random'\), got 'default'"
    ):
        tiny_linformer_config(projection_init="default")
