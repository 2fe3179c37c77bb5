"""`linformer spectrum` writes the JSON and both PNGs; the recommendation fits LinformerConfig."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linformer_kit.cli.main import main
from linformer_kit.models import LinformerConfig
from tests.fixtures.models import save_tiny_linformer
from tests.fixtures.tokenizers import SENTENCES, build_tiny_tokenizer


def _run(model_dir: Path, text_file: Path, out: Path, *extra: str) -> dict:
    argv = ["spectrum", str(model_dir), "--text", str(text_file), "--output-dir", str(out)]
    assert main([*argv, "--seq-len", "16", "--max-inputs", "4", "--index", "4", *extra]) == 0
    for name in ("spectrum_curves.png", "spectrum_heatmap.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return json.loads((out / "spectrum.json").read_text())


def test_cli_writes_json_and_figures(tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys) -> None:
    report = _run(tiny_roberta_dir, text_file, tmp_path, "--keep", "0.8")
    assert report["num_inputs"] == 4
    assert report["input_lengths"] == [16] * 4
    assert (report["num_layers"], report["num_heads"]) == (3, 4)
    assert len(report["curve_mean"][0][0]) == 16
    assert all(abs(row[-1] - 1.0) < 1e-5 for row in report["layer_curve_mean"])
    assert set(report["effective_rank"]) == {"0.9", "0.99"}
    k = report["recommended_projected_length"]
    assert len(k) == 3
    assert all(isinstance(v, int) and 1 <= v <= 16 for v in k)
    flag = ",".join(map(str, k))  # what --projected-length takes
    assert (
        f"recommended projected_length (keep=0.8): {k}  (--projected-length {flag})"
        in capsys.readouterr().out
    )


@pytest.mark.parametrize("learned", [False, True])
def test_cli_warns_when_the_model_never_left_its_no_context_floor(
    learned: bool, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    import shutil

    model = tmp_path / "model"
    shutil.copytree(tiny_roberta_dir, model)
    metrics = {
        "perplexity": 3043.8 if not learned else 80.5,
        "no_context_perplexity": 465.8,
        "learned_context": learned,
    }
    (model / "metrics.json").write_text(json.dumps(metrics))
    report = _run(model, text_file, tmp_path / "out")
    out = capsys.readouterr().out
    warned = "WARNING: this model has not learned to use context (validation perplexity 3043.8 vs its no-context floor 465.8"
    assert (warned in out) is not learned
    assert any(warned in note for note in report["notes"]) is not learned


@pytest.mark.parametrize("suffix", [".jsonl.gz", ".jsonl", ".json"])
def test_cli_reads_the_files_pretrain_reads(
    suffix: str, tiny_roberta_dir: Path, text_file: Path, tmp_path: Path
) -> None:
    """The same documents as a .txt (joined by a blank line) and as JSON records give the same spectrum."""
    import gzip

    documents = text_file.read_text().split("\n\n")
    joined = tmp_path / "joined.txt"
    joined.write_text("\n\n".join(documents))
    records = [{"text": doc, "id": i} for i, doc in enumerate(documents)]
    body = json.dumps(records) if suffix == ".json" else "".join(json.dumps(r) + "\n" for r in records)
    data = tmp_path / f"docs{suffix}"
    data.write_bytes(gzip.compress(body.encode()) if suffix.endswith(".gz") else body.encode())
    want = _run(tiny_roberta_dir, joined, tmp_path / "txt")
    got = _run(tiny_roberta_dir, data, tmp_path / "json")
    assert got["curve_mean"] == want["curve_mean"]
    assert got["num_inputs"] == want["num_inputs"] == 4


def test_cli_recommendation_is_accepted_by_linformer_config(
    tiny_roberta_dir: Path, text_file: Path, tmp_path: Path
) -> None:
    report = _run(tiny_roberta_dir, text_file, tmp_path, "--method", "randomized", "--rank", "8")
    k = report["recommended_projected_length"]
    config = LinformerConfig(num_hidden_layers=3, projected_length=k)
    assert list(config.projected_length) == k


def test_cli_on_a_full_attention_linformer(text_file: Path, tmp_path: Path) -> None:
    save_tiny_linformer(tmp_path / "model", build_tiny_tokenizer(max_length=32), projected_length=None)
    report = _run(tmp_path / "model", text_file, tmp_path / "out")
    assert (report["num_layers"], report["num_heads"]) == (2, 4)


def test_cli_loads_a_masked_lm_quietly(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # what `linformer pretrain --projected-length none` writes: its pooler is new to AutoModel and its MLM head unused, neither
    # matters to the spectrum; a paragraph longer than the model is cut into inputs, not fed whole
    tokenizer = build_tiny_tokenizer(max_length=32)
    save_tiny_linformer(tmp_path / "model", tokenizer, projected_length=None)  # the spectrum reads n x n maps
    long_paragraph = tmp_path / "book.txt"
    long_paragraph.write_text(" ".join(SENTENCES * 3), encoding="utf-8")  # ~150 tokens, the limit is 32
    capfd.readouterr()
    _run(tmp_path / "model", long_paragraph, tmp_path / "out")
    printed = "".join(capfd.readouterr())
    assert "new task head" not in printed
    assert "trained from scratch" not in printed
    assert "Token indices sequence length is longer" not in printed


def test_cli_reports_attention_by_distance_and_a_window(
    tiny_roberta_dir: Path, text_file: Path, tmp_path: Path, capsys
) -> None:
    from linformer_kit.analysis import uniform_distance_mass
    from linformer_kit.nn.options import format_projected_length, parse_local_window

    report = _run(tiny_roberta_dir, text_file, tmp_path, "--window-mass", "0.4", "--global-mass", "0.2")
    out = capsys.readouterr().out
    mass = report["distance_mass"]
    assert mass["radii"] == [1, 4, 16, 64]
    assert [len(mass["mean"]), len(mass["mean"][0]), len(mass["mean"][0][0])] == [3, 4, 4]
    # 16-token inputs: ±16 and ±64 hold every key, for every head and for uniform attention
    assert all(
        abs(head[2] - 1.0) < 1e-5 and abs(head[3] - 1.0) < 1e-5 for layer in mass["mean"] for head in layer
    )
    assert mass["uniform"] == pytest.approx(uniform_distance_mass(16, (1, 4, 16, 64)).tolist(), abs=1e-6)
    assert report["first_token_mass"]["uniform"] == pytest.approx(1 / 16)
    assert all(0.0 <= v <= 1.0 for layer in report["first_token_mass"]["mean"] for v in layer)
    window, tokens = report["recommended_local_window"], report["recommended_global_tokens"]
    assert len(window) == 3
    assert all(w in (None, 1, 4) for w in window)  # 16 and 64 are the whole input
    assert tokens in (0, 1)
    flags = f"--local-window {format_projected_length(window)}" + (" --global-tokens 1" if tokens else "")
    assert (
        f"recommended local_window (window_mass=0.4): {window}, global_tokens (global_mass=0.2): {tokens}  ({flags})"
        in out
    )
    assert parse_local_window(format_projected_length(window)) == window
    assert "attention mass within ±1 ±4 ±16 ±64 and on token 0, per layer (max over heads):" in out
    assert "  uniform attention: 0.18 0.48 1.00 1.00  0.06" in out
