"""Which window? Attention mass by distance, the mass on token 0, and the local_window / global_tokens read from them."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from linformer_kit.analysis import (
    SpectrumConfig,
    compute_spectrum,
    distance_mass,
    first_token_mass,
    recommend_global_tokens,
    recommend_local_window,
    uniform_distance_mass,
)
from linformer_kit.analysis.head_readings import OVER_UNIFORM
from linformer_kit.analysis.spectrum_result import WINDOW_RADII
from linformer_kit.models import LinformerConfig
from linformer_kit.nn.options import format_projected_length, parse_local_window

RADII = (1, 4, 16, 64)


def next_token(n: int) -> torch.Tensor:
    """(n, n): query i attends to key i + 1; the last query, which has none, to key i - 1."""
    shift = torch.diag(torch.ones(n - 1, dtype=torch.float64), diagonal=1)
    shift[-1, -2] = 1.0
    return shift


def band(n: int, r: int) -> torch.Tensor:
    """(n, n): query i attends uniformly to the keys within r places."""
    position = torch.arange(n)
    inside = ((position[:, None] - position[None, :]).abs() <= r).double()
    return inside / inside.sum(-1, keepdim=True)


def uniform(n: int) -> torch.Tensor:
    return torch.full((n, n), 1.0 / n, dtype=torch.float64)


def sink(n: int, share: float) -> torch.Tensor:
    """(n, n): `share` of every query's attention on token 0, the rest uniform."""
    maps = (1 - share) * uniform(n)
    maps[:, 0] += share
    return maps


def window_of(maps: torch.Tensor, share: float = 0.5) -> list[int | None]:
    """The recommended window of one layer whose heads are `maps` (h, n, n)."""
    mass = distance_mass(maps, RADII)[None]  # (1, h, R)
    return recommend_local_window(
        mass, uniform_distance_mass(maps.shape[-1], RADII), RADII, share, OVER_UNIFORM
    )


def test_distance_mass_equals_a_loop_over_real_queries_and_keys() -> None:
    generator = torch.Generator().manual_seed(0)
    maps = torch.softmax(3 * torch.randn(2, 3, 9, 9, generator=generator, dtype=torch.float64), -1)
    real = torch.tensor([[True] * 9, [True] * 6 + [False] * 3])  # (b, n): input 1 ends in 3 pads
    expected = torch.zeros(2, 3, len(RADII))
    first = torch.zeros(2, 3)
    for b in range(2):  # the reference: mean over real queries i of the row's share on real keys j
        keys = [j for j in range(9) if real[b, j]]
        for i in keys:
            row = maps[b, :, i, keys].sum(-1)  # (h,) the row's mass on real keys
            first[b] += maps[b, :, i, 0] / row / len(keys)
            for slot, r in enumerate(RADII):
                near = [j for j in keys if abs(i - j) <= r]
                expected[b, :, slot] += maps[b, :, i, near].sum(-1) / row / len(keys)
    torch.testing.assert_close(distance_mass(maps, RADII, real), expected.double())
    torch.testing.assert_close(first_token_mass(maps, real), first.double())


def test_a_query_that_reads_its_next_token_is_all_within_one_and_gets_window_one() -> None:
    maps = next_token(64)[None]  # (h=1, n, n)
    torch.testing.assert_close(distance_mass(maps, RADII), torch.ones(1, 4, dtype=torch.float64))
    assert window_of(maps) == [1]


@pytest.mark.parametrize("n", [16, 200])
def test_uniform_attention_has_mass_2r_plus_1_over_n_and_no_window(n: int) -> None:
    mass = distance_mass(uniform(n)[None], RADII)[0]  # (R,)
    torch.testing.assert_close(mass, uniform_distance_mass(n, RADII))
    for r, m in zip(RADII, mass, strict=True):
        if r < n:  # the two ends lose r(r+1) of the (2r + 1) n pairs
            assert abs(float(m) - (2 * r + 1) / n) <= r * (r + 1) / n**2 + 1e-12
        else:  # a window wider than the input holds everything
            assert float(m) == pytest.approx(1.0)
    assert window_of(uniform(n)[None]) == [None]
    torch.testing.assert_close(first_token_mass(uniform(n)), torch.tensor(1.0 / n, dtype=torch.float64))


