"""`linformer extend SRC DST --max-length N`: a saved Linformer read at longer inputs, its options kept."""

from __future__ import annotations

import json
import re

import pytest
import torch
from tests.fixtures.models import N, tiny_linformer_config, tiny_source
from tests.fixtures.tokenizers import write_tokenizer
from torch.testing import assert_close
from transformers import AutoModelForSequenceClassification

from linformer_kit.cli.main import main
from linformer_kit.models import LinformerForSequenceClassification
from linformer_kit.models.config_rules import longest_input
from linformer_kit.models.extend import ExtendConfig, extended, shortened

OPTIONS = {"projected_length": [8, 4], "sharing": "kv", "local_window": [4, None], "global_tokens": 1,
           "short_inputs": "exact"}  # fmt: skip


@pytest.fixture
def saved(tmp_path):
    """A tiny windowed Linformer classifier with its tokenizer, trained-looking E, F (not at their start)."""
    torch.manual_seed(0)
    model = LinformerForSequenceClassification(tiny_linformer_config(**OPTIONS)).eval()
    with torch.no_grad():
        for name, tensor in model.named_parameters():
            if "projection" in name:
                tensor.add_(0.1 * torch.randn_like(tensor))
    model.save_pretrained(tmp_path / "src")
    write_tokenizer(tmp_path / "src")
    return model, tmp_path / "src"


