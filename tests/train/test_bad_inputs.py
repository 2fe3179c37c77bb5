"""Bad input to `linformer pretrain` / `linformer finetune` (issue-13 sweep).

Each case runs the CLI in process and must exit non-zero with a message naming the bad value, print
no traceback, change no existing file and leave nothing behind (tests/bad_input_checks.py). Tiny
settings throughout, so that even a case that is wrongly accepted finishes in seconds. The last
section calls `PretrainConfig` / `FinetuneConfig` (values, on construction), their `preflight()` (files,
which `pretrain()` / `finetune()` run first) and `pretrain()` directly (no CLI) and pins each message:
bad input stops before any training, saying what to fix.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from linformer_kit.cli.main import main
from linformer_kit.train import FinetuneConfig, PretrainConfig, pretrain
from tests.bad_input_checks import check_cli, check_handled, run_cli

TINY = ["--preset", "tiny", "--seq-len", "32", "--batch-size", "4", "--max-eval-blocks", "4", "--no-progress"]


def pretrain_argv(corpus: Path, out: Path, *extra: object) -> list:
    argv = ["pretrain", "--train", corpus / "train.txt", "--output-dir", out, "--projected-length", "8",
            "--max-steps", "2", *TINY, *extra]  # fmt: skip
    if "--init-from" in extra:  # the model keeps init_from's shape: no preset
        argv.remove("--preset")
        argv.remove("tiny")
    return argv


# --- pretrain: numbers ----------------------------------------------------------------------------------

PRETRAIN_OPTIONS = {
    "seq-len 0": (["--seq-len", "0"], r"seq_len.*\b0\b"),
    "seq-len -1": (["--seq-len", "-1"], r"seq_len.*-1"),
    "seq-len 7": (["--seq-len", "7"], r"seq_len=7"),
    "k 0": (["--projected-length", "0"], r"k=0"),
    "k -1": (["--projected-length", "-1"], r"k=-1"),
    "k above seq-len": (["--projected-length", "64"], r"k=64.*seq_len=32"),
    "k list, 3 for 2 layers": (["--projected-length", "8,8,8"], r"3 entries.*num_hidden_layers=2"),
    "k not a number": (["--projected-length", "abc"], r"'abc'"),
    "layerwise with two ks": (
        ["--projected-length", "8,4", "--sharing", "layerwise"],
        r"layerwise.*single k",
    ),
    "mean, k not dividing n": (["--projected-length", "5", "--projection", "mean"], r"k=5 must divide"),
    "max-steps -2": (["--max-steps", "-2"], r"max_steps.*-2"),  # -1 is "train --epochs"
    "epochs 0": (["--epochs", "0"], r"epochs.*\b0"),
    "epochs nan": (["--epochs", "nan"], r"epochs.*nan"),
    "batch-size 0": (["--batch-size", "0"], r"batch_size.*\b0\b"),
    "batch-size -1": (["--batch-size", "-1"], r"batch_size.*-1"),
    "gradient accumulation 0": (
        ["--gradient-accumulation-steps", "0"],
        r"gradient_accumulation_steps.*\b0\b",
    ),
    "gradient accumulation -1": (["--gradient-accumulation-steps", "-1"], r"gradient_accumulation_steps.*-1"),
    "learning-rate 0": (["--learning-rate", "0"], r"learning_rate.*\b0"),
    "learning-rate negative": (["--learning-rate", "-0.001"], r"learning_rate.*-0\.001"),
    "learning-rate nan": (["--learning-rate", "nan"], r"learning_rate.*nan"),
    "learning-rate inf": (["--learning-rate", "inf"], r"learning_rate.*inf"),
    "save-steps 0": (["--save-steps", "0"], r"save_steps.*\b0\b"),
    "logging-steps 0": (["--logging-steps", "0"], r"logging_steps.*\b0\b"),
    "logging-steps -1": (["--logging-steps", "-1"], r"logging_steps.*-1"),
    "max-eval-blocks 0": (["--max-eval-blocks", "0"], r"max_eval_blocks.*\b0\b"),
    "max-eval-blocks -1": (["--max-eval-blocks", "-1"], r"max_eval_blocks.*-1"),
    "validation-percent 0": (["--validation-percent", "0"], r"validation_percent.*\b0"),
    "validation-percent 100": (["--validation-percent", "100"], r"validation_percent.*100"),
    "validation-percent -5": (["--validation-percent", "-5"], r"validation_percent.*-5"),
    "validation-percent nan": (["--validation-percent", "nan"], r"validation_percent.*nan"),
    "max-train-documents 0": (["--max-train-documents", "0"], r"max_train_documents.*\b0\b"),
    "max-train-documents -1": (["--max-train-documents", "-1"], r"max_train_documents.*-1"),
    "vocab-size 0": (["--vocab-size", "0"], r"vocab_size.*\b0\b"),
    "vocab-size -1": (["--vocab-size", "-1"], r"vocab_size.*-1"),
    "vocab-size below the byte alphabet": (["--vocab-size", "100"], r"vocab_size.*100.*261"),
    "seed -1": (["--seed", "-1"], r"seed.*-1"),
    "sharing unknown": (["--sharing", "rowwise"], r"sharing.*'rowwise'"),
    "projection unknown": (["--projection", "fourier"], r"projection.*'fourier'"),
    "projection-scaling unknown": (["--projection-scaling", "sqrt"], r"projection_scaling.*'sqrt'"),
}


@pytest.mark.parametrize("case", PRETRAIN_OPTIONS)
def test_pretrain_option(case: str, corpus: Path, tmp_path: Path, capsys) -> None:
    extra, match = PRETRAIN_OPTIONS[case]
    check_cli(pretrain_argv(corpus, tmp_path / "out", *extra), match, capsys, watch=[tmp_path, corpus])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sharing", "rowwise"),
        ("projection", "fourier"),
        ("projection_scaling", "sqrt"),
        ("projection_init", "gauss"),
    ],
)
def test_pretrain_config_unknown_choice(field: str, value: str, corpus: Path, tmp_path: Path) -> None:
    """The Python API gets LinformerConfig's own message (the CLI's argparse choices never reach it)."""
    with pytest.raises(ValueError, match=rf"{field} must be one of .* got '{value}'"):
        PretrainConfig(train=[str(corpus / "train.txt")], output_dir=str(tmp_path / "out"), **{field: value})
    assert not (tmp_path / "out").exists()


# --- pretrain: data files and folders --------------------------------------------------------------------


def _write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


GOOD_LINES = "".join(json.dumps({"text": f"the cat sat on mat number {i}"}) + "\n" for i in range(40))
PRETRAIN_FILES = {
    "zero-byte .txt": ("empty.txt", b"", r"empty\.txt.*empty \(0 bytes\)"),
    "non-UTF-8 .txt": (
        "latin1.txt",
        "the cat\nsat on the\ncaf\xe9 mat\n".encode("latin-1"),
        r"latin1\.txt.*line 3.*not UTF-8",
    ),
    "binary .txt": ("model.txt", b"PK\x03\x04\x00\x00" + bytes(range(256)), r"model\.txt.*binary"),
    "zero-byte .jsonl": ("empty.jsonl", b"", r"empty\.jsonl.*empty \(0 bytes\)"),
    "malformed JSONL line": (
        "bad.jsonl",
        "".join(GOOD_LINES.splitlines(keepends=True)[:4]) + '{"text": "b"\n' + GOOD_LINES,
        r"bad\.jsonl.*line 5",
    ),
    "JSONL line not an object": ("list.jsonl", '["the cat"]\n', r"list\.jsonl.*line 1.*object"),
    "JSONL without a text field": (
        "body.jsonl",
        '{"body": "the cat sat"}\n',
        r"body\.jsonl.*'text'.*--text-column",
    ),
    "not gzip-compressed .jsonl.gz": ("plain.jsonl.gz", GOOD_LINES, r"plain\.jsonl\.gz.*gzip"),
    "a markdown file": ("notes.md", "# the cat", r"notes\.md.*not a \.txt"),
}


@pytest.mark.parametrize("case", PRETRAIN_FILES)
def test_pretrain_bad_training_file(case: str, corpus: Path, tmp_path: Path, capsys) -> None:
    name, content, match = PRETRAIN_FILES[case]
    bad = _write(tmp_path / "data" / name, content)
    argv = ["pretrain", "--train", corpus / "train.txt", bad, "--output-dir", tmp_path / "out", "--projected-length",
            "8", "--max-steps", "2", *TINY]  # fmt: skip
    check_cli(argv, match, capsys, watch=[tmp_path, corpus])


def test_pretrain_bad_file_inside_a_folder(corpus: Path, tmp_path: Path, capsys) -> None:
    _write(tmp_path / "data" / "a.txt", (corpus / "train.txt").read_text())
    _write(tmp_path / "data" / "sub" / "b.txt", "ok\n\xff\xfe broken\n".encode("latin-1"))
    argv = ["pretrain", "--train", tmp_path / "data", "--output-dir", tmp_path / "out", "--projected-length", "8",
            "--max-steps", "2", *TINY]  # fmt: skip
    check_cli(argv, r"b\.txt.*line 2.*not UTF-8", capsys, watch=[tmp_path])


def test_pretrain_bad_line_past_the_first_64_kib(corpus: Path, tmp_path: Path, capsys) -> None:
    lines = GOOD_LINES * 100  # ~ 170 KB of good lines, then a broken one: found when the loader fails
    bad = _write(tmp_path / "big.jsonl", lines + '{"text": "unterminated\n')
    argv = ["pretrain", "--train", bad, "--output-dir", tmp_path / "out", "--projected-length", "8", "--max-steps",
            "2", *TINY]  # fmt: skip
    check_cli(argv, rf"big\.jsonl.*line {lines.count(chr(10)) + 1}", capsys, watch=[tmp_path])


def test_pretrain_text_column_typo_does_not_fall_back(tmp_path: Path, capsys) -> None:
    rows = "".join(json.dumps({"text": f"a b c {i}", "body": f"the cat sat {i}"}) + "\n" for i in range(40))
    data = _write(tmp_path / "both.jsonl", rows)
    argv = ["pretrain", "--train", data, "--text-column", "bdy", "--output-dir", tmp_path / "out", "--projected-length",
            "8", "--max-steps", "2", *TINY]  # fmt: skip
    check_cli(argv, r"both\.jsonl.*'bdy'", capsys, watch=[tmp_path])


def test_pretrain_text_column_on_plain_text(corpus: Path, tmp_path: Path, capsys) -> None:
    argv = pretrain_argv(corpus, tmp_path / "out", "--text-column", "body")
    check_cli(argv, r"text_column='body'.*\.txt", capsys, watch=[tmp_path, corpus])


def test_pretrain_validation_is_the_training_file(corpus: Path, tmp_path: Path, capsys) -> None:
    argv = pretrain_argv(corpus, tmp_path / "out", "--validation", corpus / "train.txt")
    check_cli(argv, r"validation.*train\.txt.*also a training file", capsys, watch=[tmp_path, corpus])


def test_pretrain_validation_missing(corpus: Path, tmp_path: Path, capsys) -> None:
    argv = pretrain_argv(corpus, tmp_path / "out", "--validation", tmp_path / "valid.txt")
    check_cli(argv, r"validation: no such file or folder.*valid\.txt", capsys, watch=[tmp_path, corpus])


def test_pretrain_empty_corpus_leaves_nothing(tmp_path: Path, capsys) -> None:
    data = _write(tmp_path / "blank.txt", "\n\n   \n")
    argv = ["pretrain", "--train", data, "--output-dir", tmp_path / "out", "--projected-length", "8", *TINY]
    check_cli(argv, r"corpus is empty", capsys, watch=[tmp_path])


def test_pretrain_corpus_shorter_than_a_block_leaves_nothing(tmp_path: Path, capsys) -> None:
    """Fails after the tokenizer is trained: nothing of it may stay for the next run to pick up."""
    data = _write(tmp_path / "short.txt", "just a few words\n")
    argv = ["pretrain", "--train", data, "--output-dir", tmp_path / "out", "--projected-length", "8", *TINY]
    check_cli(argv, r"too short for one block of seq_len=32", capsys, watch=[tmp_path])


def test_pretrain_rerun_after_a_failure_trains_its_own_tokenizer(
    corpus: Path, tmp_path: Path, capsys
) -> None:
    """A failed run (another corpus, another vocabulary) must not hand its tokenizer to the next run."""
    out = tmp_path / "out"
    small = _write(tmp_path / "short.txt", "just a few words\n")
    run_cli(["pretrain", "--train", small, "--output-dir", out, "--projected-length", "8", "--vocab-size", "262",
             *TINY], capsys)  # fmt: skip
    code, escaped, output = run_cli(pretrain_argv(corpus, out, "--vocab-size", "300"), capsys)
    assert escaped is None, output
    assert code == 0, output
    vocab = len(json.loads((out / "tokenizer.json").read_text())["model"]["vocab"])
    check_handled(vocab > 262, f"the second run used the failed run's {vocab}-token tokenizer")


# --- pretrain: models, tokenizers, output directories ------------------------------------------------


def _without_tokenizer(model_dir: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "no_tokenizer"
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(model_dir / name, folder / name)
    return folder


def test_pretrain_vocab_size_with_a_given_tokenizer(
    corpus: Path, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    argv = pretrain_argv(corpus, tmp_path / "out", "--tokenizer", tiny_model_dir, "--vocab-size", "500")
    check_cli(argv, r"vocab_size=500.*tokenizer", capsys, watch=[tmp_path, tiny_model_dir])


def test_pretrain_tokenizer_folder_without_tokenizer(corpus: Path, tmp_path: Path, capsys) -> None:
    argv = pretrain_argv(corpus, tmp_path / "out", "--tokenizer", corpus)
    check_cli(argv, r"tokenizer: .*not a saved tokenizer folder", capsys, watch=[tmp_path, corpus])


def test_pretrain_init_from_without_tokenizer(
    corpus: Path, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    """A new BPE would give the pretrained embeddings other token ids: refuse, ask for --tokenizer."""
    model = _without_tokenizer(tiny_model_dir, tmp_path)
    argv = pretrain_argv(corpus, tmp_path / "out", "--init-from", model)
    check_cli(argv, r"init_from.*no_tokenizer.*no tokenizer files", capsys, watch=[tmp_path])


def test_pretrain_init_from_missing(corpus: Path, tmp_path: Path, capsys) -> None:
    argv = pretrain_argv(corpus, tmp_path / "out", "--init-from", tmp_path / "nope")
    check_cli(argv, r"init_from.*nope", capsys, watch=[tmp_path])


def test_pretrain_init_from_truncated_weights(
    corpus: Path, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    os.truncate(model / "model.safetensors", 500)
    argv = pretrain_argv(corpus, tmp_path / "out", "--init-from", model)
    check_cli(argv, r"model.*truncated or corrupt", capsys, watch=[tmp_path])


def test_pretrain_init_from_config_not_matching_weights(
    corpus: Path, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    config = json.loads((model / "config.json").read_text())
    (model / "config.json").write_text(json.dumps({**config, "model_type": "roberta"}))
    argv = pretrain_argv(corpus, tmp_path / "out", "--init-from", model)
    check_cli(argv, r"do not fit.*randomly initialised", capsys, watch=[tmp_path])


def test_pretrain_output_dir_is_a_file(corpus: Path, tmp_path: Path, capsys) -> None:
    target = _write(tmp_path / "out.txt", "keep me")
    check_cli(pretrain_argv(corpus, target), r"out\.txt.*existing file", capsys, watch=[tmp_path, corpus])


def test_pretrain_output_dir_below_a_file(corpus: Path, tmp_path: Path, capsys) -> None:
    _write(tmp_path / "out.txt", "keep me")
    argv = pretrain_argv(corpus, tmp_path / "out.txt" / "run")
    check_cli(argv, r"out\.txt.*is a file", capsys, watch=[tmp_path, corpus])


def test_pretrain_output_dir_holds_a_model(
    corpus: Path, tiny_model_dir: Path, tmp_path: Path, capsys
) -> None:
    model = Path(shutil.copytree(tiny_model_dir, tmp_path / "model"))
    argv = pretrain_argv(corpus, model, "--init-from", model)
    check_cli(argv, r"model.*holds .*config\.json", capsys, watch=[tmp_path])


def test_pretrain_resume_without_checkpoint(corpus: Path, tmp_path: Path, capsys) -> None:
    check_cli(pretrain_argv(corpus, tmp_path / "out", "--resume"), r"no checkpoint", capsys, watch=[tmp_path])


# --- pretrain: resuming ----------------------------------------------------------------------------------

RUN = dict(preset="tiny", seq_len=32, projected_length=8, per_device_train_batch_size=4, max_steps=4, save_steps=2,
           max_eval_blocks=4, disable_tqdm=True)  # fmt: skip


@pytest.fixture(scope="module")
def finished_run(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 4-step run with checkpoints at steps 2 and 4: the uninterrupted reference."""
    out = tmp_path_factory.mktemp("run") / "out"
    pretrain(PretrainConfig(train=[str(corpus / "train.txt")], output_dir=str(out), **RUN))
    return out