def test_layer_window_is_the_smallest_that_holds_every_local_head() -> None:
    n = 128
    assert window_of(torch.stack([next_token(n), band(n, 4)])) == [4]  # ±1 and ±4: the wider decides
    assert window_of(torch.stack([next_token(n), uniform(n)])) == [1]  # a spread head asks for no window
    assert window_of(torch.stack([band(n, 16), uniform(n)])) == [16]
    assert window_of(torch.stack([band(n, 16)]), share=0.9) == [16]  # ±4 holds 9/33 of it, ±16 all
    assert window_of(torch.stack([band(n, 40)])) == [None]  # n = 128: ±64 is most of the input
    assert window_of(torch.stack([band(512, 40)])) == [64]  # ±16 holds 33/81 < 0.5 of it
    assert window_of(torch.stack([uniform(n), sink(n, 0.9)])) == [None]  # a sink is no window


def test_a_window_that_uniform_attention_would_half_fill_is_no_window() -> None:
    # n = 4: ±1 already holds 10/16 of uniform attention; a next-token head is no local head there
    assert window_of(next_token(4)[None]) == [None]
    assert window_of(next_token(8)[None]) == [1]  # ±1 holds 22/64 of uniform attention, 1 of this head


def test_mass_on_the_first_token_asks_for_one_global_token() -> None:
    n = 64
    maps = torch.stack([uniform(n), sink(n, 0.3)])  # (h=2, n, n)
    first = first_token_mass(maps)  # (h,)
    torch.testing.assert_close(first, torch.tensor([1 / n, 0.3 + 0.7 / n], dtype=torch.float64))
    assert recommend_global_tokens(first[None], 1 / n, 0.1, OVER_UNIFORM) == 1
    assert recommend_global_tokens(first[None], 1 / n, 0.5, OVER_UNIFORM) == 0  # under the threshold
    assert recommend_global_tokens(first_token_mass(uniform(n))[None, None], 1 / n, 0.1, OVER_UNIFORM) == 0
    # n = 8: uniform attention has 1/8 >= 0.1 on token 0, but not twice what uniform attention has
    assert recommend_global_tokens(first_token_mass(uniform(8))[None, None], 1 / 8, 0.1, OVER_UNIFORM) == 0


def test_padded_queries_and_keys_are_left_out() -> None:
    """A padded input gives the numbers of its real tokens alone, whatever the pads hold."""
    n, real_n = 12, 9
    generator = torch.Generator().manual_seed(1)
    real_maps = torch.softmax(torch.randn(2, real_n, real_n, generator=generator, dtype=torch.float64), -1)
    padded = torch.rand(2, n, n, generator=generator, dtype=torch.float64)  # junk in the pad queries' rows
    padded[:, :real_n, :real_n] = 0.7 * real_maps  # real queries: 0.7 on the real keys, 0.3 on the pads
    padded[:, :real_n, real_n:] = 0.3 / (n - real_n)
    real = (torch.arange(n) < real_n)[None]  # (b=1, n)
    torch.testing.assert_close(distance_mass(padded[None], RADII, real)[0], distance_mass(real_maps, RADII))
    torch.testing.assert_close(first_token_mass(padded[None], real)[0], first_token_mass(real_maps))
    # without the mask the pads count: the junk changes the numbers
    assert not torch.allclose(distance_mass(padded, RADII), distance_mass(real_maps, RADII))


class LocalHeads(nn.Module):
    """Three layers, two heads. Layer 0: next token (a shift, full rank) and uniform; layer 1: uniform, uniform;
    layer 2: a ±4 band and a sink with half its attention on token 0."""

    def __init__(self) -> None:
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))  # compute_spectrum reads the device from a parameter

    def forward(self, input_ids, attention_mask, output_attentions):
        b, n = input_ids.shape
        layers = [
            (next_token(n), uniform(n)),
            (uniform(n), uniform(n)),
            (band(n, 4), sink(n, 0.5)),
        ]
        return {"attentions": tuple(torch.stack(heads).float().expand(b, 2, n, n) for heads in layers)}


