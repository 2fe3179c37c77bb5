"""Bad input stops before any training, with a message that says what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from linformer_kit.cli.main import main
from linformer_kit.train import FinetuneConfig, PretrainConfig, pretrain


def test_missing_training_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"train: no such file or folder: '.*nowhere\.txt'"):
        PretrainConfig(train=[str(tmp_path / "nowhere.txt")], output_dir=str(tmp_path / "out"))


def test_folder_without_text_files(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("# not a corpus")
    with pytest.raises(ValueError, match=r"holds no \.txt / \.jsonl"):
        PretrainConfig(train=[str(tmp_path)], output_dir=str(tmp_path / "out"))


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


def test_seq_len_above_the_models_limit(tiny_model_dir: Path, corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"seq_len=64 is above the longest input .* \(32 tokens"):
        PretrainConfig(
            train=[str(corpus)], output_dir=str(tmp_path / "out"), init_from=str(tiny_model_dir), seq_len=64
        )


def test_k_above_seq_len(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"projected_length k=256 must be between 1 and seq_len=128"):
        PretrainConfig(
            train=[str(corpus)], output_dir=str(tmp_path / "out"), seq_len=128, projected_length=256
        )


def test_resume_needs_a_checkpoint_and_checkpoints_need_resume(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"holds no checkpoint-\* folder to resume from"):
        PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out"), resume=True)
    (tmp_path / "out" / "checkpoint-10").mkdir(parents=True)
    with pytest.raises(ValueError, match=r"already holds checkpoints: pass --resume"):
        PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out"))


def test_tokenizer_folder_must_hold_a_tokenizer(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a saved tokenizer folder"):
        PretrainConfig(train=[str(corpus)], output_dir=str(tmp_path / "out"), tokenizer=str(tmp_path))


def test_label_column_absent(tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"train: no column \['sentiment'\] .*--label-column"):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path / "out"),
                       label_column="sentiment", disable_tqdm=True)  # fmt: skip


def test_finetune_needs_train_and_validation(
    tiny_model_dir: Path, sentiment_csv: Path, tmp_path: Path
) -> None:
    with pytest.raises(ValueError, match="validation: missing"):
        FinetuneConfig(
            model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"), output_dir=str(tmp_path)
        )
    with pytest.raises(ValueError, match=r"validation: no such file: '.*dev\.tsv'"):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(tmp_path / "dev.tsv"), output_dir=str(tmp_path))  # fmt: skip
    with pytest.raises(ValueError, match=r"max_length=64 must be between 2 and the model's longest input 32"):
        FinetuneConfig(model=str(tiny_model_dir), train=str(sentiment_csv / "train.csv"),
                       validation=str(sentiment_csv / "dev.csv"), output_dir=str(tmp_path), max_length=64)  # fmt: skip


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