def _resume_argv(corpus: Path, out: Path, *extra: object) -> list:
    return ["pretrain", "--train", corpus / "train.txt", "--output-dir", out, "--projected-length", "8",
            "--max-steps", "4", "--save-steps", "2", *TINY, "--resume", *extra]  # fmt: skip


RESUME_CHANGES = {
    "projected-length": (["--projected-length", "4"], r"projected_length.*4.*checkpoint.*8"),
    "sharing": (["--sharing", "kv"], r"sharing.*'kv'.*checkpoint.*'headwise'"),
    "projection": (["--projection", "mean"], r"projection.*'mean'.*checkpoint.*'linear'"),
    "full attention": (["--projected-length", "none"], r"projected_length.*None.*checkpoint.*8"),
    "seq-len": (["--seq-len", "16"], r"seq_len.*16.*checkpoint.*32"),
    "preset": (["--preset", "small"], r"preset.*'small'.*checkpoint"),
}


@pytest.mark.parametrize("case", RESUME_CHANGES)
def test_resume_with_changed_option(
    case: str, corpus: Path, finished_run: Path, tmp_path: Path, capsys
) -> None:
    out = Path(shutil.copytree(finished_run, tmp_path / "out"))
    extra, match = RESUME_CHANGES[case]
    argv = _resume_argv(corpus, out, *extra)  # a repeated option: the last wins
    check_cli(argv, match, capsys, watch=[tmp_path])


