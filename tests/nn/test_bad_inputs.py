"""Bad input to the torch-only layer: a clear error at construction, and pad content that changes nothing.

The case tables are part of the issue-13 sweep (see tests/bad_input_checks.py for how each case is
classified); the exact-message tests below them pin the ValueError text (the value and the limit).
"""

from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from linformer_kit.nn import (
    PROJECTION_KINDS,
    SHARING_MODES,
    LinformerSelfAttention,
    SequenceProjection,
    eager_attention,
)
from tests.bad_input_checks import check_handled, check_raises
from tests.fixtures.batches import padded_states

D, H, N = 32, 4, 16
WRONG = (TypeError, ValueError)

# (positional args, keyword args, a regex naming the bad value)
LAYER_CASES = {
    "k float": ((D, H, N, 8.0), {}, r"projected_length.*8\.0"),
    "k 32.0 (the issue's)": ((64, 4, 128, 32.0), {}, r"projected_length.*32\.0"),
    "k bool": ((D, H, N, True), {}, r"projected_length.*True"),
    "k str": ((D, H, N, "8"), {}, r"projected_length.*'8'"),
    "k negative": ((D, H, N, -4), {}, r"projected_length.*-4"),
    "hidden_size 0": ((0, H, N, 4), {}, r"hidden_size.*0"),
    "hidden_size negative": ((-32, -4, N, 4), {}, r"hidden_size.*-32"),
    "hidden_size float": ((32.0, H, N, 4), {}, r"hidden_size.*32\.0"),
    "num_heads 0": ((D, 0, N, 4), {}, r"num_heads.*0"),
    "num_heads float": ((D, 4.0, N, 4), {}, r"num_heads.*4\.0"),
    "max_seq_len 0": ((D, H, 0, None), {}, r"max_seq_len.*0"),
    "max_seq_len float": ((D, H, 16.5, 4), {}, r"max_seq_len.*16\.5"),
    "sharing E": ((D, H, N, 4), {"sharing": "E"}, r"sharing.*'E'"),
    "sharing None": ((D, H, N, 4), {"sharing": None}, r"sharing.*None"),
    "projection None": ((D, H, N, 4), {"projection": None}, r"projection.*None"),
    "shared_projection str": (
        (D, H, N, 4),
        {"sharing": "layerwise", "shared_projection": "E"},
        r"shared_projection.*'E'",
    ),
    "shared_projection str, headwise": ((D, H, N, 4), {"shared_projection": "E"}, r"shared_projection.*'E'"),
    "dropout negative": ((D, H, N, 4), {"dropout": -0.1}, r"dropout.*-0\.1"),
    "dropout nan": ((D, H, N, 4), {"dropout": float("nan")}, r"dropout.*nan"),
    "dropout 1": ((D, H, N, 4), {"dropout": 1.0}, r"dropout.*1\.0"),
    "backend flash": ((D, H, N, 4), {"backend": "flash"}, r"backend.*'flash'"),
    "order fast": ((D, H, N, 4), {"projection_order": "fast"}, r"projection_order.*'fast'"),
    "causal with k": ((D, H, N, 4), {"causal": True}, r"causal=True.*projected_length=4"),
    "bias str": ((D, H, N, 4), {"bias": "no"}, r"bias.*'no'"),
    "causal str": ((D, H, N, None), {"causal": "yes"}, r"causal.*'yes'"),
    "mean k not dividing n": ((D, H, N, 5), {"projection": "mean"}, r"k=5 must divide max_seq_len=16"),
}


@pytest.mark.parametrize("case", LAYER_CASES)
def test_layer_constructor(case: str) -> None:
    args, kwargs, match = LAYER_CASES[case]
    check_raises(lambda: LinformerSelfAttention(*args, **kwargs), WRONG, match)


