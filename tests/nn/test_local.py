"""The local window and global tokens beside the projection (nn/local.py, DESIGN.md "Local window").

The fast core (query blocks) against the dense reference ((n x (k + n)) scores with a band mask) and
against a plainly written per-query loop; padding; the special cases the contract names (k = None is
full attention whatever the window, a window over the whole input is softmax over [slots ; all keys],
no window is the paper's layer bit for bit); readable weights; compile, export and ONNX; bad values.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import PROJECTION_KINDS, SHARING_MODES, LinformerSelfAttention
from linformer_kit.nn.local import banded_attention, dense_local_attention, local_core, sdpa_local_attention
from tests.exported import exported, onnx_runner
from tests.fixtures.batches import length_mask, padded_states

D, H, N, K = 32, 4, 16, 4
LENGTHS = [16, 11, 4, 1]


def _layer(k: int | None = K, **kwargs) -> LinformerSelfAttention:
    layer = LinformerSelfAttention(D, H, N, k, **kwargs).double()
    with torch.no_grad():
        layer.key.bias.normal_()
        layer.value.bias.normal_()
    return layer.eval()


def _core_inputs(n: int = 50, s: int = 7) -> dict:
    b, h, d = 3, 2, 8
    q, k, v = (torch.randn(b, h, n, d, dtype=torch.float64, requires_grad=True) for _ in range(3))
    slot_k, slot_v = (torch.randn(b, h, s, d, dtype=torch.float64) for _ in range(2))
    real = length_mask([n, 30, 1], n)
    slot_keep = torch.rand(b, 1, 1, s) > 0.3
    slot_keep[..., 0] = True  # every row keeps a slot (the projection's contract)
    return dict(q=q, k=k, v=v, slot_k=slot_k, slot_v=slot_v, slot_keep=slot_keep, real=real)


# --- the fast core equals the dense reference -----------------------------------------------------


@pytest.mark.parametrize("core", [banded_attention, sdpa_local_attention])
@pytest.mark.parametrize(
    "n", [50, 130]
)  # 130: two of sdpa_local_attention's 128-row blocks, the last one cut
@pytest.mark.parametrize("window", [None, 0, 1, 5, 33, 100])
@pytest.mark.parametrize("global_tokens", [0, 2])
def test_fast_cores_equal_the_dense_reference_with_gradients(
    core, n: int, window: int | None, global_tokens: int
) -> None:
    torch.manual_seed(0)
    inputs = _core_inputs(n)
    windowed = torch.tensor([True, False, True])  # row 1's slots hold its own tokens (short_inputs="exact")
    options = dict(window=window, global_tokens=global_tokens, scale=0.3)
    fast = core(**inputs, windowed=windowed, **options)
    dense, weights = dense_local_attention(**inputs, windowed=windowed, **options)
    real = inputs["real"][:, None, :, None].expand_as(fast)
    assert_close(fast[real], dense[real], rtol=0, atol=1e-12)
    assert_close(weights.sum(-1), torch.ones_like(weights[..., 0]))
    grads = [
        torch.autograd.grad(out[real].square().sum(), [inputs[x] for x in "qkv"], materialize_grads=True)
        for out in (fast, dense)
    ]
    for fast_grad, dense_grad in zip(*grads):
        assert_close(fast_grad, dense_grad, rtol=0, atol=1e-12)


def test_dense_reference_masks_what_the_contract_says() -> None:
    """Weights of query i >= g: zero on keys past the window, on pad keys; rows i < g: no slot, every real key."""
    torch.manual_seed(0)
    inputs = _core_inputs(n=20, s=3)
    _, weights = dense_local_attention(**inputs, windowed=None, window=2, global_tokens=1, scale=1.0)
    s = 3
    on_keys = weights[..., s:]  # (b, h, n, n)
    i, j = torch.arange(20)[:, None], torch.arange(20)[None, :]
    outside = ((i - j).abs() > 2) & (j >= 1) & (i >= 1)
    assert on_keys[:, :, outside].abs().max() == 0
    pad = ~inputs["real"][2]  # row 2 has one real token
    assert on_keys[2][:, :, pad].abs().max() == 0
    assert weights[:, :, 0, :s].abs().max() == 0  # the global query takes no slot
    assert (on_keys[0, :, 0] > 0).all()  # ... and every key of a full row


# --- the layer against a plain per-query loop ------------------------------------------------------


def _loop_reference(layer: LinformerSelfAttention, x: torch.Tensor, w: int | None, g: int) -> torch.Tensor:
    """One unpadded sequence (1, n, D), headwise linear E and F, one query at a time, as the docstring reads."""
    n, h, d = x.shape[1], layer.num_heads, layer.head_dim
    q, k, v = (lin(x[0]).view(n, h, d).transpose(0, 1) for lin in (layer.query, layer.key, layer.value))
    e = layer.key_projection.weight[..., :n].reshape(-1, n)  # (k, n)
    f = layer.value_projection.weight[..., :n].reshape(-1, n)
    out = torch.empty(h, n, d, dtype=x.dtype)
    for head in range(h):
        slots_k, slots_v = e @ k[head], f @ v[head]
        for i in range(n):
            if i < g:
                keys, values = k[head], v[head]
            else:
                near = [j for j in range(n) if j < g or (w is not None and abs(i - j) <= w)]
                keys = torch.cat([slots_k, k[head, near]])
                values = torch.cat([slots_v, v[head, near]])
            p = torch.softmax(keys @ q[head, i] / d**0.5, dim=0)
            out[head, i] = p @ values
    return layer.dense(out.transpose(0, 1).reshape(1, n, h * d))


@pytest.mark.parametrize("backend", ["auto", "sdpa", "blocked"])  # local_core: sdpa, sdpa, banded
@pytest.mark.parametrize(("window", "global_tokens"), [(0, 0), (2, 0), (3, 1), (None, 2), (N, 0), (100, 3)])
def test_layer_equals_a_per_query_loop(window: int | None, global_tokens: int, backend: str) -> None:
    """w >= n - 1 is softmax over [k slots ; every key]: the contract's "window covering the whole input"."""
    torch.manual_seed(0)
    layer = _layer(local_window=window, global_tokens=global_tokens, backend=backend)
    x = torch.randn(1, N, D, dtype=torch.float64)
    assert_close(layer(x), _loop_reference(layer, x, window, global_tokens))


