"""`linformer pretrain` / `finetune` flags are generated from the configs, which are `TrainingArguments`."""

from __future__ import annotations

import collections
import dataclasses
import importlib
import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn
from transformers import TrainerCallback, TrainingArguments

from linformer_kit.cli.main import main
from linformer_kit.config_parser import parse_config
from linformer_kit.train import FinetuneConfig, PretrainConfig, finetune

TRAINER_FIELDS = [field.name for field in dataclasses.fields(TrainingArguments) if field.init]


def parse(verb: str, argv: list[str]):
    return parse_config(importlib.import_module(f"linformer_kit.cli.{verb}").build_parser(), argv)


@pytest.mark.parametrize("verb", ["pretrain", "finetune"])
def test_every_trainer_argument_is_a_flag_under_its_name(verb: str) -> None:
    options = importlib.import_module(f"linformer_kit.cli.{verb}").build_parser()._option_string_actions
    assert [name for name in TRAINER_FIELDS if f"--{name}" not in options] == []
    assert [name for name in TRAINER_FIELDS if f"--{name.replace('_', '-')}" not in options] == []


@pytest.mark.parametrize(("verb", "own"), [("pretrain", "--projected_length"), ("finetune", "--model")])
def test_help_lists_our_options_first_and_the_trainer_options_last(verb: str, own: str) -> None:
    text = importlib.import_module(f"linformer_kit.cli.{verb}").build_parser().format_help()
    sections = ["options:", "training (the Trainer options most runs set):", "short aliases:",
                "every other Trainer option (transformers.TrainingArguments):"]  # fmt: skip
    where = [text.index(section) for section in sections]
    assert where == sorted(where), "help sections out of order"
    first, essentials, _, rest = (text[a:b] for a, b in zip(where, [*where[1:], len(text)], strict=True))
    assert own in first
    assert "--learning_rate" not in first
    assert "--adam_epsilon" not in first
    assert "--learning_rate" in essentials
    assert "--max_steps" in essentials
    assert "--bf16" in essentials
    assert "--adam_epsilon" in rest
    assert "--learning_rate" not in rest
    # every Trainer field is still listed somewhere, once
    assert [name for name in TRAINER_FIELDS if text.count(f"--{name} ") + text.count(f"--{name},") < 1] == []


def test_pretrain_flags_reach_the_config(corpus: Path, tiny_model_dir: Path, tmp_path: Path) -> None:
    """The flag spellings scripts already use, and Trainer options under the Trainer's names."""
    config = parse("pretrain", [
        "--train", str(corpus / "train.txt"), "--validation", str(corpus / "valid.txt"),
        "--output-dir", str(tmp_path / "out"), "--seq-len", "32", "--projected-length", "8",
        "--sharing", "kv", "--projection", "mean", "--tokenizer", str(tiny_model_dir), "--init-from", str(tiny_model_dir),
        "--max-train-documents", "5", "--max-eval-blocks", "4", "--max-steps", "7", "--batch-size", "4",
        "--learning-rate", "1e-3", "--save-steps", "3", "--logging-steps", "2", "--seed", "7", "--no-progress",
        "--bf16", "--report_to", "tensorboard", "--warmup_steps", "0.1", "--weight_decay", "0",
        "--save_total_limit", "3", "--gradient_accumulation_steps", "2", "--lr-scheduler-type", "cosine",
    ])  # fmt: skip
    assert isinstance(config, PretrainConfig)
    assert isinstance(config, TrainingArguments)  # what Trainer(args=config) gets
    assert config.train == [str(corpus / "train.txt")]
    assert config.validation == [str(corpus / "valid.txt")]
    assert (config.preset, config.seq_len, config.projected_length, config.sharing, config.projection) == (
        None,
        32,
        8,
        "kv",
        "mean",
    )  # fmt: skip  (no --preset: init_from gives the shape, and a preset next to it is an error)
    assert (config.tokenizer, config.init_from) == (str(tiny_model_dir), str(tiny_model_dir))
    assert (config.max_train_documents, config.max_eval_blocks, config.max_steps) == (5, 4, 7)
    assert (config.per_device_train_batch_size, config.per_device_eval_batch_size) == (4, 4)
    assert (config.learning_rate, config.save_steps, config.logging_steps, config.seed) == (1e-3, 3, 2, 7)
    assert config.disable_tqdm is True
    assert config.bf16 is True
    assert config.report_to == ["tensorboard"]
    assert (config.warmup_steps, config.weight_decay, config.save_total_limit) == (0.1, 0.0, 3)
    assert config.gradient_accumulation_steps == 2
    assert config.lr_scheduler_type == "cosine"


