"""Converting to a longer input: the position table wraps (models/convert.py, "Longer inputs").

    row(p) = first + (p mod L),  first = pad_token_id + 1 (RoBERTa) or 0 (BERT),  p = 0 .. N-1,
RoBERTa's rows 0 .. pad_token_id kept; every other weight kept; E, F sized for N.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import torch
from tests.fixtures.batches import padded_batch
from tests.fixtures.models import N, save_tiny_source, tiny_linformer_config, tiny_source
from torch.testing import assert_close

from linformer_kit.cli.main import main
from linformer_kit.models import (
    ConvertConfig,
    LinformerForMaskedLM,
    from_bert,
    from_roberta,
    with_linformer_options,
)
from linformer_kit.models.convert import extend_position_table
from linformer_kit.nn import SequenceProjection
from linformer_kit.train.init_from import linformer_from_checkpoint

LONGER = 2 * N + 11  # 75: past two whole wraps of the 32 trained positions
CONVERTERS = {"roberta": from_roberta, "roberta-prelayernorm": from_roberta, "bert": from_bert}
FIRST = {
    "roberta": 2,
    "roberta-prelayernorm": 2,
    "bert": 0,
}  # the row of position 0 (pad_token_id 1, or none)


def positions(model: torch.nn.Module) -> torch.Tensor:
    return model.base_model.embeddings.position_embeddings.weight.detach()


@pytest.mark.parametrize("family", ["roberta", "roberta-prelayernorm", "bert"])
def test_new_positions_copy_the_trained_row_of_p_mod_the_length(family: str) -> None:
    source = tiny_source(family, "ForMaskedLM")
    model = CONVERTERS[family](source, projected_length=8, max_length=LONGER)
    first, table, trained = FIRST[family], positions(model), positions(source)
    assert model.config.max_seq_len == LONGER
    assert table.shape == (first + LONGER, trained.shape[1])
    assert torch.equal(table[:first], trained[:first])  # RoBERTa's rows below position 0 (the pad row) kept
    for p in range(LONGER):
        assert torch.equal(table[first + p], trained[first + p % N]), p
    prefix = {"roberta": "roberta.", "roberta-prelayernorm": "roberta_prelayernorm.", "bert": "bert."}[family]
    target, checked = model.state_dict(), 0
    for name, tensor in source.state_dict().items():  # every other encoder weight kept as it was
        key = "linformer." + name.removeprefix(prefix).replace(
            ".attention.output.dense.", ".attention.self.dense."
        )
        if name.startswith(prefix) and key in target and not key.endswith("position_embeddings.weight"):
            assert torch.equal(target[key], tensor), key
            checked += 1
    assert checked > 20
    for module in model.modules():  # E and F for the new length, starting as windows
        if isinstance(module, SequenceProjection):
            assert module.weight.shape[-1] == LONGER
            assert module.max_seq_len == LONGER


def test_extend_position_table_is_a_wrap() -> None:
    table = torch.arange(5.0)[:, None]  # rows 0, 1 special, positions 0..2 at rows 2..4
    assert extend_position_table(table, 2, 7).flatten().tolist() == [0, 1, 2, 3, 4, 2, 3, 4, 2]
    assert extend_position_table(table, 0, 7).flatten().tolist() == [0, 1, 2, 3, 4, 0, 1]


@pytest.mark.parametrize("family", ["roberta", "bert"])
def test_full_attention_keeps_the_sources_outputs_on_what_it_could_read(family: str) -> None:
    source = tiny_source(family, "ForMaskedLM")
    model = CONVERTERS[family](source, projected_length=None, max_length=LONGER)
    input_ids, attention_mask = padded_batch(source.config.pad_token_id, n=N)  # up to the source's longest
    with torch.no_grad():
        assert_close(model(input_ids, attention_mask=attention_mask).logits,
                     source(input_ids, attention_mask=attention_mask).logits)  # fmt: skip


@pytest.mark.parametrize("projected_length", [None, 8])
def test_a_forward_at_the_new_length_runs(projected_length: int | None) -> None:
    source = tiny_source("roberta", "ForMaskedLM")
    model = from_roberta(source, projected_length=projected_length, max_length=LONGER)
    input_ids, attention_mask = padded_batch(source.config.pad_token_id, n=LONGER)
    with torch.no_grad():
        logits = model(input_ids, attention_mask=attention_mask).logits
    assert logits.shape == (3, LONGER, source.config.vocab_size)
    assert torch.isfinite(logits).all()


def test_a_linformer_extends_the_same_way() -> None:
    # `linformer pretrain --init-from DIR --seq-len N` on a Linformer: with_linformer_options(max_length=N)
    torch.manual_seed(0)
    linformer = LinformerForMaskedLM(tiny_linformer_config(projected_length=None)).eval()
    longer, new = with_linformer_options(linformer, None, "headwise", "linear", max_length=LONGER)
    assert new == []  # nothing re-initialised: the table was extended, not replaced
    assert torch.equal(positions(longer)[2 + 40], positions(linformer)[2 + 40 % N])
    input_ids, attention_mask = padded_batch(linformer.config.pad_token_id, n=N)
    with torch.no_grad():
        assert_close(longer(input_ids, attention_mask=attention_mask).logits,
                     linformer(input_ids, attention_mask=attention_mask).logits)  # fmt: skip

    projected, new = with_linformer_options(linformer, 8, "headwise", "linear", max_length=LONGER)
    assert new  # E, F for n = LONGER
    assert all("projection" in name for name in new)
    assert projected.config.max_seq_len == LONGER


def test_init_from_path_extends_roberta_and_linformer_checkpoints(tmp_path: Path) -> None:
    save_tiny_source(tmp_path / "roberta")
    model, new = linformer_from_checkpoint(str(tmp_path / "roberta"), 8, "kv", "linear", max_length=LONGER)
    assert model.config.max_seq_len == LONGER
    assert new  # E (kv: one per layer) for n = LONGER
    assert all("projection" in name for name in new)
    LinformerForMaskedLM(tiny_linformer_config()).save_pretrained(tmp_path / "linformer")
    model, _ = linformer_from_checkpoint(
        str(tmp_path / "linformer"), 8, "headwise", "linear", max_length=LONGER
    )
    assert model.config.max_seq_len == LONGER


@pytest.mark.parametrize("family", ["roberta", "bert"])
def test_a_shorter_max_length_is_refused_naming_both(family: str) -> None:
    source = tiny_source(family, "ForMaskedLM")
    with pytest.raises(ValueError, match=rf"max_length=20 is below the source's longest input {N}"):
        CONVERTERS[family](source, projected_length=8, max_length=20)
    same = CONVERTERS[family](source, projected_length=8, max_length=N)  # the source's own length: no change
    assert torch.equal(positions(same), positions(source))
    linformer = LinformerForMaskedLM(tiny_linformer_config())
    with pytest.raises(ValueError, match=rf"max_length=20 is below the source's longest input {N}"):
        with_linformer_options(linformer, 8, "headwise", "linear", max_length=20)


def test_convert_cli_extends_names_it_and_gives_the_tokenizer_the_length(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    save_tiny_source(tmp_path / "src")
    argv = [
        "convert",
        str(tmp_path / "src"),
        str(tmp_path / "dst"),
        "--projected-length",
        "8",
        "--max-length",
    ]
    assert main([*argv, str(LONGER)]) == 0
    out = capsys.readouterr().out
    assert f"positions extended from {N} to {LONGER}: position p takes the trained row of p mod {N}" in out
    assert out.count("positions extended") == 1
    config = json.loads((tmp_path / "dst" / "config.json").read_text())
    assert config["max_position_embeddings"] == LONGER + 2
    assert json.loads((tmp_path / "dst" / "tokenizer_config.json").read_text())["model_max_length"] == LONGER

    assert main([*argv, "20", "--overwrite"]) == 2
    assert f"max_length=20 is below the source's longest input {N}" in capsys.readouterr().err


def test_convert_config_refuses_a_shorter_length(tmp_path: Path) -> None:
    save_tiny_source(tmp_path / "src")
    with pytest.raises(ValueError, match=r"max_length=8 is below the source's longest input 32"):
        ConvertConfig(source=str(tmp_path / "src"), output_dir=str(tmp_path / "dst"), max_length=8)


def test_the_log_line_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="linformer_kit"):
        from_bert(tiny_source("bert", "ForMaskedLM"), projected_length=None, max_length=LONGER)
    lines = [r.getMessage() for r in caplog.records if "positions extended" in r.getMessage()]
    assert lines == [
        f"positions extended from {N} to {LONGER}: position p takes the trained row of p mod {N}; "
        f"E and F are sized for {LONGER}"
    ]


# --- new_positions="random": the ablation of the copy ----------------------------------------------


@pytest.mark.parametrize("family", ["roberta", "bert"])
def test_random_new_positions_keep_the_trained_rows_and_start_the_rest_new(family: str) -> None:
    source = tiny_source(family, "ForMaskedLM")
    torch.manual_seed(0)
    model = CONVERTERS[family](source, projected_length=8, max_length=LONGER, new_positions="random")
    first, table, trained = FIRST[family], positions(model), positions(source)
    assert torch.equal(table[: first + N], trained)  # the pad rows and positions 0 .. L-1 as trained
    new = table[first + N :]  # positions L .. N-1: a new model's start, N(0, initializer_range^2)
    assert new.shape == (LONGER - N, trained.shape[1])
    assert not any(torch.equal(row, old) for row in new for old in trained)
    assert abs(new.std().item() - source.config.initializer_range) < 0.2 * source.config.initializer_range
    assert abs(new.mean().item()) < 0.01


def test_random_new_positions_of_a_linformer_keep_its_outputs_on_what_it_could_read() -> None:
    torch.manual_seed(0)
    linformer = LinformerForMaskedLM(tiny_linformer_config(projected_length=None)).eval()
    longer, new = with_linformer_options(
        linformer, None, "headwise", "linear", max_length=LONGER, new_positions="random"
    )
    assert new == []  # the table was extended (its new rows random), not replaced
    input_ids, attention_mask = padded_batch(linformer.config.pad_token_id, n=N)
    with torch.no_grad():
        assert_close(longer(input_ids, attention_mask=attention_mask).logits,
                     linformer(input_ids, attention_mask=attention_mask).logits)  # fmt: skip
    assert not torch.equal(positions(longer)[2 + N], positions(linformer)[2])


def test_new_positions_is_checked_before_any_weight_is_read(tmp_path: Path) -> None:
    save_tiny_source(tmp_path / "src")
    out = str(tmp_path / "dst")
    fields = dict(source=str(tmp_path / "src"), output_dir=out, projected_length="8")
    with pytest.raises(ValueError, match=r"new_positions must be one of \('copy', 'random'\), got 'zeros'"):
        ConvertConfig(**fields, max_length=LONGER, new_positions="zeros")
    with pytest.raises(
        ValueError, match=r"new_positions='random' starts the positions .* nothing is extended"
    ):
        ConvertConfig(**fields, new_positions="random")
    with pytest.raises(ValueError, match=r"new_positions='random' .* nothing is extended"):
        from_roberta(tiny_source("roberta", "ForMaskedLM"), projected_length=8, new_positions="random")
    assert not (tmp_path / "dst").exists()


def test_the_log_line_says_the_new_rows_start_new(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="linformer_kit"):
        from_bert(tiny_source("bert", "ForMaskedLM"), projected_length=None, max_length=LONGER,
                  new_positions="random")  # fmt: skip
    lines = [r.getMessage() for r in caplog.records if "positions extended" in r.getMessage()]
    assert lines == [
        f"positions extended from {N} to {LONGER}: positions {N}-{LONGER - 1} start new, N(0, 0.02^2); "
        f"E and F are sized for {LONGER}"
    ]