PROJECTION_CASES = {
    "n 0": ((0, 4), {}, r"max_seq_len.*0"),
    "k float": ((N, 4.0), {}, r"projected_length.*4\.0"),
    "k 0": ((N, 0), {}, r"k=0"),
    "kind E": ((N, 4, "E"), {}, r"kind.*'E'"),
    "num_heads 0": ((N, 4), {"num_heads": 0}, r"num_heads.*0"),
    "num_heads float": ((N, 4), {"num_heads": 2.0}, r"num_heads.*2\.0"),
}


@pytest.mark.parametrize("case", PROJECTION_CASES)
def test_projection_constructor(case: str) -> None:
    args, kwargs, match = PROJECTION_CASES[case]
    check_raises(lambda: SequenceProjection(*args, **kwargs), WRONG, match)


FORWARD_CASES = {
    "2-D input": (torch.randn(N, D), None, r"expected input of shape"),
    "integer input": (torch.ones(1, N, D, dtype=torch.long), None, r"floating.*torch\.int64"),
    "too long": (torch.randn(1, N + 1, D), None, r"sequence length 17 exceeds max_seq_len=16"),
    "int mask": (torch.randn(2, 8, D), torch.ones(2, 8, dtype=torch.long), r"torch\.bool.*torch\.int64"),
    "mask shape": (torch.randn(2, 8, D), torch.ones(2, 9, dtype=torch.bool), r"\(2, 8\), got \(2, 9\)"),
}


@pytest.mark.parametrize("case", FORWARD_CASES)
def test_forward_input(case: str) -> None:
    x, mask, match = FORWARD_CASES[case]
    layer = LinformerSelfAttention(D, H, N, 4)
    check_raises(lambda: layer(x, mask), WRONG, match)


# --- exact messages: ValueError naming the value and the limit -------------------------------------------


def test_too_long_input_names_length_and_limit() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"sequence length 17 exceeds max_seq_len=16"):
        layer(torch.randn(1, 17, D))


def test_wrong_hidden_size() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"hidden_size=32\), got \(1, 8, 31\)"):
        layer(torch.randn(1, 8, 31))


def test_mask_of_wrong_dtype() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"torch.bool .* got dtype torch.int64"):
        layer(torch.randn(2, 8, D), torch.ones(2, 8, dtype=torch.long))


def test_mask_of_wrong_shape() -> None:
    layer = LinformerSelfAttention(D, H, N, 4)
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len\) = \(2, 8\), got \(2, 9\)"):
        layer(torch.randn(2, 8, D), torch.ones(2, 9, dtype=torch.bool))


def test_causal_linformer_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"causal=True is not supported with projected_length=4.*leaks the future"
    ):
        LinformerSelfAttention(D, H, N, 4, causal=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"projected_length": 17}, r"k=17\) must be between 1 and max_seq_len=16"),
        ({"projected_length": 0}, r"k=0\) must be between 1 and max_seq_len=16"),
        ({"sharing": "heads"}, r"sharing must be one of .* got 'heads'"),
        ({"projection": "pool"}, r"projection must be one of .* got 'pool'"),
        ({"projection": "mean", "projected_length": 5}, r"k=5 must divide max_seq_len=16"),
        ({"backend": "flash"}, r"backend must be one of .* got 'flash'"),
        ({"dropout": 1.0}, r"dropout must be in \[0, 1\), got 1.0"),
        ({"num_heads": 5}, r"hidden_size=32 must be divisible by num_heads=5"),
        ({"projection_order": "fast"}, r"projection_order must be one of .* got 'fast'"),
    ],
)
def test_bad_constructor_arguments(kwargs: dict, message: str) -> None:
    args = {"hidden_size": D, "num_heads": H, "max_seq_len": N, "projected_length": 4} | kwargs
    with pytest.raises(ValueError, match=message):
        LinformerSelfAttention(**args)