def _window_start(k: int, n: int) -> torch.Tensor:
    """(k, n): slot j the mean of the j-th of k windows of n / k positions (the "window" start, written out)."""
    width = n // k
    return (torch.arange(n)[None, :] // width == torch.arange(k)[:, None]).float() / width


def test_extend_keeps_every_weight_and_option_and_wraps_the_positions(saved, tmp_path) -> None:
    model, src = saved
    assert main(["extend", str(src), str(tmp_path / "dst"), "--max-length", str(3 * N)]) == 0
    longer = AutoModelForSequenceClassification.from_pretrained(tmp_path / "dst").eval()
    assert type(longer) is LinformerForSequenceClassification  # the head kept
    assert longest_input(longer.config) == 3 * N
    for name, value in OPTIONS.items():
        assert getattr(longer.config, name) == value, name
    before, after = model.state_dict(), longer.state_dict()
    kept = [name for name in before if "projection" not in name and "position_embeddings" not in name]
    for name in kept:
        assert_close(after[name], before[name], rtol=0, atol=0, msg=name)
    table, first = before["linformer.embeddings.position_embeddings.weight"], 2  # RoBERTa numbering: pad + 1
    wrapped = torch.cat([table[:first], table[first + torch.arange(3 * N) % N]])  # position p: row p mod N
    projections = [f"linformer.encoder.layer.{i}.attention.self.kv_projection.weight" for i in range(2)]
    starts = [_window_start(k, 3 * N) for k in OPTIONS["projected_length"]]  # E = F (sharing "kv"), per layer
    assert_close(
        after["linformer.embeddings.position_embeddings.weight"][first:], wrapped[first:], rtol=0, atol=0
    )
    for name, start in zip(projections, starts, strict=True):  # new, (k x 3N), at projection_init "window"
        assert_close(after[name], start, rtol=0, atol=0)
    # the written model is one built at 3N from those parts, independently, on a long padded input
    expected = LinformerForSequenceClassification(
        tiny_linformer_config(**OPTIONS, max_position_embeddings=3 * N + first)
    ).eval()
    parts = {**expected.state_dict(), **{name: before[name] for name in kept}}
    parts["linformer.embeddings.position_embeddings.weight"] = wrapped
    parts.update(zip(projections, starts))
    expected.load_state_dict(parts)
    ids = torch.randint(3, 64, (2, 3 * N))
    mask = torch.ones_like(ids)
    mask[1, 2 * N :] = 0
    with torch.no_grad():
        got, want = (m.linformer(ids, attention_mask=mask).last_hidden_state for m in (longer, expected))
        assert_close(longer(ids, attention_mask=mask).logits, expected(ids, attention_mask=mask).logits)
    assert_close(got[mask.bool()], want[mask.bool()])  # every real token (the logits read one)
    assert json.loads((tmp_path / "dst" / "tokenizer_config.json").read_text())["model_max_length"] == 3 * N


def test_extended_reads_short_rows_as_the_original_does(saved) -> None:
    """A row of at most k real tokens (short_inputs="exact") attends exactly, with no E, and its positions
    are the original's: there the extended model is the original, alone or padded into a longer batch."""
    model, _ = saved
    longer = extended(model, 3 * N)
    ids = torch.randint(3, 64, (3, 12))
    mask = torch.zeros_like(ids)
    mask[0, :4], mask[1, :3], mask[2, :1] = 1, 1, 1  # at most min(k) = 4 real tokens
    full = torch.ones_like(ids)  # rows of 12 real tokens: projected through E, which is new
    with torch.no_grad():
        short, want = (m.linformer(ids, attention_mask=mask).last_hidden_state for m in (longer, model))
        alone, want_alone = (m.linformer(ids[:1, :4]).last_hidden_state for m in (longer, model))
        long, other = (m.linformer(ids, attention_mask=full).last_hidden_state for m in (longer, model))
    assert_close(short[mask.bool()], want[mask.bool()])
    assert_close(alone, want_alone)
    assert (long - other).abs().max() > 1e-3


def test_extended_at_or_below_the_longest_input_is_the_model_itself(saved) -> None:
    model, _ = saved
    assert extended(model, N) is model


@pytest.mark.parametrize("max_length", [N, N - 1, 64.5, True])
def test_extend_refuses_a_length_it_cannot_extend_to(saved, tmp_path, max_length) -> None:
    _, src = saved
    message = rf"max_length must be an integer above the source's longest input \(32\), got {max_length}"
    with pytest.raises(ValueError, match=message):
        ExtendConfig(str(src), str(tmp_path / "dst"), max_length)
    assert not (tmp_path / "dst").exists()


def test_extend_refuses_a_roberta_source_and_convert_a_linformer_naming_the_other_verb(
    saved, tmp_path, capsys
) -> None:
    _, linformer = saved
    tiny_source("roberta", "ForMaskedLM").save_pretrained(tmp_path / "roberta")
    assert main(["extend", str(tmp_path / "roberta"), str(tmp_path / "a"), "--max-length", "64"]) == 2
    assert "is a 'roberta' model: `linformer convert SRC DST --max-length N`" in capsys.readouterr().err
    assert main(["convert", str(linformer), str(tmp_path / "b"), "--max-length", "64"]) == 2
    assert "is a Linformer already: `linformer extend SRC DST --max-length N`" in capsys.readouterr().err
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def test_extend_never_writes_into_its_source(saved, capsys) -> None:
    _, src = saved
    files = sorted(p.name for p in src.iterdir())
    assert main(["extend", str(src), str(src), "--max-length", "64", "--overwrite"]) == 2
    assert "is (or contains) the source directory" in capsys.readouterr().err
    assert sorted(p.name for p in src.iterdir()) == files


def test_extend_sets_exact_length_and_the_rows_it_covers_take_exact_attention(saved, tmp_path) -> None:
    model, src = saved
    assert (
        main(["extend", str(src), str(tmp_path / "dst"), "--max-length", "64", "--exact-length", str(N)]) == 0
    )
    assert json.loads((tmp_path / "dst" / "config.json").read_text())["exact_length"] == N
    longer = extended(model, 64, exact_length=N)
    full = extended(model, 64)
    for layer in full.linformer.encoder.layer:  # the same weights, every input attended exactly
        layer.attention.self.projected_length = None
    ids = torch.randint(3, 64, (2, 40))
    mask = torch.ones_like(ids)
    mask[1, N:] = 0  # row 1: N real tokens, padded into a batch of 40 (projected row 0)
    with torch.no_grad():
        got, want = (m.linformer(ids, attention_mask=mask).last_hidden_state for m in (longer, full))
    assert_close(got[1, :N], want[1, :N])
    assert (got[0] - want[0]).abs().max() > 1e-3  # 40 > N real tokens: projected


@pytest.mark.parametrize(
    ("exact_length", "message"),
    [
        ("6", r"exact_length=6 must be at least projected_length k=8"),
        ("64", r"exact_length=64 must be below"),
    ],
)
def test_extend_refuses_an_exact_length_before_reading_weights(
    saved, tmp_path, capsys, exact_length, message
):
    _, src = saved
    argv = ["extend", str(src), str(tmp_path / "dst"), "--max-length", "64", "--exact-length", exact_length]
    assert main(argv) == 2
    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "dst").exists()


