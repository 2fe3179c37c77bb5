"""Text in, token blocks out: local files or a Hub dataset → `datasets.Dataset` → BPE → packed blocks.

Everything here is `datasets` / `tokenizers` doing the work; this module only decides which loader
reads which file, trains a byte-level BPE tokenizer when none is given, and packs documents into
fixed-length blocks RoBERTa "FULL-SENTENCES" style: `<s> tokens of one or more documents </s>`,
documents separated by `</s>`, so long books fill many blocks and short lines share one.

A source is a local file, a local folder (every `.txt` / `.jsonl` / `.jsonl.gz` / `.json` inside,
sorted, recursively), or, when nothing by that name exists locally and it does not look like a
path, a Hugging Face dataset name `NAME` or `NAME:CONFIG` (needs the Hub).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import datasets
from tokenizers import ByteLevelBPETokenizer
from tokenizers.processors import RobertaProcessing
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from linformer_kit.data_files import check_data_file, explain_failure, is_local
from linformer_kit.token_pieces import special_ends

TEXT_SUFFIXES = (".txt", ".text")
JSON_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")
TABLE_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz")
SPECIAL_TOKENS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]  # RoBERTa's ids 0..4


def _has_suffix(path: str | Path, suffixes: Sequence[str]) -> bool:
    return str(path).lower().endswith(tuple(suffixes))


def is_hub_name(source: str) -> bool:
    """True when `source` names a Hub dataset rather than a local file or folder (`data_files.is_local`)."""
    return not is_local(source, TEXT_SUFFIXES + JSON_SUFFIXES + TABLE_SUFFIXES + (".gz",))


def expand_text_files(sources: Sequence[str], what: str, text_column: str = "text") -> list[Path]:
    """Local text sources → sorted list of readable files; raises ValueError saying what to fix.

    Every file is checked from its first 64 KiB (`check_data_file`): empty, binary, not UTF-8, a
    broken JSON line or JSON records without `text_column` are errors naming the file and line.
    """
    files: list[Path] = []
    for source in sources:
        path = Path(source).expanduser()
        if path.is_dir():
            found = sorted(
                p for p in path.rglob("*") if p.is_file() and _has_suffix(p, TEXT_SUFFIXES + JSON_SUFFIXES)
            )
            if not found:
                raise ValueError(f"{what}: folder {source!r} holds no .txt / .jsonl / .jsonl.gz / .json file")
            files.extend(found)
        elif path.is_file():
            if not _has_suffix(path, TEXT_SUFFIXES + JSON_SUFFIXES):
                raise ValueError(
                    f"{what}: {source!r} is not a .txt / .jsonl / .jsonl.gz / .json file "
                    f"(pretraining reads raw text)"
                )
            files.append(path)
        else:
            raise ValueError(f"{what}: no such file or folder: {source!r}")
    for file in files:
        columns = (text_column,) if _has_suffix(file, JSON_SUFFIXES) else ()
        check_data_file(file, what, columns, hint="pass --text-column to name the field that holds the text")
    return files


def load_text(sources: Sequence[str], text_column: str, what: str, split: str = "train") -> datasets.Dataset:
    """Raw text from local files (or one Hub dataset) as a Dataset with one column, "text"."""
    if len(sources) == 1 and is_hub_name(sources[0]):
        dataset = load_hub_dataset(sources[0], what, split=split)
        if text_column not in dataset.column_names:
            raise ValueError(
                f"{what}: dataset has no {text_column!r} column (columns: {dataset.column_names})"
            )
        dataset = dataset.select_columns([text_column])
        if text_column != "text":
            dataset = dataset.rename_column(text_column, "text")
    else:
        files = expand_text_files(sources, what, text_column)
        parts = []
        plain = [str(f) for f in files if _has_suffix(f, TEXT_SUFFIXES)]
        if plain:  # one record per line; blank lines are paragraph breaks and are kept as such
            parts.append(_load_local("text", plain, what, sample_by="paragraph"))
        structured = [str(f) for f in files if _has_suffix(f, JSON_SUFFIXES)]
        # the text is in `text_column`, checked to exist by expand_text_files; one file at a time, as files
        # whose other fields differ (Gutenberg's books beside IMDB's reviews) cannot be read as one table
        for path in structured:
            json_part = _load_local("json", [path], what)
            if text_column not in json_part.column_names:
                raise ValueError(
                    f"{what}: records of {path} have no {text_column!r} field (fields: {json_part.column_names}); "
                    f"pass --text-column"
                )
            json_part = json_part.select_columns([text_column])
            parts.append(json_part.rename_column(text_column, "text") if text_column != "text" else json_part)
        parts = [p.select_columns(["text"]) for p in parts]
        dataset = datasets.concatenate_datasets(parts) if len(parts) > 1 else parts[0]
    if getattr(dataset.features["text"], "dtype", None) not in ("string", "large_string"):
        raise ValueError(f"{what}: the {text_column!r} field holds {dataset.features['text']}, not text")
    dataset = dataset.select_columns(["text"]).filter(lambda row: bool(row["text"] and row["text"].strip()))
    if len(dataset) == 0:
        raise ValueError(f"{what}: the corpus is empty (no non-blank text in {list(sources)})")
    return dataset


def load_hub_dataset(source: str, what: str, **kwargs) -> datasets.Dataset | datasets.DatasetDict:
    """The Hub dataset "NAME[:CONFIG]"; a ValueError naming it when it cannot be loaded (offline, typo)."""
    name, _, config = source.partition(":")
    try:
        return datasets.load_dataset(name, config or None, **kwargs)
    except Exception as error:  # offline, no such dataset, no such config or split: one message naming it
        raise ValueError(
            f"{what}: cannot load {source!r} (no such local file or folder, so read as a Hugging Face "
            f"dataset NAME[:CONFIG]): {type(error).__name__}: {str(error).splitlines()[0][:300]}"
        ) from error


def _load_local(builder: str, files: list[str], what: str, **kwargs) -> datasets.Dataset:
    """`datasets.load_dataset(builder, data_files=files)`, its failures explained by file and line."""
    try:
        return datasets.load_dataset(builder, data_files=files, split="train", **kwargs)
    except Exception as error:  # DatasetGenerationError and friends name no file; explain_failure does
        raise explain_failure(files, what, error) from error


def train_tokenizer(texts: datasets.Dataset, vocab_size: int, sample_chars: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE (RoBERTa/GPT-2 style) trained on the first `sample_chars` characters of `texts`."""

    def sample():  # BPE statistics settle long before 100 M characters; cap the cost
        seen = 0
        for row in texts:
            text = row["text"][: max(sample_chars - seen, 0)]
            if not text:
                return
            seen += len(text)
            yield text

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(
        sample(), vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS, show_progress=False
    )
    bpe.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0))  # <s> A </s></s> B </s>, like RoBERTa
    return PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<s>",
        eos_token="</s>",
        sep_token="</s>",
        cls_token="<s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        model_max_length=None,
    )