def test_shared_projection_must_match_the_layer() -> None:
    shared = SequenceProjection(N, 8)
    with pytest.raises(ValueError, match=r"\(max_seq_len, k\)=\(16, 8\), but this layer has \(16, 4\)"):
        LinformerSelfAttention(D, H, N, 4, sharing="layerwise", shared_projection=shared)
    with pytest.raises(ValueError, match=r"only used with sharing='layerwise', got sharing='kv'"):
        LinformerSelfAttention(D, H, N, 8, sharing="kv", shared_projection=shared)


# --- pad content: NaN / inf in a padded position must not reach a real one ------------------------------

LENGTHS = [16, 11, 4, 1]
PAD_CONFIGS = [
    *[(sharing, kind, "auto") for sharing in SHARING_MODES for kind in PROJECTION_KINDS],
    *[(sharing, kind, "paper") for sharing in ("headwise", "kv") for kind in ("linear", "random")],
    ("full", "linear", "auto"),
]


def _padded(value: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x, mask = padded_states(LENGTHS, N, D)
    poisoned = x.masked_fill(~mask[..., None], value)
    return x, poisoned, mask


@pytest.mark.parametrize(("sharing", "kind", "order"), PAD_CONFIGS)
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("backend", ["sdpa", "blocked", "eager"])
def test_non_finite_pad_content_changes_nothing(
    sharing: str, kind: str, order: str, value: float, backend: str
) -> None:
    k = None if sharing == "full" else 4
    layer = LinformerSelfAttention(
        D, H, N, k, sharing="headwise" if sharing == "full" else sharing, projection=kind,
        projection_order=order, backend=backend,
    ).double().eval()  # fmt: skip
    with torch.no_grad():
        layer.key.bias.normal_()
        layer.value.bias.normal_()
    x, poisoned, mask = _padded(value)
    real = mask[..., None].expand(-1, -1, D)
    clean, dirty = layer(x, mask)[real], layer(poisoned, mask)[real]
    same = bool(torch.isfinite(dirty).all()) and torch.allclose(clean, dirty)
    check_handled(same, f"{value} in pad positions changed real outputs ({sharing}, {kind}, {order})")


# --- precision: the eager backend promotes half precision only ------------------------------------------


def test_eager_keeps_float64() -> None:
    q, k, v = (torch.randn(2, H, 8, 8, dtype=torch.float64) for _ in range(3))
    out, weights = eager_attention(q, k, v, None, scale=0.125)
    reference = torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v
    ok = out.dtype == weights.dtype == torch.float64 and torch.allclose(out, reference, rtol=0, atol=1e-12)
    check_handled(ok, f"eager attention ran float64 input at {weights.dtype}")


def test_eager_and_sdpa_agree_in_float64() -> None:
    torch.manual_seed(0)
    eager = LinformerSelfAttention(D, H, N, 4, backend="eager").double()
    sdpa = LinformerSelfAttention(D, H, N, 4, backend="sdpa").double()
    sdpa.load_state_dict(eager.state_dict())
    x = torch.randn(2, N, D, dtype=torch.float64)
    gap = (eager(x) - sdpa(x)).abs().max().item()
    check_handled(gap < 1e-12, f"float64 eager and sdpa differ by {gap:.1e}")


@pytest.mark.parametrize("k", [4, None])
def test_eager_passes_gradcheck(k: int | None) -> None:
    layer = LinformerSelfAttention(8, 2, 6, k, backend="eager").double()
    x = torch.randn(1, 6, 8, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True] * 4 + [False] * 2])
    ok = torch.autograd.gradcheck(lambda t: layer(t, mask), (x,), raise_exception=False)
    check_handled(ok, "gradcheck fails on the eager backend")


def test_half_precision_is_still_promoted() -> None:
    q, k, v = (torch.randn(1, 2, 4, 8, dtype=torch.bfloat16) for _ in range(3))
    _, weights = eager_attention(q, k, v, None, scale=0.35)
    assert weights.dtype == torch.float32
    assert_close(weights, torch.softmax(q.float() @ k.float().transpose(-1, -2) * 0.35, dim=-1))