def test_defaults_are_written_once(corpus: Path, tmp_path: Path) -> None:
    """The parser's defaults are the config's: parsing only the required flags == building it in Python."""
    required = dict(train=[str(corpus / "train.txt")], output_dir=str(tmp_path / "out"))
    parsed = parse("pretrain", ["--train", *required["train"], "--output-dir", required["output_dir"]])
    assert parsed.to_dict() == PretrainConfig(**required).to_dict()
    assert (parsed.learning_rate, parsed.adam_beta2, parsed.num_train_epochs) == (1e-3, 0.98, 1.0)
    assert (parsed.per_device_train_batch_size, parsed.seq_len_schedule) == (64, [[128, 0.5], [512, 0.5]])


def test_trainer_fields_are_config_fields_in_python(corpus: Path, tmp_path: Path) -> None:
    """No side dict of extra Trainer arguments to collide with ("got multiple values for report_to")."""
    config = PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path), report_to="tensorboard", seed=3)
    assert config.report_to == ["tensorboard"]
    assert (config.seed, config.data_seed) == (3, 3)  # the data order follows the seed
    assert "extra_training_args" not in {field.name for field in dataclasses.fields(PretrainConfig)}


@pytest.mark.parametrize(("text", "expected"), [("none", None), ("16", 16), ("8,4", [8, 4])])
def test_one_grammar_for_k(text: str, expected, corpus: Path, tmp_path: Path) -> None:
    argv = [
        "--train",
        str(corpus),
        "--output-dir",
        str(tmp_path),
        "--seq-len",
        "32",
        "--preset",
        "tiny",  # 2 layers: "8,4" is one k per layer
        "--projected-length",
        text,
    ]
    assert parse("pretrain", argv).projected_length == expected
    assert PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path), seq_len=32, preset="tiny", projected_length=text).projected_length == expected  # fmt: skip