def _split_documents(texts: datasets.Dataset, chunk_chars: int) -> datasets.Dataset:
    """Cut long documents (books) at paragraph breaks into pieces of about `chunk_chars` characters,
    so that one map batch stays small in memory; `ends_document` marks where a `</s>` separator goes."""

    def split(batch: dict[str, list[str]]) -> dict[str, list]:
        pieces: list[str] = []
        ends: list[bool] = []
        for text in batch["text"]:
            start = 0
            while len(text) - start > chunk_chars:
                cut = text.rfind("\n\n", start, start + chunk_chars)
                cut = cut + 2 if cut > start else start + chunk_chars
                pieces.append(text[start:cut])
                ends.append(False)
                start = cut
            pieces.append(text[start:])
            ends.append(True)
        return {"text": pieces, "ends_document": ends}

    return texts.map(
        split, batched=True, batch_size=64, remove_columns=texts.column_names, desc="split documents"
    )


def pack_blocks(
    texts: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
    seq_len: int,
    desc: str,
    chunk_chars: int = 8192,
) -> datasets.Dataset:
    """Tokenize and cut into blocks of exactly `seq_len` tokens: `<s>` + seq_len-2 tokens + `</s>`.

    Each map batch (256 pieces of at most `chunk_chars` characters) drops the tail that does not fill
    a block, as the Hugging Face `run_mlm.py` example does: at most one block per batch.
    """
    body = seq_len - 2
    first, last = special_ends(tokenizer)  # <s> ... </s>, or [CLS] ... [SEP]: the tokenizer's own
    if not first or not last:
        raise ValueError("pack_blocks: the tokenizer puts no special tokens around a text; blocks need them")
    bos, eos = first[0], last[-1]

    def tokenize_and_pack(batch: dict[str, list]) -> dict[str, list[list[int]]]:
        # whole documents, cut into blocks below: no "longer than model_max_length" warning
        ids = tokenizer(batch["text"], add_special_tokens=False, verbose=False)["input_ids"]
        stream: list[int] = []
        for piece, ends_document in zip(ids, batch["ends_document"]):
            stream.extend(piece)
            if ends_document:  # documents are separated by </s>, pieces of one document are not
                stream.append(eos)
        blocks = [[bos, *stream[i : i + body], eos] for i in range(0, len(stream) - body + 1, body)]
        return {"input_ids": blocks}

    pieces = _split_documents(texts, chunk_chars)
    return pieces.map(
        tokenize_and_pack, batched=True, batch_size=256, remove_columns=pieces.column_names, desc=desc
    )
