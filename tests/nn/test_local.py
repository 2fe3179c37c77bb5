"""The local window and global tokens beside the projection (nn/local.py; docs/models.md, "A local window
beside the projection").

Every window core of the one table (nn/cores.py `CORES`) against the dense reference ((n x (k + n)) scores with
a band mask), and the layer against a plainly written per-query loop; padding; the special cases the
contract names (k = None is full attention whatever the window, a window over the whole input is softmax
over [slots ; all keys], no window is the paper's layer bit for bit); readable weights; half precision;
compile, export and ONNX; bad values.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import (
    PROJECTION_KINDS,
    SHARING_MODES,
    LinformerSelfAttention,
    local_split,
)
from linformer_kit.nn.cores import CORES
from linformer_kit.nn.local import KeySet, Slots, dense_local_attention, split_local_attention
from tests.exported import exported, onnx_runner
from tests.fixtures.batches import length_mask, padded_states

D, H, N, K = 32, 4, 16, 4
LENGTHS = [16, 11, 4, 1]
# the flex core has no CPU backward and compiles its kernel: tests/nn/test_local_flex.py
WINDOW_CORES = {name: core.window for name, core in CORES.items()}
FAST_CORES = [
    name for name, core in WINDOW_CORES.items() if core is not dense_local_attention and name != "flex"
]


def _layer(k: int | None = K, **kwargs) -> LinformerSelfAttention:
    layer = LinformerSelfAttention(D, H, N, k, **kwargs).double()
    with torch.no_grad():
        layer.key.bias.normal_()
        layer.value.bias.normal_()
    return layer.eval()


def _slot_keep(kind: str, b: int, h: int, s: int) -> torch.Tensor | None:
    """None (every slot), one mask per row (b, 1, 1, s), or one per row and head (b, h, 1, s)."""
    if kind == "none":
        return None
    keep = torch.rand(b, h if kind == "per-head" else 1, 1, s) > 0.4
    keep[..., 0] = True  # every row keeps a slot (the projection's contract)
    return keep


def _core_inputs(n: int = 50, s: int = 7, slot_keep: str = "rows", dtype: torch.dtype = torch.float64):
    """q, k, v (b, h, n, d) that require grad, slot keys / values that do too, their mask, the padding mask."""
    b, h, d = 3, 2, 8
    q, k, v = (torch.randn(b, h, n, d, dtype=dtype, requires_grad=True) for _ in range(3))
    slot_k, slot_v = (torch.randn(b, h, s, d, dtype=dtype, requires_grad=True) for _ in range(2))
    real = length_mask([n, 30, 1], n)
    return q, k, v, slot_k, slot_v, _slot_keep(slot_keep, b, h, s), real


def _keyset(inputs, windowed: torch.Tensor | None, window: int | None, global_tokens: int) -> KeySet:
    _, _, _, slot_k, slot_v, slot_keep, real = inputs
    return KeySet(Slots(slot_k, slot_v, slot_keep, windowed), real, window, global_tokens)


# --- every core equals the dense reference ---------------------------------------------------------


@pytest.mark.parametrize("core", FAST_CORES)
@pytest.mark.parametrize(
    "n", [50, 130]
)  # 130: two of sdpa_local_attention's 128-row blocks, the last one cut
@pytest.mark.parametrize("window", [None, 0, 1, 5, 33, 100])
@pytest.mark.parametrize("global_tokens", [0, 2])
@pytest.mark.parametrize("slot_keep", ["none", "rows", "per-head"])
def test_every_core_equals_the_dense_reference_with_gradients(
    core: str, n: int, window: int | None, global_tokens: int, slot_keep: str
) -> None:
    torch.manual_seed(0)
    inputs = _core_inputs(n, slot_keep=slot_keep)
    q, k, v, slot_k, slot_v, _, real = inputs
    windowed = torch.tensor([True, False, True])  # row 1's slots hold its own tokens (short_inputs="exact")
    keyset = _keyset(inputs, windowed, window, global_tokens)
    fast, fast_weights = WINDOW_CORES[core](q, k, v, keyset, scale=0.3)
    dense, weights = dense_local_attention(q, k, v, keyset, scale=0.3)
    assert fast_weights is None  # only the reference writes the weights out
    assert fast.shape == dense.shape == q.shape
    rows = real[:, None, :, None].expand_as(fast)  # real queries (a pad query's output is never read)
    assert_close(fast[rows], dense[rows], rtol=0, atol=1e-12)
    assert_close(dense, torch.matmul(weights, torch.cat([slot_v, v.masked_fill(~rows, 0)], dim=-2)))
    grads = [
        torch.autograd.grad(out[rows].square().sum(), [q, k, v, slot_k, slot_v], materialize_grads=True)
        for out in (fast, dense)
    ]
    for fast_grad, dense_grad in zip(*grads):
        assert_close(fast_grad, dense_grad, rtol=0, atol=1e-12)


def _allowed(
    real: torch.Tensor, slot_keep: torch.Tensor, windowed: torch.Tensor, w: int, g: int
) -> torch.Tensor:
    """(b, h, n, s + n) bool, written from the contract one query at a time: what query i may read."""
    b, n = real.shape
    h, s = slot_keep.shape[1], slot_keep.shape[-1]
    allowed = torch.zeros(b, h, n, s + n, dtype=torch.bool)
    for row in range(b):
        for i in range(n):
            for j in range(n):
                if i < g:  # a global query: every real key, no slot
                    allowed[row, :, i, s + j] = bool(real[row, j]) or not real[row].any()
                elif windowed[row]:
                    allowed[row, :, i, s + j] = bool(real[row, j]) and (j < g or abs(i - j) <= w)
            if i >= g:
                allowed[row, :, i, :s] = slot_keep[row, :, 0]
    return allowed


def test_dense_reference_masks_what_the_contract_says() -> None:
    """Each query's weights on what it may read sum to 1 (so none is left for anything else), and every
    real key it may read gets some."""
    torch.manual_seed(0)
    inputs = _core_inputs(n=20, s=3, slot_keep="per-head")
    windowed = torch.tensor([True, False, True])
    w, g = 2, 1
    _, weights = dense_local_attention(*inputs[:3], _keyset(inputs, windowed, w, g), scale=1.0)
    allowed = _allowed(inputs[-1], inputs[-2], windowed, w, g)
    on_allowed = torch.where(allowed, weights, 0.0).sum(-1)  # (b, h, n)
    assert_close(on_allowed, torch.ones_like(on_allowed), rtol=0, atol=1e-12)
    assert (weights[allowed] > 0).all()


# --- half precision ----------------------------------------------------------------------------------


@pytest.mark.parametrize("core", [*FAST_CORES, "eager"])
@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.bfloat16, 2e-2), (torch.float16, 3e-3)])
def test_every_core_in_half_precision_is_close_to_float32(
    core: str, dtype: torch.dtype, tolerance: float
) -> None:
    """On a CPU, per-head slot masks and global tokens included: the output keeps the input's dtype, and is
    within the half type's rounding of the float32 reference on the same (rounded) inputs."""
    torch.manual_seed(0)
    inputs = _core_inputs(n=140, slot_keep="per-head", dtype=dtype)
    windowed = torch.tensor([True, False, True])
    half, _ = WINDOW_CORES[core](*inputs[:3], _keyset(inputs, windowed, 5, 2), scale=0.3)
    wide = [t.float() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    want, _ = dense_local_attention(*wide[:3], _keyset(wide, windowed, 5, 2), scale=0.3)
    assert half.dtype == dtype
    rows = inputs[-1][:, None, :, None].expand_as(want)
    assert_close(half.float()[rows], want[rows], rtol=tolerance, atol=tolerance)


# --- the split core's two paths: the fused kernel (a CPU forward) and the explicit one -----------------


@pytest.fixture
def fused_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the split core's calls of PyTorch's fused CPU kernel (`_fused_part`)."""
    calls: list[int] = []
    fused = local_split._fused_part

    def counted(*args):
        calls.append(1)
        return fused(*args)

    monkeypatch.setattr(local_split, "_fused_part", counted)
    return calls


@pytest.mark.parametrize("n", [5, 50, 130])  # below one block (B = 32), and blocks with the last one cut
@pytest.mark.parametrize("window", [None, 0, 5, 100])
@pytest.mark.parametrize("global_tokens", [0, 1])
@pytest.mark.parametrize("slot_keep", ["rows", "per-head"])
@pytest.mark.parametrize("path", ["fused", "fused+backward", "explicit"])
def test_split_core_on_every_path_equals_the_dense_reference(
    n: int, window: int | None, global_tokens: int, slot_keep: str, path: str, fused_calls: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The fused kernel without gradients, the fused kernel with its backward per part against the merged
    softmax (`FusedWindow`), and explicit scores (dropout, off the CPU: forced here): each equals the reference
    to float64 round-off, the last two in gradients too."""
    torch.manual_seed(0)
    monkeypatch.setattr(local_split, "_path", lambda *_: path)
    inputs = _core_inputs(n, slot_keep=slot_keep)
    q, k, v, slot_k, slot_v, _, real = inputs
    keyset = _keyset(inputs, torch.tensor([True, False, True]), window, global_tokens)
    grad = path != "fused"
    with torch.set_grad_enabled(grad):
        split, _ = split_local_attention(q, k, v, keyset, scale=0.3)
        dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    assert bool(fused_calls) is (path != "explicit")
    rows = real[:, None, :, None].expand_as(split)
    assert_close(split[rows], dense[rows], rtol=0, atol=1e-12)
    if grad:
        grads = [
            torch.autograd.grad(out[rows].square().sum(), [q, k, v, slot_k, slot_v], materialize_grads=True)
            for out in (split, dense)
        ]
        for split_grad, dense_grad in zip(*grads):
            assert_close(split_grad, dense_grad, rtol=0, atol=1e-12)


@pytest.mark.parametrize("grad", [False, True])
def test_split_core_gives_a_query_with_no_key_zero_and_finite_gradients(grad: bool) -> None:
    """Row 1 is all padding and keeps no slot (outside the projection's contract, to reach the case): its
    non-global queries have no key in either part (both log-sum-exps -inf) and get 0; its global queries
    follow `fill_empty_rows` as in every core. The other rows still equal the reference."""
    torch.manual_seed(0)
    n, g = 70, 1
    inputs = list(_core_inputs(n, slot_keep="rows"))
    q, k, v, slot_k, slot_v, slot_keep, _ = inputs
    slot_keep[1] = False
    real = inputs[-1] = length_mask([n, 0, 3], n)
    keyset = _keyset(inputs, None, 5, g)
    with torch.set_grad_enabled(grad):
        split, _ = split_local_attention(q, k, v, keyset, scale=0.3)
        dense, _ = dense_local_attention(q, k, v, keyset, scale=0.3)
    assert split.isfinite().all()
    assert split[1, :, g:].abs().max() == 0
    assert_close(split[1, :, :g], dense[1, :, :g], rtol=0, atol=1e-12)
    rows = real[:, None, :, None].expand_as(split)
    assert_close(split[rows], dense[rows], rtol=0, atol=1e-12)
    if grad:
        for grad_all in torch.autograd.grad(
            split.square().sum(), [q, k, v, slot_k, slot_v], retain_graph=True
        ):
            assert grad_all.isfinite().all()
        grads = [
            torch.autograd.grad(out[rows].square().sum(), [q, k, v, slot_k, slot_v], materialize_grads=True)
            for out in (split, dense)
        ]
        for split_grad, dense_grad in zip(*grads):  # (the reference's row 1 is NaN: a softmax over nothing)
            assert_close(split_grad[[0, 2]], dense_grad[[0, 2]], rtol=0, atol=1e-12)


@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.bfloat16, 2e-2), (torch.float16, 3e-3)])
def test_split_core_fused_in_half_precision_is_close_to_float32(
    dtype: torch.dtype, tolerance: float, fused_calls: list[int]
) -> None:
    """The fused path of half precision inputs (the explicit one: the half precision test above)."""
    torch.manual_seed(0)
    inputs = _core_inputs(n=140, slot_keep="per-head", dtype=dtype)
    windowed = torch.tensor([True, False, True])
    with torch.no_grad():
        half, _ = split_local_attention(*inputs[:3], _keyset(inputs, windowed, 5, 2), scale=0.3)
    wide = [t.float() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    want, _ = dense_local_attention(*wide[:3], _keyset(wide, windowed, 5, 2), scale=0.3)
    assert fused_calls
    assert half.dtype == dtype
    rows = inputs[-1][:, None, :, None].expand_as(want)
    assert_close(half.float()[rows], want[rows], rtol=tolerance, atol=tolerance)


def test_split_core_dropout_is_dropout_on_the_merged_weights(fused_calls: list[int]) -> None:
    """Each part's normalised weights dropped (the fused kernel has no dropout: the explicit path): one draw
    differs from the output without dropout, the mean of many draws is it (dropout keeps the mean)."""
    torch.manual_seed(0)
    inputs = _core_inputs(n=40, slot_keep="rows")
    real = inputs[-1]
    keyset = _keyset(inputs, None, 5, 1)
    with torch.no_grad():
        want, _ = dense_local_attention(*inputs[:3], keyset, scale=0.3)
        draws = torch.stack(
            [split_local_attention(*inputs[:3], keyset, scale=0.3, dropout_p=0.3)[0] for _ in range(400)]
        )
    assert not fused_calls
    rows = real[:, None, :, None].expand_as(want)
    assert (draws[0] - want)[rows].abs().max() > 0.1
    assert_close(draws.mean(0)[rows], want[rows], rtol=0, atol=0.1)


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


@pytest.mark.parametrize("backend", ["auto", "sdpa", "blocked", "split"])  # cores: sdpa, sdpa, banded, split
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


@pytest.mark.parametrize("backend", ["auto", "sdpa", "blocked", "eager", "split"])
def test_no_nan_for_all_pad_rows(backend: str) -> None:
    layer = _layer(local_window=2, global_tokens=1, backend=backend)
    x, _ = padded_states([16, 16], N, D)
    mask = torch.zeros(2, N, dtype=torch.bool)
    mask[0] = True
    assert not layer(x, mask).isnan().any()


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


@pytest.mark.parametrize("grad", [True, False])  # "auto" picks the SDPA core, and the split core
def test_compiled_layer_matches_eager(grad: bool) -> None:
    torch.manual_seed(0)
    layer = LinformerSelfAttention(D, H, N, K, local_window=3, global_tokens=1, short_inputs="exact").eval()
    x, mask = padded_states(LENGTHS, N, D)
    x, mask = x.float(), mask
    compiled = torch.compile(layer, fullgraph=True)
    with torch.set_grad_enabled(grad):
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
