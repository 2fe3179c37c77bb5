"""The data of `linformer distill`: train examples and the held-out documents of the fidelity.

    load_data       both, below; at least 2 held-out documents (the fidelity's baseline compares two)
    fidelity_texts  the `fidelity_text` sources: text no stage trains on, each its own fidelity
    split_texts     `train` (pretrain's readers, the first max_train_documents) and the held-out documents:
                    `validation`'s, or the last train documents (a tenth, at least 2), not trained on;
                    max_eval_documents of them
    train_examples  one example per document truncated to seq_len tokens (`examples="documents"`), or the
                    documents packed into blocks of exactly seq_len tokens ("blocks", for corpora of long
                    documents): input_ids and attention_mask, padded per batch by the collator

Documents are the default because a learned E trained at one length alone does not carry to others: on
all-MiniLM-L6-v2 (k = 128, w = 16, one global token), 100 steps of attention transfer on blocks of 512
lowered the per-layer error from 0.27 to 0.19 yet the fidelity on reviews of every length fell from 0.920
(the drop-in) to 0.833 (docs/reproduction/distill-minilm/).
"""

from __future__ import annotations

from pathlib import Path

import datasets
from transformers import PreTrainedTokenizerBase

from linformer_kit.train.data import load_text, pack_blocks
from linformer_kit.train.distill_config import MIN_EVAL_DOCUMENTS, DistillConfig, Examples


def load_data(
    config: DistillConfig, tokenizer: PreTrainedTokenizerBase
) -> tuple[datasets.Dataset, list[str]]:
    """The train examples of seq_len tokens (`train_examples`) and the held-out documents' texts (at most
    max_eval_documents, at least 2); ValueError names what is missing."""
    texts, documents, where = split_texts(config)
    assert config.seq_len is not None  # the preflight's default: the teacher's longest input
    train = train_examples(texts, tokenizer, config.seq_len, config.examples)
    if len(documents) < MIN_EVAL_DOCUMENTS:
        raise ValueError(
            f"{where}: {len(documents)} held-out document(s); the fidelity's baseline (two different "
            f"documents under the teacher) needs at least {MIN_EVAL_DOCUMENTS}: add text or --validation"
        )
    return train, documents


def fidelity_texts(config: DistillConfig) -> dict[str, list[str]]:
    """Each `fidelity_text` source's first max_eval_documents documents, by the file's name; ValueError where
    one holds fewer than 2 (the baseline compares two)."""
    out = {}
    for source in config.fidelity_text or []:
        texts = load_text([source], config.text_column, "fidelity_text", split="test")["text"]
        if len(texts) < MIN_EVAL_DOCUMENTS:
            raise ValueError(
                f"fidelity_text {source}: {len(texts)} document(s); the fidelity's baseline (two different "
                f"documents under the teacher) needs at least {MIN_EVAL_DOCUMENTS}"
            )
        out[Path(source).name] = texts[: config.max_eval_documents]
    return out


def split_texts(config: DistillConfig) -> tuple[datasets.Dataset, list[str], str]:
    """The train documents, the held-out documents' texts (the first max_eval_documents) and where those
    come from (for messages)."""
    texts = load_text(config.train, config.text_column, "train")
    if config.max_train_documents is not None and len(texts) > config.max_train_documents:
        texts = texts.select(range(config.max_train_documents))
    if config.validation:
        held_out = load_text(config.validation, config.text_column, "validation", split="validation")
        where = "validation"
    else:  # the last documents, not trained on: a tenth, at least the two the baseline compares
        count = min(config.max_eval_documents, max(MIN_EVAL_DOCUMENTS, len(texts) // 10))
        keep = max(0, len(texts) - count)
        held_out, texts = texts.select(range(keep, len(texts))), texts.select(range(keep))
        where = "train (its last documents, held out)"
    return texts, held_out["text"][: config.max_eval_documents], where


def train_examples(
    texts: datasets.Dataset, tokenizer: PreTrainedTokenizerBase, seq_len: int, examples: Examples
) -> datasets.Dataset:
    """input_ids and attention_mask of each train example of at most (documents) or exactly (blocks) seq_len
    tokens; ValueError when the text makes none."""
    if examples == "blocks":
        rows = pack_blocks(texts, tokenizer, seq_len, "pack train blocks")
        # every token of a block is real (pack_blocks writes input_ids alone)
        rows = rows.map(lambda row: {"attention_mask": [1] * len(row["input_ids"])}, desc="attention masks")
    else:
        rows = texts.map(
            lambda batch: tokenizer(batch["text"], truncation=True, max_length=seq_len, return_attention_mask=True),
            batched=True, remove_columns=texts.column_names, desc="tokenize train documents",
        )  # fmt: skip
        rows = rows.filter(lambda row: len(row["input_ids"]) > 2)  # more than [CLS] [SEP]
    if len(rows) == 0:
        raise ValueError(
            f"train: the text makes no {'block' if examples == 'blocks' else 'example'} of "
            f"seq_len={seq_len} tokens; add text or lower --seq-len"
        )
    return rows.select_columns(["input_ids", "attention_mask"])
