"""The split core's band (nn/local_band.py): segments that cover every query once and hold every key a query
needs, keys read in place (no copy), and the mask equal to the window's one predicate (`near`)."""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import local
from linformer_kit.nn.keys import KeySet, Slots, near
from linformer_kit.nn.local import dense_local_attention, split_local_attention
from linformer_kit.nn.local_band import band_keep, flat_blocks, flat_neighbourhoods, segments


@pytest.mark.parametrize("block", [1, 4, 64])
@pytest.mark.parametrize("w", [0, 1, 3, 4, 9, 64])
@pytest.mark.parametrize("total", [1, 5, 8, 63, 64, 65, 200, 4096])
def test_segments_cover_each_query_once_with_every_key_it_needs(total: int, block: int, w: int) -> None:
    """The segments cut [0, total) in order; each block's keys lie inside [0, total) and hold every key within w
    of each of its queries; lattice blocks start `block` keys apart."""
    parts = segments(total, block, w)
    assert [p.start for p in parts] == [0, *[p.stop for p in parts[:-1]]]
    assert parts[-1].stop == total
    for p in parts:
        assert p.blocks * p.size == p.stop - p.start > 0
        for c in range(p.blocks):
            first = p.first_key + c * p.size
            assert first >= 0
            assert first + p.keys <= total
            for i in (p.start + c * p.size, p.start + (c + 1) * p.size - 1):  # a block's first and last query
                assert first <= max(0, i - w)
                assert min(total, i + w + 1) <= first + p.keys


def test_segments_are_at_most_three_and_none_for_an_empty_batch() -> None:
    assert segments(0, 64, 5) == []
    assert len(segments(4096, 64, 64)) == 3  # head, lattice, tail
    assert segments(4096, 64, 64)[1].blocks == 62
    assert len(segments(100, 64, 64)) == 1  # no neighbourhood fits: every query against every key


def test_the_band_reads_keys_in_place() -> None:
    """The neighbourhoods and the blocked queries are views of the flat tensors: no key is copied."""
    flat = torch.randn(3 * 130, 2, 8)
    for segment in segments(3 * 130, 64, 5):
        for view in (flat_neighbourhoods(flat, segment), flat_blocks(flat, segment)):
            assert view.untyped_storage().data_ptr() == flat.untyped_storage().data_ptr()
        assert flat_neighbourhoods(flat, segment).shape == (segment.blocks, 2, segment.keys, 8)


@pytest.mark.parametrize("w", [0, 5, 100])
def test_band_keep_is_the_window_predicate_of_flat_positions(w: int) -> None:
    """Every (query, key) pair of every block: kept iff same row, `near`, not a global key, and key_ok."""
    b, n, g, block = 2, 70, 2, 16
    key_ok = torch.rand(b * n) > 0.3
    for segment in segments(b * n, block, w):
        keep = band_keep(segment, n, w, g, key_ok, torch.device("cpu"))[:, 0]  # (blocks, size, keys)
        query = torch.arange(segment.start, segment.stop).view(segment.blocks, segment.size, 1)
        key = segment.first_key + segment.size * torch.arange(segment.blocks)[:, None, None]
        key = key + torch.arange(segment.keys)
        want = (query // n == key // n) & near(query % n, key % n, w) & (key % n >= g) & key_ok[key]
        assert torch.equal(keep, want)


@pytest.mark.parametrize("grad", [False, True])
def test_one_long_row_equals_the_dense_reference(grad: bool) -> None:
    """A row long enough for the lattice at the kit's block (`SPLIT_BLOCK`), the head and a cut tail: the band's three
    calls together equal the reference."""
    torch.manual_seed(0)
    b, h, n, d, s = 1, 2, 300, 8, 5
    q, k, v = (torch.randn(b, h, n, d, dtype=torch.float64, requires_grad=grad) for _ in range(3))
    slots = Slots(*(torch.randn(b, h, s, d, dtype=torch.float64) for _ in range(2)), None, None)
    keyset = KeySet(slots, None, 40, 1)
    assert len(segments(n, local.SPLIT_BLOCK, 40)) == 3
    with torch.set_grad_enabled(grad):
        split, _ = split_local_attention(q, k, v, keyset, scale=0.3)
        dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    assert_close(split, dense, rtol=0, atol=1e-12)
    if grad:
        for got, want in zip(*(torch.autograd.grad(o.square().sum(), [q, k, v]) for o in (split, dense))):
            assert_close(got, want, rtol=0, atol=1e-12)
