"""A recipe's `tokenizer: DIR`: one committed tokenizer that several studies read (study_files.tokenizer_dir).

The CPU tiers trained the same byte-level BPE, each committing a copy in its results_dir/tokenizer; they now
name one folder, docs/reproduction/tokenizer. A tier without its own copy must find that one (every run,
the first one included, reads it and none trains a tokenizer), and a rerun must not copy it back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from linformer_kit.cli.main import main
from linformer_kit.reproduction import load_recipe
from linformer_kit.reproduction.study_files import keep_tokenizer, run_dir, tokenizer_dir

ROOT = Path(__file__).parents[2]
SHARED = "docs/reproduction/tokenizer"


def _recipe(tmp_path: Path, **top) -> Path:
    """A two-run study (results_dir without a tokenizer of its own) with stand-in data files."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for name in ("train.txt", "valid.txt"):
        (data / name).write_text("some text\n")
    recipe = {
        "tier": "shared-tokenizer",
        "output_dir": str(tmp_path / "runs"),
        "results_dir": str(tmp_path / "results"),
        "pretrain": {
            "defaults": {"train": str(data / "train.txt"), "validation": str(data / "valid.txt"),
                         "preset": "tiny", "seq_len": 32, "vocab_size": 300, "max_steps": 2},
            "runs": {"full": {"projected_length": None}, "k8": {"projected_length": 8}},
        },
        **top,
    }  # fmt: skip
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def test_a_tier_without_its_own_copy_reads_the_shared_tokenizer(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)  # the recipe names the folder relative to the repository root, as results_dir
    path = _recipe(tmp_path, tokenizer=SHARED)
    recipe = load_recipe(path)
    assert not (tmp_path / "results" / "tokenizer").exists()
    assert tokenizer_dir(recipe) == Path(SHARED)

    assert main(["reproduce", str(path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert all(f"--tokenizer {SHARED}" in line for line in lines)  # the first run too: it trains none
    assert not any("--vocab_size" in line for line in lines)  # it would size a tokenizer trained here

    # after the first run finished here, a rerun still reads the shared folder and copies nothing back
    first = run_dir(recipe, recipe.pretrain[0])
    first.mkdir(parents=True)
    (first / "metrics.json").write_text("{}")
    (first / "tokenizer_config.json").write_text("{}")
    keep_tokenizer(recipe)
    assert not (tmp_path / "results" / "tokenizer").exists()
    assert tokenizer_dir(recipe) == Path(SHARED)


def test_without_the_field_the_first_run_trains_the_tokenizer_as_before(tmp_path, capsys) -> None:
    path = _recipe(tmp_path)
    assert main(["reproduce", str(path), "--dry-run"]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert "--tokenizer" not in first
    assert "--vocab_size 300" in first
    assert f"--tokenizer {tmp_path / 'runs' / 'pretrain' / 'full'}" in second


@pytest.mark.parametrize("value", ["no/such/folder", 3])
def test_a_tokenizer_that_is_not_a_saved_tokenizer_is_refused_before_any_run(tmp_path, value) -> None:
    with pytest.raises(
        ValueError, match=r"recipe: tokenizer .* must be a folder that holds a tokenizer_config"
    ):
        load_recipe(_recipe(tmp_path, tokenizer=value))


def test_the_committed_tiers_share_one_tokenizer_and_keep_no_copy(monkeypatch) -> None:
    """Every committed recipe naming a tokenizer finds it; its results_dir holds no copy of its own."""
    monkeypatch.chdir(ROOT)
    named = {}
    for path in sorted((ROOT / "recipes" / "reproduction").glob("*.yaml")):
        raw = yaml.safe_load(path.read_text())
        if "tokenizer" in raw:
            named[path.stem] = raw
    assert {"cpu-paper", "cpu-local", "cpu-long", "cpu-paper-long"} <= set(named)
    for name, raw in named.items():
        assert raw["tokenizer"] == SHARED, name
        assert not (ROOT / raw["results_dir"] / "tokenizer").exists(), f"{name} keeps its own copy"
    config = json.loads((ROOT / SHARED / "tokenizer_config.json").read_text())
    assert "model_max_length" not in config  # each run's saved tokenizer takes its own model's longest input
    vocabulary = json.loads((ROOT / SHARED / "tokenizer.json").read_text())["model"]["vocab"]
    assert len(vocabulary) == 1024  # the `mini` preset's vocab_size