# --- shortened: read at a shorter longest input ---------------------------------------------------------


def test_shortened_gives_every_input_it_reads_the_original_output(saved) -> None:
    """E, F cut to their first columns and the positions to their first rows: every input of at most the
    new longest input, padded or not, projected or exact, has the original's output (float64)."""
    model, _ = saved
    model = model.double()
    short = shortened(model, N // 2)
    assert longest_input(short.config) == N // 2
    assert short.linformer.encoder.layer[0].attention.self.kv_projection.weight.shape == (8, N // 2)
    torch.manual_seed(1)
    for n in (3, 9, N // 2):
        ids = torch.randint(3, 64, (2, n))
        mask = torch.ones_like(ids)
        mask[1, n // 2 + 1 :] = 0
        with torch.no_grad():
            got, want = (m.linformer(ids, attention_mask=mask).last_hidden_state for m in (short, model))
        assert_close(got[mask.bool()], want[mask.bool()])
    with pytest.raises(ValueError, match=r"sequence length 17 exceeds max_seq_len=16"):
        short.linformer(torch.randint(3, 64, (1, N // 2 + 1)))


@pytest.mark.parametrize(
    ("max_length", "overrides", "message"),
    [
        (N + 1, {}, rf"max_length must be an integer in \[2, {N}\].*got {N + 1}"),
        (1, {}, r"max_length must be an integer in \[2, 32\].*got 1"),
        (8, {"projection": "mean"}, r"projection 'mean' is sized by the longest input \(32\)"),
    ],
)
def test_shortened_refuses_what_it_cannot_cut(max_length, overrides, message) -> None:
    model = LinformerForSequenceClassification(tiny_linformer_config(**{**OPTIONS, **overrides}))
    with pytest.raises(ValueError, match=message):
        shortened(model, max_length)


def test_shortened_at_the_longest_input_is_the_model_itself(saved) -> None:
    model, _ = saved
    assert shortened(model, N) is model


def test_shortened_masked_lm_keeps_its_head_tied_to_the_word_embeddings() -> None:
    from linformer_kit.models import LinformerForMaskedLM

    torch.manual_seed(0)
    model = LinformerForMaskedLM(tiny_linformer_config(**OPTIONS)).eval()
    short = shortened(model, N // 2)
    assert short.get_output_embeddings().weight is short.get_input_embeddings().weight
    ids = torch.randint(3, 64, (2, 12))
    with torch.no_grad():
        assert_close(short(ids).logits, model(ids).logits)


def test_shortened_within_exact_length_is_full_attention_with_the_same_outputs() -> None:
    """At max_length <= exact_length every input is exact: the shortened model is full attention (no E, F,
    no window) and gives the outputs of the model with exact_length, padded rows too."""
    torch.manual_seed(0)
    model = (
        LinformerForSequenceClassification(tiny_linformer_config(**OPTIONS, exact_length=12)).double().eval()
    )
    short = shortened(model, 10)
    assert (short.config.projected_length, short.config.local_window, short.config.exact_length) == (
        None,
        None,
        None,
    )
    assert not any("projection" in name for name, _ in short.named_parameters())
    ids = torch.randint(3, 64, (2, 10))
    mask = torch.ones_like(ids)
    mask[1, 6:] = 0
    with torch.no_grad():
        got, want = (m.linformer(ids, attention_mask=mask).last_hidden_state for m in (short, model))
    assert_close(got[mask.bool()], want[mask.bool()])