def _close(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    return torch.allclose(actual, expected, rtol=0, atol=1e-6)  # threads may differ between the runs


def _break(checkpoint: Path, how: str) -> None:
    if how == "truncated weights":
        os.truncate(checkpoint / "model.safetensors", (checkpoint / "model.safetensors").stat().st_size // 2)
    elif how == "no trainer_state.json":
        (checkpoint / "trainer_state.json").unlink()
    elif how == "truncated optimizer":
        os.truncate(checkpoint / "optimizer.pt", 100)
    else:  # "half-written": the files written before trainer_state.json, some of them cut short
        for name in ("trainer_state.json", "rng_state.pth", "scheduler.pt"):
            (checkpoint / name).unlink(missing_ok=True)
        os.truncate(checkpoint / "optimizer.pt", 10)


@pytest.mark.slow
@pytest.mark.parametrize(
    "how", ["truncated weights", "no trainer_state.json", "truncated optimizer", "half-written"]
)
def test_resume_falls_back_to_the_last_complete_checkpoint(
    how: str, corpus: Path, finished_run: Path, tmp_path: Path, capsys
) -> None:
    out = Path(shutil.copytree(finished_run, tmp_path / "out"))
    for name in ("model.safetensors", "config.json", "metrics.json"):  # as if killed before the final save
        (out / name).unlink()
    _break(out / "checkpoint-4", how)
    code, escaped, output = run_cli(_resume_argv(corpus, out), capsys)
    ok = escaped is None and code == 0
    if ok:
        expected, actual = load_file(finished_run / "model.safetensors"), load_file(out / "model.safetensors")
        ok = expected.keys() == actual.keys() and all(_close(actual[k], expected[k]) for k in expected)
    check_handled(
        ok, f"resume with checkpoint-4 {how}: exit {code}, {escaped!r}, {output[-300:]}", kind="traceback"
    )


@pytest.mark.slow
def test_resume_with_every_checkpoint_broken_sets_them_aside_and_starts_again(
    corpus: Path, finished_run: Path, tmp_path: Path, capsys
) -> None:
    # killed while writing its first checkpoint(s): --resume keeps them (renamed) and trains from step 0
    out = Path(shutil.copytree(finished_run, tmp_path / "out"))
    for name in ("model.safetensors", "config.json", "metrics.json"):
        (out / name).unlink()
    for step in (2, 4):
        _break(out / f"checkpoint-{step}", "truncated weights")
    with pytest.warns(UserWarning, match=r"checkpoint-4 was cut off.*model\.safetensors.*starting again"):
        code, escaped, output = run_cli(_resume_argv(corpus, out), capsys)
    assert (code, escaped) == (0, None), output[-1000:]
    assert {"incomplete-checkpoint-2", "incomplete-checkpoint-4"} <= {p.name for p in out.iterdir()}
    expected, actual = load_file(finished_run / "model.safetensors"), load_file(out / "model.safetensors")
    assert all(_close(actual[k], expected[k]) for k in expected)


KILL_SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from transformers import PreTrainedModel
    from linformer_kit.train import PretrainConfig, pretrain

    real_save = PreTrainedModel.save_pretrained

    def save_then_die_half_written(self, save_directory, *args, **kwargs):  # SIGKILL inside checkpoint-4
        real_save(self, save_directory, *args, **kwargs)
        if os.path.basename(str(save_directory)) == "checkpoint-4":
            weights = os.path.join(save_directory, "model.safetensors")
            os.truncate(weights, os.path.getsize(weights) // 2)
            os.kill(os.getpid(), signal.SIGKILL)

    PreTrainedModel.save_pretrained = save_then_die_half_written
    pretrain(PretrainConfig(train=[sys.argv[1]], output_dir=sys.argv[2], preset="tiny", seq_len=32, projected_length=8,
                            per_device_train_batch_size=4, max_steps=4, save_steps=2, max_eval_blocks=4,
                            disable_tqdm=True))
    """
)


@pytest.mark.slow
def test_sigkill_while_writing_a_checkpoint_then_resume(
    corpus: Path, finished_run: Path, tmp_path: Path, capsys
) -> None:
    """A real SIGKILL with checkpoint-4/model.safetensors half written; resume ends as the finished run."""
    script = _write(tmp_path / "killed.py", KILL_SCRIPT)
    out = tmp_path / "out"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, str(script), str(corpus / "train.txt"), str(out)], env=env,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert (out / "checkpoint-4").is_dir()  # the half-written checkpoint is there
    code, escaped, output = run_cli(_resume_argv(corpus, out), capsys)
    ok = escaped is None and code == 0
    if ok:
        expected, actual = load_file(finished_run / "model.safetensors"), load_file(out / "model.safetensors")
        ok = all(_close(actual[k], expected[k]) for k in expected)
    check_handled(ok, f"resume after SIGKILL: exit {code}, {escaped!r}, {output[-400:]}", kind="traceback")


# --- finetune --------------------------------------------------------------------------------------------


def finetune_argv(model: Path, data: Path, out: Path, *extra: object, steps: bool = True) -> list:
    return ["finetune", "--model", model, "--train", data / "train.csv", "--validation", data / "dev.csv",
            "--output-dir", out, "--batch-size", "8", "--no-progress", *(["--max-steps", "1"] if steps else []),
            *extra]  # fmt: skip


FINETUNE_OPTIONS = {
    "max-length 0": (["--max-length", "0"], r"max_length=0"),
    "max-length 1": (["--max-length", "1"], r"max_length=1"),
    "max-length -1": (["--max-length", "-1"], r"max_length=-1"),
    "max-length above the model's": (["--max-length", "999"], r"max_length=999.*32"),
    "max-train-samples 0": (["--max-train-samples", "0"], r"max_train_samples.*\b0\b"),
    "max-train-samples -1": (["--max-train-samples", "-1"], r"max_train_samples.*-1"),
    "short-inputs full": (["--short-inputs", "full"], r"short.inputs.*'full'"),
    "max-steps 0": (["--max-steps", "0"], r"max_steps.*\b0\b"),
    "max-steps -2": (["--max-steps", "-2"], r"max_steps.*-2"),  # -1 is "train --epochs"
    "batch-size 0": (["--batch-size", "0"], r"batch_size.*\b0\b"),
    "batch-size -1": (["--batch-size", "-1"], r"batch_size.*-1"),
    "learning-rate 0": (["--learning-rate", "0"], r"learning_rate.*\b0"),
    "learning-rate -1": (["--learning-rate", "-1"], r"learning_rate.*-1"),
    "learning-rate nan": (["--learning-rate", "nan"], r"learning_rate.*nan"),
    "seed -1": (["--seed", "-1"], r"seed.*-1"),
}


@pytest.mark.parametrize("case", FINETUNE_OPTIONS)
def test_finetune_option(
    case: str, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    extra, match = FINETUNE_OPTIONS[case]
    argv = finetune_argv(tiny_model_dir, sentiment_csv, tmp_path / "out")  # a repeated option: the last wins
    check_cli([*argv, *extra], match, capsys, watch=[tmp_path, tiny_model_dir, sentiment_csv])


@pytest.mark.parametrize(
    ("epochs", "match"), [("0", r"epochs.*\b0"), ("-1", r"epochs.*-1"), ("nan", r"epochs.*nan")]
)
def test_finetune_epochs(
    epochs: str, match: str, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    argv = finetune_argv(tiny_model_dir, sentiment_csv, tmp_path / "out", "--epochs", epochs, steps=False)
    check_cli(argv, match, capsys, watch=[tmp_path, tiny_model_dir, sentiment_csv])


ROWS = "".join(f"the {'good' if i % 2 else 'bad'} cat {i},{i % 2}\n" for i in range(12))
TSV_ROWS = ROWS.replace(",", "\t")
FINETUNE_FILES = {
    "zero-byte csv": ("train.csv", b"", r"train\.csv.*empty \(0 bytes\)"),
    "non-UTF-8 csv": (
        "train.csv",
        f"sentence,label\n{ROWS}caf\xe9 ok,1\n".encode("latin-1"),
        r"train\.csv.*line 14.*not UTF-8",
    ),
    "binary csv": ("train.csv", b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(256)), r"train\.csv.*binary"),
    "header only": ("train.csv", "sentence,label\n", r"train\.csv.*no examples"),
    "ragged tsv row": (
        "train.tsv",
        f"sentence\tlabel\n{TSV_ROWS}an extra\tfield\t1\n",
        r"train\.tsv.*line 14.*3 fields.*2",
    ),
    "short tsv row": (
        "train.tsv",
        f"sentence\tlabel\n{TSV_ROWS[:60]}no label here\n{TSV_ROWS[60:]}",
        r"train\.tsv.*line \d+.*label",
    ),
    "empty label cell": (
        "train.csv",
        f"sentence,label\n{ROWS}a cat,\n{ROWS}",
        r"train\.csv.*line 14.*empty 'label'",
    ),
    "empty text cell": ("train.csv", f"sentence,label\n{ROWS},1\n", r"train\.csv.*line 14.*empty 'sentence'"),
    "malformed jsonl line": (
        "train.jsonl",
        '{"sentence": "a", "label": 1}\n{"sentence": "b", "label": 0\n',
        r"train\.jsonl.*line 2",
    ),
    "jsonl null label": (
        "train.jsonl",
        '{"sentence": "a", "label": 1}\n{"sentence": "b", "label": null}\n',
        r"train\.jsonl.*line 2.*empty 'label'",
    ),
    "a directory": ("train.csv/", None, r"train\.csv.*directory"),
    "a .txt file": ("train.txt", "the cat,1\n", r"train\.txt.*not a \.csv"),
}


@pytest.mark.parametrize("case", FINETUNE_FILES)
def test_finetune_bad_training_file(
    case: str, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    name, content, match = FINETUNE_FILES[case]
    path = tmp_path / "data" / name.rstrip("/")
    if content is None:
        path.mkdir(parents=True)
    else:
        _write(path, content)
    argv = ["finetune", "--model", tiny_model_dir, "--train", path, "--validation", sentiment_csv / "dev.csv",
            "--output-dir", tmp_path / "out", "--max-steps", "1", "--batch-size", "8", "--no-progress"]  # fmt: skip
    check_cli(argv, match, capsys, watch=[tmp_path, tiny_model_dir, sentiment_csv])


FINETUNE_COLUMNS = {
    "text-column typo": (["--text-column", "sentense"], r"'sentense'"),
    "text-pair-column typo": (["--text-pair-column", "sentence2"], r"'sentence2'"),
    "label-column typo": (["--label-column", "lable"], r"'lable'"),
    "text column is the label": (["--text-column", "label"], r"text_column.*label_column.*'label'"),
}


@pytest.mark.parametrize("case", FINETUNE_COLUMNS)
def test_finetune_bad_column(
    case: str, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    extra, match = FINETUNE_COLUMNS[case]
    argv = finetune_argv(tiny_model_dir, sentiment_csv, tmp_path / "out", *extra)
    check_cli(argv, match, capsys, watch=[tmp_path, tiny_model_dir, sentiment_csv])


def _labels(tmp_path: Path, train: list, dev: list) -> Path:
    folder = tmp_path / "data"
    for split, labels in (("train", train), ("dev", dev)):
        _write(
            folder / f"{split}.csv",
            "sentence,label\n" + "".join(f"the cat {i},{v}\n" for i, v in enumerate(labels)),
        )
    return folder


def test_finetune_one_label(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    data = _labels(tmp_path, [1] * 8, [1] * 4)
    check_cli(finetune_argv(tiny_model_dir, data, tmp_path / "out"), r"only one label value \[1\]", capsys,
              watch=[tmp_path, tiny_model_dir])  # fmt: skip


def test_finetune_dev_label_unseen_in_train(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    data = _labels(tmp_path, [0, 1] * 4, [0, 2])
    check_cli(finetune_argv(tiny_model_dir, data, tmp_path / "out"), r"labels \[2\] never occur in train", capsys,
              watch=[tmp_path, tiny_model_dir])  # fmt: skip


def test_finetune_validation_is_the_training_file(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    argv = ["finetune", "--model", tiny_model_dir, "--train", sentiment_csv / "train.csv", "--validation",
            sentiment_csv / "train.csv", "--output-dir", tmp_path / "out", "--max-steps", "1"]  # fmt: skip
    check_cli(argv, r"validation.*train\.csv.*training file", capsys, watch=[tmp_path, sentiment_csv])


def test_finetune_float_labels_are_regression(tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    """STS-B style scores: a regression head (num_labels=1), not one class per distinct value."""
    data = _labels(tmp_path, [0.0, 1.5, 2.25, 3.8, 5.0, 4.2] * 3, [1.5, 3.8, 5.0])
    code, escaped, output = run_cli(finetune_argv(tiny_model_dir, data, tmp_path / "out"), capsys)
    ok = escaped is None and code == 0
    if ok:
        config = json.loads((tmp_path / "out" / "config.json").read_text())
        metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
        ok = config["problem_type"] == "regression" and len(config["id2label"]) == 1 and "pearson" in metrics
    check_handled(ok, f"float labels: exit {code}, {escaped!r}, {output[-300:]}")


FINETUNE_MODELS = {
    "missing": (lambda model, tmp: tmp / "nope", r"model.*nope"),
    "a file": (lambda model, tmp: model / "config.json", r"model.*config\.json.*is a file"),
    "no config.json": (lambda model, tmp: _drop(model, tmp, "config.json"), r"model.*no config\.json"),
    "no tokenizer": (
        lambda model, tmp: _drop(model, tmp, "tokenizer.json", "tokenizer_config.json"),
        r"model.*no tokenizer files",
    ),
    "pickled weights only": (lambda model, tmp: _pickled(model, tmp), r"model.*no \.safetensors weights"),
    "truncated weights": (lambda model, tmp: _truncated(model, tmp), r"model.*truncated or corrupt"),
    "config.json of another model type": (
        lambda model, tmp: _retyped(model, tmp, "bert"),
        r"do not fit.*randomly initialised",
    ),
}


def _copy_model(model: Path, tmp: Path) -> Path:
    return Path(shutil.copytree(model, tmp / "model"))


def _drop(model: Path, tmp: Path, *names: str) -> Path:
    folder = _copy_model(model, tmp)
    for name in names:
        (folder / name).unlink()
    return folder


def _pickled(model: Path, tmp: Path) -> Path:
    folder = _drop(model, tmp, "model.safetensors")
    torch.save(load_file(model / "model.safetensors"), folder / "pytorch_model.bin")
    return folder


def _truncated(model: Path, tmp: Path) -> Path:
    folder = _copy_model(model, tmp)
    os.truncate(folder / "model.safetensors", 700)
    return folder


def _retyped(model: Path, tmp: Path, model_type: str) -> Path:
    folder = _copy_model(model, tmp)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": model_type}))
    return folder


@pytest.mark.parametrize("case", FINETUNE_MODELS)
def test_finetune_bad_model(
    case: str, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    make, match = FINETUNE_MODELS[case]
    model = make(tiny_model_dir, tmp_path)
    argv = finetune_argv(model, sentiment_csv, tmp_path / "out")
    check_cli(argv, match, capsys, watch=[tmp_path, tiny_model_dir, sentiment_csv])


def test_finetune_into_its_own_model(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    model = _copy_model(tiny_model_dir, tmp_path)
    check_cli(finetune_argv(model, sentiment_csv, model), r"model.*holds .*model\.safetensors", capsys,
              watch=[tmp_path])  # fmt: skip


def test_finetune_output_dir_is_a_file(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    target = _write(tmp_path / "notes.txt", "keep me")
    check_cli(finetune_argv(tiny_model_dir, sentiment_csv, target), r"notes\.txt.*existing file", capsys,
              watch=[tmp_path, sentiment_csv, tiny_model_dir])  # fmt: skip


def test_finetune_output_dir_below_a_file(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    _write(tmp_path / "notes.txt", "keep me")
    argv = finetune_argv(tiny_model_dir, sentiment_csv, tmp_path / "notes.txt" / "out")
    check_cli(argv, r"notes\.txt.*is a file", capsys, watch=[tmp_path, sentiment_csv, tiny_model_dir])


def test_finetune_data_given_twice(tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys) -> None:
    argv = finetune_argv(tiny_model_dir, sentiment_csv, tmp_path / "out", "--glue-task", "sst2")
    check_cli(argv, r"give the data one way", capsys, watch=[tmp_path])


# --- found by the sweep ----------------------------------------------------------------------------------


def test_pretrain_preset_with_init_from(corpus: Path, tiny_model_dir: Path, tmp_path: Path, capsys) -> None:
    """The checkpoint's shape wins: a --preset would be ignored without a word."""
    argv = [*pretrain_argv(corpus, tmp_path / "out", "--init-from", tiny_model_dir), "--preset", "base"]
    check_cli(argv, r"preset='base'.*init_from", capsys, watch=[tmp_path, tiny_model_dir])


def test_pretrain_output_dir_inside_the_corpus_folder(corpus: Path, tmp_path: Path, capsys) -> None:
    """Checkpoints hold .json files: inside a --train folder they would be read as text by the next run."""
    data = Path(shutil.copytree(corpus, tmp_path / "data"))
    argv = ["pretrain", "--train", data, "--output-dir", data / "run", "--projected-length", "8", *TINY]
    check_cli(argv, r"output_dir.*data.*overlap", capsys, watch=[tmp_path])


def test_pretrain_tokenizer_without_mask_token(corpus: Path, tmp_path: Path, capsys) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.train_from_iterator(
        ["the cat sat on the mat"], trainers.WordLevelTrainer(special_tokens=["[UNK]"])
    )
    PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]").save_pretrained(tmp_path / "tok")
    argv = pretrain_argv(corpus, tmp_path / "out", "--tokenizer", tmp_path / "tok")
    check_cli(argv, r"tokenizer.*tok.*mask_token", capsys, watch=[tmp_path, corpus])


@pytest.mark.parametrize("verb", ["pretrain", "finetune"])
@pytest.mark.parametrize("where", ["flag", "config file"])
def test_trainer_option_typo(
    verb: str, where: str, corpus: Path, tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path, capsys
) -> None:
    """A misspelt Trainer option (the old extra_training_args typo) stops before any work, named."""
    if verb == "pretrain":
        argv = pretrain_argv(corpus, tmp_path / "out")
    else:
        argv = finetune_argv(tiny_model_dir, sentiment_csv, tmp_path / "out")
    if where == "flag":
        argv += ["--learning_rate_schedule", "cosine"]
    else:
        argv += ["--config", _write(tmp_path / "run.yaml", "learning_rate_schedule: cosine\n")]
    check_cli(
        argv, r"learning_rate_schedule", capsys, watch=[tmp_path, corpus, tiny_model_dir, sentiment_csv]
    )


def test_a_json_line_longer_than_the_sniffed_head_is_not_called_broken(tmp_path: Path) -> None:
    # Seen on the real Gutenberg corpus (one book per JSON line, ~400 KB): the 64 KiB head cut the
    # first line, and the check called it "not valid JSON".
    from linformer_kit.data_files import HEAD_BYTES, check_data_file

    book = json.dumps({"title": "a book", "text": "word " * HEAD_BYTES}) + "\n"
    path = tmp_path / "books.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(book * 2)
    check_data_file(path, "train", columns=["text"])  # no error
    broken = tmp_path / "broken.jsonl"
    broken.write_text(book[: HEAD_BYTES * 2] + "\n")
    with pytest.raises(ValueError, match=r"broken\.jsonl.*line 1.*not valid JSON"):
        check_data_file(broken, "train", columns=["text"])


# --- the configs and pretrain() directly: the message, before any training ------------------------------


def test_missing_training_file_is_named(tmp_path: Path) -> None:
    config = PretrainConfig(train=[str(tmp_path / "nowhere.txt")], output_dir=str(tmp_path / "out"))
    with pytest.raises(ValueError, match=r"train: no such file or folder: '.*nowhere\.txt'"):
        config.preflight()  # the files, at the start of the run (pretrain calls it first)


def test_folder_without_text_files(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# not a corpus")
    config = PretrainConfig(train=[str(tmp_path)], output_dir=str(tmp_path / "out"))
    with pytest.raises(ValueError, match=r"holds no \.txt / \.jsonl"):
        config.preflight()


def test_empty_corpus(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("\n\n   \n")
    config = PretrainConfig(train=[str(tmp_path / "empty.txt")], output_dir=str(tmp_path / "out"), preset="tiny",
                            seq_len=16, projected_length=4, disable_tqdm=True)  # fmt: skip
    with pytest.raises(ValueError, match="the corpus is empty"):
        pretrain(config)
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_corpus_shorter_than_one_block(corpus: Path, tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("just a few words")
    config = PretrainConfig(train=[str(tmp_path / "short.txt")], tokenizer=None, output_dir=str(tmp_path / "out"),
                            preset="tiny", seq_len=64, projected_length=8, disable_tqdm=True)  # fmt: skip
    with pytest.raises(ValueError, match=r"too short for one block of seq_len=64 .*lower --seq-len"):
        pretrain(config)


def test_seq_len_above_the_models_limit_extends_it(
    tiny_model_dir: Path, corpus: Path, tmp_path: Path
) -> None:
    # no longer an error: the position table grows (tests/models/test_longer_positions.py)
    config = PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out"), init_from=str(tiny_model_dir),
                            seq_len=64, projected_length=8)  # fmt: skip
    assert config.model_config().max_seq_len == 64


def test_k_above_seq_len(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"projected_length \(k=256\) must be between 1 and max_seq_len=128 \(seq_len\)"
    ):
        PretrainConfig(
            train=[str(corpus)], output_dir=str(tmp_path / "out"), seq_len=128, projected_length=256
        )


def test_resume_needs_a_checkpoint_and_checkpoints_need_resume(corpus: Path, tmp_path: Path) -> None:
    resumed = PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out"), resume=True)
    with pytest.raises(ValueError, match=r"holds no checkpoint-\* folder to resume from"):
        resumed.preflight()
    (tmp_path / "out" / "checkpoint-10").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"already holds checkpoints: pass --resume"):
        PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out")).preflight()


def test_tokenizer_folder_must_hold_a_tokenizer(corpus: Path, tmp_path: Path) -> None:
    config = PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out"), tokenizer=str(tmp_path))
    with pytest.raises(ValueError, match="not a saved tokenizer folder"):
        config.preflight()


def test_label_column_absent(tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path) -> None:
    config = FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                            validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path / "out"),
                            label_column="sentiment", disable_tqdm=True)  # fmt: skip
    with pytest.raises(ValueError, match=r"train: no column \['sentiment'\] .*--label-column"):
        config.preflight()


def test_finetune_needs_train_and_validation(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="validation: missing"):
        FinetuneConfig(
            model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"), output_dir=str(tmp_path)
        )
    with pytest.raises(ValueError, match=r"validation: no such file: '.*dev\.tsv'"):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(tmp_path / "dev.tsv"), output_dir=str(tmp_path)).preflight()  # fmt: skip
    with pytest.raises(ValueError, match=r"max_length=64 must be between 2 and the model's longest input 32"):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path), max_length=64).preflight()  # fmt: skip


def test_finetune_short_inputs_choice(tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"short_inputs must be one of \('project', 'exact'\), got 'full'"):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path), short_inputs="full")  # fmt: skip


def test_cli_prints_the_error_and_returns_2(tmp_path: Path, capsys) -> None:
    code = main(
        ["pretrain", "--train", str(tmp_path / "missing.jsonl.gz"), "--output-dir", str(tmp_path / "out")]
    )
    assert code == 2
    captured = capsys.readouterr()
    assert "linformer pretrain: error: train: no such file or folder" in captured.err
    assert captured.out == ""
    assert not (tmp_path / "out").exists()
