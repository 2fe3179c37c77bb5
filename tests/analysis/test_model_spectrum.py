"""The spectrum of a real (tiny, random) encoder's attention maps, and the errors for models that can't."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from linformer_kit.analysis import (
    SpectrumConfig,
    chunk_text,
    compute_spectrum,
    cumulative_curve,
    load_encoder,
)
from linformer_kit.models import LinformerConfig
from tests.fixtures.models import tiny_roberta_config
from tests.fixtures.tokenizers import build_tiny_tokenizer


@pytest.fixture(scope="module")
def model_and_tokenizer(tiny_roberta_dir: Path):
    return load_encoder(str(tiny_roberta_dir), device="cpu")


def test_chunks_have_the_requested_length_and_special_tokens(model_and_tokenizer, text_file: Path) -> None:
    _, tokenizer = model_and_tokenizer
    chunks = chunk_text(text_file.read_text(), tokenizer, seq_len=16, max_inputs=5)
    assert len(chunks) == 5
    assert all(len(ids) == 16 and ids[0] == 0 and ids[-1] == 2 for ids in chunks)
    assert chunk_text("the cat", tokenizer, seq_len=16, max_inputs=5) == [
        [0, *tokenizer("the cat")["input_ids"][1:]]
    ]


def test_spectrum_equals_svd_of_each_attention_map(model_and_tokenizer, text_file: Path) -> None:
    model, tokenizer = model_and_tokenizer
    inputs = chunk_text(text_file.read_text(), tokenizer, seq_len=12, max_inputs=3)
    inputs.append(inputs[0][:7])  # a shorter input: its own batch, no padding, curve padded with 1
    config = SpectrumConfig(index=4, batch_size=2, thresholds=(0.5, 0.9), progress=False, dtype="float64")
    result = compute_spectrum(model, inputs, config)

    with torch.no_grad():
        expected = []
        for ids in inputs:
            attentions = model(input_ids=torch.tensor([ids]), output_attentions=True).attentions
            maps = torch.cat(attentions).double()  # (L, h, n, n)
            curve = cumulative_curve(torch.linalg.svdvals(maps))  # (L, h, n)
            expected.append(torch.cat([curve, curve.new_ones(*curve.shape[:-1], 12 - curve.shape[-1])], -1))
        expected = torch.stack(expected)  # (inputs, L, h, 12)
    assert result.curve_mean.shape == (3, 4, 12)
    torch.testing.assert_close(result.curve_mean, expected.mean(0).float())
    torch.testing.assert_close(result.curve_std, expected.std(0).float(), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(result.layer_curve_mean, expected.mean((0, 2)).float())
    torch.testing.assert_close(result.at_index(), expected.mean(0)[..., 3].float())
    ranks_at_half = ((expected < 0.5 - 1e-6).sum(-1) + 1).double()  # (inputs, L, h)
    torch.testing.assert_close(result.effective_rank_mean[0.5], ranks_at_half.mean(0).float())
    assert len(result.recommended_projected_length) == 3
    assert all(1 <= k <= 12 for k in result.recommended_projected_length)
    with (
        torch.no_grad()
    ):  # offset mass: m(o) = mean over queries of P[i, i + o], a short input adds 0 beyond it
        mass = []
        for ids in inputs:
            maps = torch.cat(model(input_ids=torch.tensor([ids]), output_attentions=True).attentions).double()
            n = len(ids)
            mass.append(torch.stack([maps.diagonal(o, -2, -1).sum(-1) / n for o in range(-3, 4)], -1))
    torch.testing.assert_close(result.offset_mass, torch.stack(mass).mean(0).float())
    assert result.to_dict()["offset_mass"]["offsets"] == [-3, -2, -1, 0, 1, 2, 3]


def test_a_head_that_copies_its_neighbour_gets_a_note() -> None:
    from linformer_kit.analysis.head_readings import shift_notes

    mass = torch.zeros(2, 2, 7)  # (L, h, offsets -3 .. 3)
    mass[0, 1, 2] = 0.98  # layer 0 head 1: the previous token
    mass[1, 0] = 1 / 7  # spread: no note
    (note,) = shift_notes(mass)
    assert note.startswith("layer 0 head 1 puts 98% of its attention on the key at offset -1")


class ShiftThenMean(nn.Module):
    """Layer 0: head 0 attends the previous key (a shift, full rank), head 1 the mean; layer 1: the mean (rank 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))  # compute_spectrum reads the device from a parameter

    def forward(self, input_ids, attention_mask, output_attentions):
        b, n = input_ids.shape
        shift = torch.eye(n).roll(-1, dims=1)  # P[i, i - 1] = 1 (P[0, n - 1]: a permutation)
        uniform = torch.full((n, n), 1 / n)  # layer 0 head 1 too: under "mean" one shift head still decides
        return {"attentions": (torch.stack([shift, uniform]).expand(b, 2, n, n), uniform.expand(b, 2, n, n))}