def test_bad_k_text_is_named(corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "pretrain",
        "--train",
        str(corpus),
        "--output-dir",
        str(tmp_path / "out"),
        "--projected-length",
        "full",
    ]
    assert main(argv) == 2
    assert (
        "expected an int, 'none', or a comma-separated list of them (one per layer), got 'full'"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_config_file_then_flags(suffix: str, corpus: Path, tmp_path: Path) -> None:
    options = {"train": [str(corpus / "train.txt")], "output-dir": str(tmp_path / "out"), "preset": "tiny",
               "seq_len": 32, "projected_length": "none", "per_device_train_batch_size": 4, "learning_rate": 0.001,
               "bf16": True, "report_to": "none", "max_steps": 5}  # fmt: skip
    path = tmp_path / f"run{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(options))
    else:  # YAML as people write it: block lists, plain words
        path.write_text("\n".join(
            f"{key}:\n  - {value[0]}" if isinstance(value, list) else f"{key}: {str(value).lower() if value is True else value}"
            for key, value in options.items()
        ))  # fmt: skip
    config = parse("pretrain", ["--config", str(path), "--max-steps", "9", "--projected-length", "8"])
    assert config.train == [str(corpus / "train.txt")]
    assert (config.output_dir, config.preset, config.seq_len) == (str(tmp_path / "out"), "tiny", 32)
    assert (config.per_device_train_batch_size, config.learning_rate, config.bf16) == (4, 1e-3, True)
    assert (config.max_steps, config.projected_length) == (9, 8)  # the flags win over the file
    assert parse("pretrain", ["--config", str(path)]).projected_length is None


def test_config_file_errors_are_named(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "typo.yaml").write_text(
        f"train: [{corpus}]\noutput_dir: {tmp_path}/out\nsequence_length: 64\n"
    )
    (tmp_path / "list.yaml").write_text("- train\n")
    (tmp_path / "run.toml").write_text("")
    for name, message in [
        ("typo.yaml", "unknown options ['sequence_length']"),
        ("list.yaml", "must hold a mapping of option names to values"),
        ("run.toml", "is not a .yaml, .yml or .json file"),
        ("nowhere.yaml", "config: no such file"),
    ]:
        assert main(["pretrain", "--config", str(tmp_path / name)]) == 2
        error = capsys.readouterr().err
        assert error.startswith("linformer pretrain: error: config: ")
        assert message in error


def test_finetune_flags_reach_the_config(tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "clf"
    argv = ["--model", str(tiny_model_dir), "--train", str(sentiment_csv / "train.csv"),
            "--validation", str(sentiment_csv / "dev.csv"), "--output-dir", str(out), "--text-column", "sentence",
            "--label-column", "label", "--max-length", "16", "--max-train-samples", "40", "--epochs", "2",
            "--batch-size", "8", "--learning-rate", "3e-3", "--seed", "5",
            "--gradient_accumulation_steps", "2", "--save_steps", "4"]  # fmt: skip
    config = parse("finetune", argv)
    assert isinstance(config, FinetuneConfig)
    assert (config.model, config.text_column, config.label_column) == (
        str(tiny_model_dir),
        "sentence",
        "label",
    )
    assert (config.max_length, config.max_train_samples, config.num_train_epochs) == (16, 40, 2.0)
    assert (config.per_device_train_batch_size, config.per_device_eval_batch_size) == (8, 8)
    assert (config.learning_rate, config.seed, config.gradient_accumulation_steps, config.save_steps) == (
        3e-3, 5, 2, 4
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"holds no checkpoint-\* folder to resume from"):
        parse("finetune", [*argv, "--resume"]).preflight()  # the checkpoints: at the start of the run
    checkpoint = out / "checkpoint-4"
    checkpoint.mkdir(parents=True)
    with pytest.raises(ValueError, match="already holds checkpoints: pass --resume"):
        parse("finetune", argv).preflight()
    cut_off = parse("finetune", [*argv, "--resume"])  # only a cut-off checkpoint: set aside, start again
    cut_off.preflight()
    assert cut_off.resume_from_checkpoint is None
    assert cut_off.incomplete_checkpoints == {"checkpoint-4": "config.json is missing"}
    for name in ("config.json", "trainer_state.json"):  # the files a resume reads, complete
        (checkpoint / name).write_text("{}")
    save_file({"weight": torch.zeros(2)}, checkpoint / "model.safetensors")
    for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth"):
        torch.save({}, checkpoint / name)
    resumed = parse("finetune", [*argv, "--resume"])
    resumed.preflight()
    assert resumed.resume_from_checkpoint == str(checkpoint)


class LinearOutputDtypes:
    """Counts the dtypes of every nn.Linear output computed with grad enabled (= training steps)."""

    def __init__(self) -> None:
        self.seen: collections.Counter[torch.dtype] = collections.Counter()

    def __enter__(self) -> LinearOutputDtypes:
        self.handle = nn.modules.module.register_module_forward_hook(self.hook)
        return self

    def __exit__(self, *exc) -> None:
        self.handle.remove()

    def hook(self, module: nn.Module, inputs, output) -> None:
        if isinstance(module, nn.Linear) and torch.is_grad_enabled():
            self.seen[output.dtype] += 1


@pytest.mark.slow
@pytest.mark.parametrize(("flags", "dtype"), [(["--bf16"], torch.bfloat16), ([], torch.float32)])
def test_bf16_pretraining_runs_in_autocast(flags, dtype, corpus: Path, tmp_path: Path) -> None:
    """`--bf16` on a CPU-only machine: the Trainer's autocast, so every Linear computes in bf16 while the
    weights (and the saved model) stay fp32. Options come from a config file, as in the README."""
    (tmp_path / "run.yaml").write_text(
        f"train: {corpus / 'train.txt'}\npreset: tiny\nseq_len: 32\nprojected_length: 8\n"
        "per_device_train_batch_size: 4\nmax_eval_blocks: 4\n"
    )
    argv = ["pretrain", "--config", str(tmp_path / "run.yaml"), "--output-dir", str(tmp_path / "out"),
            "--max-steps", "2", "--no-progress", *flags]  # fmt: skip
    with LinearOutputDtypes() as linear:
        assert main(argv) == 0
    assert set(linear.seen) == {dtype}, linear.seen
    assert linear.seen[dtype] >= 2 * 2 * 4  # 2 steps x 2 layers x (q, k, v, out, ...) at least
    assert {t.dtype for t in load_file(tmp_path / "out" / "model.safetensors").values()} == {torch.float32}


class CountSteps(TrainerCallback):
    def __init__(self) -> None:
        self.steps = 0

    def on_step_end(self, args, state, control, **kwargs):
        self.steps += 1


@pytest.mark.slow
def test_finetune_resumes_from_its_last_checkpoint(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    common = dict(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                  validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path / "clf"),
                  per_device_train_batch_size=8, save_steps=2, disable_tqdm=True)  # fmt: skip
    finetune(FinetuneConfig(max_steps=4, **common))
    assert sorted(p.name for p in (tmp_path / "clf").glob("checkpoint-*")) == ["checkpoint-2", "checkpoint-4"]
    counter = CountSteps()
    result = finetune(FinetuneConfig(max_steps=6, resume=True, **common), callbacks=[counter])
    assert result.steps == 6
    assert counter.steps == 2  # steps 5 and 6 only: 1-4 came back from checkpoint-4