def test_compute_spectrum_reads_a_window_per_layer_and_a_global_token() -> None:
    n = 64
    config = SpectrumConfig(index=1, progress=False)
    result = compute_spectrum(LocalHeads(), [list(range(n))] * 2 + [list(range(48))], config)
    assert result.distance_mass.shape == (3, 2, len(WINDOW_RADII))
    assert result.first_token_mass.shape == (3, 2)
    # the next-token head holds all its attention within ±1 at every length; averaged over the inputs
    torch.testing.assert_close(result.distance_mass[0, 0], torch.ones(4))
    expected_uniform = (
        2 * uniform_distance_mass(n, WINDOW_RADII) + uniform_distance_mass(48, WINDOW_RADII)
    ) / 3
    torch.testing.assert_close(result.uniform_distance_mass, expected_uniform.float())
    torch.testing.assert_close(result.distance_mass[1, 0], expected_uniform.float())
    assert result.uniform_first_token_mass == pytest.approx((2 / 64 + 1 / 48) / 3)

    assert result.recommended_local_window == [1, None, 4]
    assert result.recommended_global_tokens == 1
    # layer 0 copies a neighbour: full attention without a window, the spectrum's k beside one
    assert result.recommended_projected_length[0] is None
    assert result.windowed_projected_length == [
        result.rank_projected_length[0],
        *result.recommended_projected_length[1:],
    ]
    assert any("or a local window beside k" in note for note in result.notes)

    report = result.to_dict()
    assert report["distance_mass"]["radii"] == [1, 4, 16, 64]
    assert len(report["distance_mass"]["mean"][2][1]) == 4
    assert report["first_token_mass"]["mean"][2][1] == pytest.approx(
        0.5 + 0.5 * (2 / 64 + 1 / 48) / 3, abs=1e-6
    )
    assert report["recommended_local_window"] == [1, None, 4]
    assert report["recommended_global_tokens"] == 1
    assert report["windowed_projected_length"] == result.windowed_projected_length
    # the flags read back, and a config takes them
    window = parse_local_window(format_projected_length(result.recommended_local_window))
    assert window == [1, None, 4]
    config = LinformerConfig(
        num_hidden_layers=3, max_position_embeddings=66, projected_length=result.windowed_projected_length,
        local_window=window, global_tokens=result.recommended_global_tokens,
    )  # fmt: skip
    assert list(config.local_window) == [1, None, 4]


class CopyAt(nn.Module):
    """One layer, one head: `share` of each query's attention on the key `offset` places away (or, with none
    there, `-offset`), the rest uniform."""

    def __init__(self, offset: int, share: float) -> None:
        super().__init__()
        self.offset, self.share = offset, share
        self.anchor = nn.Parameter(torch.zeros(1))

    def forward(self, input_ids, attention_mask, output_attentions):
        b, n = input_ids.shape
        position = torch.arange(n)
        key = torch.where((position + self.offset >= 0) & (position + self.offset < n), position + self.offset,
                          position - self.offset)  # fmt: skip
        maps = (1 - self.share) * uniform(n)
        maps[position, key] += self.share
        return {"attentions": (maps.float().expand(b, 1, n, n),)}


@pytest.mark.parametrize("offset", [-3, -1, 1, 2, 3])
def test_every_layer_with_a_copying_head_gets_a_window(offset: int) -> None:
    """A copier (>= SHIFT_MASS 0.5 on one offset within ±3) holds >= window_mass 0.5 within ±4: on 36 tokens
    its layer, recommended full attention, gets a window of at most 4 and the spectrum's k beside it."""
    result = compute_spectrum(CopyAt(offset, 0.6), [list(range(36))], SpectrumConfig(index=1, progress=False))
    assert result.recommended_projected_length == [None]  # a copier: offset mass >= 0.5
    (window,) = result.recommended_local_window
    assert window == (1 if abs(offset) == 1 else 4)
    assert result.windowed_projected_length == result.rank_projected_length


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("window_mass", 0.0, r"window_mass=0.0 must be in \(0, 1\]"),
        ("global_mass", 1.5, r"global_mass=1.5 must be in \(0, 1\]"),
        ("window_mass", float("nan"), r"window_mass=nan must be in \(0, 1\]"),
    ],
)
def test_config_rejects_bad_shares(field: str, value: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SpectrumConfig(**{field: value})