def test_full_attention_is_full_attention_whatever_the_window() -> None:
    torch.manual_seed(0)
    plain = _layer(None)
    windowed = _layer(None, local_window=3, global_tokens=1)
    windowed.load_state_dict(plain.state_dict())
    x, mask = padded_states(LENGTHS, N, D)
    assert torch.equal(windowed(x, mask), plain(x, mask))


def test_no_window_is_the_papers_layer_bit_for_bit() -> None:
    torch.manual_seed(0)
    paper = _layer(K)
    none = _layer(K, local_window=None, global_tokens=0)
    none.load_state_dict(paper.state_dict())
    x, mask = padded_states(LENGTHS, N, D)
    assert not none.is_local
    assert torch.equal(none(x, mask), paper(x, mask))
    assert set(none.state_dict()) == set(paper.state_dict())  # the window adds no weight


def test_the_window_changes_the_output() -> None:
    """A window that the test could not tell apart from no window would make every test above vacuous."""
    torch.manual_seed(0)
    paper, local = _layer(K), _layer(K, local_window=2)
    local.load_state_dict(paper.state_dict())
    x = torch.randn(2, N, D, dtype=torch.float64)
    assert (local(x) - paper(x)).abs().max() > 1e-3


# --- padding, every sharing mode and projection kind -----------------------------------------------

CASES = [(sharing, "linear") for sharing in SHARING_MODES] + [
    ("headwise", kind) for kind in PROJECTION_KINDS if kind != "linear"
]


@pytest.mark.parametrize(("sharing", "kind"), CASES)
@pytest.mark.parametrize("short_inputs", ["project", "exact"])
def test_padded_batch_equals_one_by_one_and_pad_content_does_not_matter(
    sharing: str, kind: str, short_inputs: str
) -> None:
    torch.manual_seed(0)
    layer = _layer(
        sharing=sharing, projection=kind, short_inputs=short_inputs, local_window=2, global_tokens=1
    )
    x, mask = padded_states(LENGTHS, N, D)
    batched = layer(x, mask)
    for i, length in enumerate(LENGTHS):
        assert_close(batched[i, :length], layer(x[i : i + 1, :length])[0])
    noisy = torch.where(mask[..., None], x, torch.full_like(x, float("nan")))
    again = layer(noisy, mask)
    assert_close(again[mask], batched[mask])
    assert not again[mask].isnan().any()


@pytest.mark.parametrize("backend", ["auto", "blocked", "eager"])
def test_no_nan_for_all_pad_rows(backend: str) -> None:
    layer = _layer(local_window=2, global_tokens=1, backend=backend)
    x, _ = padded_states([16, 16], N, D)
    mask = torch.zeros(2, N, dtype=torch.bool)
    mask[0] = True
    assert not layer(x, mask).isnan().any()