# the spectrum alone, layer 0: the shift's 16 equal singular values keep 0.9 at 15 (the worst head, "max");
# averaged with the mean's curve (1 from the first value), (i/16 + 1)/2 >= 0.9 at 13; layer 1: 1
@pytest.mark.parametrize(("head_reduction", "by_rank"), [("max", [15, 1]), ("mean", [13, 1])])
def test_a_layer_whose_head_copies_a_neighbour_is_recommended_full_attention(
    head_reduction: str, by_rank: list[int]
) -> None:
    config = SpectrumConfig(index=1, progress=False, head_reduction=head_reduction)
    result = compute_spectrum(ShiftThenMean(), [list(range(16))] * 2, config)
    assert result.rank_projected_length == by_rank
    assert result.recommended_projected_length == [None, 1]  # layer 0 full attention: exact at any n
    (note,) = result.notes
    assert note.startswith("layer 0 head 0 puts 94% of its attention on the key at offset -1")
    report = result.to_dict()
    assert report["recommended_projected_length"] == [None, 1]
    assert report["rank_projected_length"] == by_rank
    LinformerConfig(num_hidden_layers=2, max_position_embeddings=18, projected_length=[None, 1])  # takes it


def test_randomized_method_stays_close_to_exact(model_and_tokenizer, text_file: Path) -> None:
    model, tokenizer = model_and_tokenizer
    inputs = chunk_text(text_file.read_text(), tokenizer, seq_len=32, max_inputs=2)
    common = {"index": 4, "progress": False, "dtype": "float64", "normalization": "energy"}
    exact = compute_spectrum(model, inputs, SpectrumConfig(**common))
    randomized = compute_spectrum(model, inputs, SpectrumConfig(method="randomized", rank=12, **common))
    assert randomized.curve_mean.shape[-1] == 12
    # energy curve: exact denominator, estimates ≤ truth, so the curve is a lower bound, and close
    assert (randomized.curve_mean <= exact.curve_mean[..., :12] + 1e-6).all()
    torch.testing.assert_close(randomized.curve_mean, exact.curve_mean[..., :12], atol=2e-2, rtol=0.0)


def test_sdpa_model_that_returns_no_attentions_gets_a_clear_error() -> None:
    from transformers import RobertaModel

    tokenizer = build_tiny_tokenizer(max_length=32)
    model = RobertaModel._from_config(tiny_roberta_config(len(tokenizer)), attn_implementation="sdpa")
    with pytest.raises(
        ValueError, match=r"RobertaModel returned no attention maps.*'sdpa'.*attn_implementation='eager'"
    ):
        compute_spectrum(model, [[0, 5, 6, 2]], SpectrumConfig(index=1, progress=False))


class _LinformerLikeEncoder(nn.Module):
    """Returns (b, h, n, k) maps, like a Linformer with projected_length=k."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask=None, output_attentions=False):
        b, n = input_ids.shape
        return {"attentions": (torch.full((b, 2, n, 3), 1 / 3),)}


def test_projected_attention_maps_are_refused() -> None:
    with pytest.raises(
        ValueError, match=r"shape \(1, 2, 4, 3\), expected \(b, h, 4, 4\).*projected_length=None"
    ):
        compute_spectrum(_LinformerLikeEncoder(), [[0, 5, 6, 2]], SpectrumConfig(index=1, progress=False))


def test_non_module_and_bad_index_are_refused(model_and_tokenizer) -> None:
    with pytest.raises(ValueError, match=r"needs a torch.nn.Module encoder, got function"):
        compute_spectrum(lambda **kw: None, [[0, 2]], SpectrumConfig(index=1))
    model, _ = model_and_tokenizer
    with pytest.raises(ValueError, match=r"index=20 exceeds the curve length 6"):
        compute_spectrum(model, [[0, 5, 6, 7, 8, 2]], SpectrumConfig(index=20, progress=False))


def test_inputs_longer_than_the_model_are_refused(tiny_roberta_dir: Path, text_file: Path) -> None:
    # refused by the config, from config.json, before the model is loaded
    with pytest.raises(ValueError, match=r"seq_len=40 exceeds the model's longest input 32"):
        SpectrumConfig(model=str(tiny_roberta_dir), text_file=str(text_file), seq_len=40, index=1)


def test_truncated_randomized_curve_says_keep_was_not_reached(model_and_tokenizer, text_file: Path) -> None:
    model, tokenizer = model_and_tokenizer
    inputs = chunk_text(text_file.read_text(), tokenizer, seq_len=16, max_inputs=2)
    config = SpectrumConfig(method="randomized", rank=2, keep=0.99, index=1, progress=False)
    result = compute_spectrum(model, inputs, config)
    assert result.recommended_projected_length == [2, 2, 2]
    assert result.notes == [
        "layers [0, 1, 2] do not reach keep=0.99 within the first 2 singular values; "
        "their rank reading is a lower bound (raise --rank)"
    ]