def test_local_core_picks_what_its_docstring_says() -> None:
    small, wide = torch.randn(1, 2, 8, 32), torch.randn(1, 2, 8, 64)
    assert [local_core(b, small) for b in ("eager", "blocked", "sdpa", "auto")] == [
        "dense",
        "banded",
        "sdpa",
        "sdpa",
    ]
    with torch.no_grad():
        assert local_core("auto", wide) == "banded"  # a CPU forward at d > 32
        assert local_core("sdpa", wide) == "sdpa"
    assert local_core("auto", wide.requires_grad_()) == "sdpa"  # a backward will run
    assert local_core("auto", wide, dropout_p=0.1) == "banded"  # the fused CPU kernel has no dropout
    assert local_core("sdpa", wide, dropout_p=0.1) == "sdpa"


# --- readable weights --------------------------------------------------------------------------------


def test_output_weights_are_slots_then_tokens() -> None:
    """forward_with_weights: (b, h, n, k + n), [..., :k] the slots, [..., k + j] token j; out = weights [FV ; V]."""
    torch.manual_seed(0)
    layer = _layer(local_window=1, global_tokens=1)
    x, mask = padded_states(LENGTHS, N, D)
    out, weights = layer.forward_with_weights(x, mask)
    assert weights.shape == (len(LENGTHS), H, N, K + N)
    assert_close(out[mask], layer(x, mask)[mask])
    far = (torch.arange(N)[:, None] - torch.arange(N)[None, :]).abs() > 1
    far[:, 0] = False  # the global key
    far[0, :] = False  # the global query
    assert weights[..., K:][:, :, far].abs().max() == 0


# --- compile, export, ONNX ---------------------------------------------------------------------------


def test_compiled_layer_matches_eager() -> None:
    torch.manual_seed(0)
    layer = LinformerSelfAttention(D, H, N, K, local_window=3, global_tokens=1, short_inputs="exact").eval()
    x, mask = padded_states(LENGTHS, N, D)
    x, mask = x.float(), mask
    compiled = torch.compile(layer, fullgraph=True)
    assert_close(compiled(x, mask)[mask], layer(x, mask)[mask], rtol=1e-5, atol=1e-5)


class Pair(torch.nn.Module):
    """Both short_inputs modes with a window and a global token: one export covers both."""

    def __init__(self) -> None:
        super().__init__()
        self.exact, self.project = (
            LinformerSelfAttention(D, H, N, K, local_window=3, global_tokens=1, short_inputs=mode)
            for mode in ("exact", "project")
        )

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.exact(x, mask), self.project(x, mask)


def _padded(n: int) -> dict[str, torch.Tensor]:
    x = torch.randn(3, n, D)
    mask = length_mask([n, max(1, n // 2), min(n, 3)], n)
    x[~mask] = float("nan")
    return {"x": x, "mask": mask}


def _example() -> dict[str, torch.Tensor]:
    return {"x": torch.randn(2, 10, D), "mask": torch.ones(2, 10, dtype=torch.bool)}


def test_export_with_a_dynamic_length_matches_eager() -> None:
    torch.manual_seed(0)
    pair = Pair().eval()
    graph = exported(pair, _example(), N)
    for n in (2, 3, K, K + 1, 9, N):
        inputs = _padded(n)
        mask = inputs["mask"]
        for got, want in zip(graph(**inputs), pair(**inputs)):
            assert_close(got[mask], want[mask])


@pytest.mark.slow
def test_onnx_export_runs_in_onnx_runtime(tmp_path: Path) -> None:
    torch.manual_seed(0)
    pair = Pair().eval()
    run = onnx_runner(pair, _example(), N, tmp_path / "local.onnx")
    for n in (3, K + 1, N):
        inputs = _padded(n)
        mask = inputs["mask"]
        for got, want in zip(run(**inputs), pair(**inputs)):
            assert_close(got[mask], want[mask], rtol=1e-4, atol=1e-5)


# --- bad values ---------------------------------------------------------------------------------------


def test_bad_windows_are_refused_before_any_work() -> None:
    with pytest.raises(ValueError, match=r"local_window \(w=-1\) must be >= 0"):
        LinformerSelfAttention(D, H, N, K, local_window=-1)
    with pytest.raises(TypeError, match=r"local_window must be an int, got 1\.5"):
        LinformerSelfAttention(D, H, N, K, local_window=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="local_window must be an int"):
        LinformerSelfAttention(D, H, N, K, local_window=[1, 2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="global_tokens must be >= 0, got -1"):
        LinformerSelfAttention(D, H, N, K, global_tokens=-1)
    with pytest.raises(ValueError, match=f"global_tokens=17 must be at most max_seq_len={N}"):
        LinformerSelfAttention(D, H, N, K, global_tokens=17)
