"""The data of `linformer distill`: train examples and the held-out documents of the fidelity.

    load_data       both, below; at least 2 held-out documents (the fidelity's baseline compares two)
    fidelity_texts  the `fidelity_text` sources: text no stage trains on, each its own fidelity
    split_texts     `train` (pretrain's readers, the first max_train_documents) and the held-out documents:
                    `validation`'s, or the last train documents (a tenth, at least 2), not trained on;
                    max_eval_documents of them
    long_text       the long stage's text: each `long_train` source's documents less its held-out ones, whose
                    passages of at most seq_len tokens are that source's fidelity and whose halves the verdict's
                    (train/distill/verdict.py; split off before any step)
    stage_examples  the 512 stages' examples: `train_examples`, or half of them windows of the long text
    long_spans      spans of exactly a length of the long text's documents (the long stage's; windows)
    source_windows  windows of seq_len tokens of each long_train source in turn (stage_examples, the short term)
    train_examples  one example per document truncated to seq_len tokens (`examples="documents"`), or the
                    documents packed into blocks of exactly seq_len tokens ("blocks", for corpora of long
                    documents): input_ids and attention_mask, padded per batch by the collator

Documents are the default because a learned E trained at one length alone does not carry to others: on
all-MiniLM-L6-v2 (k = 128, w = 16, one global token), 100 steps of attention transfer on blocks of 512
lowered the per-layer error from 0.27 to 0.19 yet the fidelity on reviews of every length fell from 0.920
(the drop-in) to 0.833 (docs/reproduction/distill-minilm/).
"""

from __future__ import annotations

import itertools
import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import datasets
from transformers import PreTrainedTokenizerBase

from linformer_kit.token_pieces import Spans, special_ends
from linformer_kit.train.data import load_text, pack_blocks
from linformer_kit.train.distill.config import MIN_EVAL_DOCUMENTS, DistillConfig, Examples

logger = logging.getLogger(__name__)


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
        out[source_name(source)] = texts[: config.max_eval_documents]
    return out


@dataclass(frozen=True)
class LongText:
    """The long stage's text: `sources`, each `long_train` source's documents but its held-out ones (the short
    term draws its windows from each in equal share), `train`, all of them in one, `held_out`, by source,
    passages of at most seq_len tokens of the held-out documents (the fidelity), and `held_out_documents`, by
    source (`source_name`), those documents whole (the verdict's halves)."""

    sources: tuple[datasets.Dataset, ...]
    held_out: dict[str, list[str]]
    held_out_documents: dict[str, list[str]] = field(default_factory=dict)

    @property
    def train(self) -> datasets.Dataset:
        """Every source's train documents, in the order of the sources."""
        if len(self.sources) == 1:
            return self.sources[0]
        return datasets.concatenate_datasets(list(self.sources))


def long_text(config: DistillConfig, tokenizer: PreTrainedTokenizerBase) -> LongText:
    """The long stage's text. Without `long_train` it is the `train` documents, whose held-out documents are
    the fidelity's already; else each source's last documents (long_held_out of them, at least 2, at most
    max_eval_documents) are held out, and up to max_eval_documents of their passages are its fidelity.
    A source too small to spare them trains whole and is logged as unmeasured."""
    assert config.seq_len is not None  # the preflight's default
    if not config.long_train:
        return LongText((split_texts(config)[0],), {})
    kept, held, whole = [], {}, {}
    for source in config.long_train:
        texts = load_text([source], config.text_column, "long_train")
        count = held_out_count(len(texts), config.max_eval_documents, config.long_held_out)
        name = f"{source_name(source)} (long_train, held out)"
        documents = (
            list(texts.select(range(len(texts) - count, len(texts)))["text"]) if count < len(texts) else []
        )
        pieces = passages(tokenizer, documents, config.seq_len, config.max_eval_documents, config.seed)
        if len(pieces) < MIN_EVAL_DOCUMENTS:
            logger.warning(
                f"distill: long_train {source}: too few documents to hold out; its fidelity is not measured"
            )
            kept.append(texts)
            continue
        kept.append(texts.select(range(len(texts) - count)))
        held[name], whole[source_name(source)] = pieces, documents
    return LongText(tuple(kept), held, whole)


def held_out_count(documents: int, most: int, share: float = 0.1) -> int:
    """How many of a source's last documents are held out: `share` of them (rounded down), at least the 2
    the baseline compares, at most `most`."""
    return min(most, max(MIN_EVAL_DOCUMENTS, int(documents * share + 1e-9)))  # (100 * 0.29 is 28.999...)


def passages(
    tokenizer: PreTrainedTokenizerBase, texts: list[str], length: int, count: int, seed: int
) -> list[str]:
    """Up to `count` passages of `texts`, in a seeded order: each text cut into consecutive pieces of
    length - 2 tokens (its special tokens make `length`), the last one shorter; pieces of fewer than 8 tokens
    are left out (a book's last words say nothing of its domain)."""
    if not texts:
        return []
    spans = Spans(tokenizer, texts)
    size = length - 2
    pieces = [(i, a) for i, o in enumerate(spans.offsets) for a in range(0, len(o), size) if len(o) - a >= 8]
    chosen = random.Random(seed).sample(pieces, min(count, len(pieces)))
    return [spans.text(piece, size) for piece in chosen]


def source_name(source: str) -> str:
    """A text source as reports name it: a file's folder and name (gutenberg/train.jsonl.gz), or a Hub name."""
    path = Path(source)
    return "/".join(path.parts[-2:]) if path.exists() else source


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
        count = held_out_count(len(texts), config.max_eval_documents)
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


def long_spans(
    texts: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
    length: int,
    count: int,
    seed: int,
    per_document: int | None = None,
) -> list[list[int]]:
    """`count` spans of exactly `length` tokens ([CLS] + length - 2 tokens of one document + [SEP]), drawn
    without overlap from the documents in a seeded order, as many as the documents hold up to `count`;
    at most `per_document` of each document (a seeded draw of its spans), or all."""
    return [span for _, span in drawn_spans(texts, tokenizer, length, count, seed, per_document)]


def drawn_spans(
    texts: datasets.Dataset,
    tokenizer: PreTrainedTokenizerBase,
    length: int,
    count: int,
    seed: int,
    per_document: int | None = None,
) -> list[tuple[int, list[int]]]:
    """`long_spans`' draw, each span with the index in `texts` of the document it is cut from (a script counts
    the documents a stage trains on: scripts/cpu/long_span_sources.py)."""
    body = length - 2
    first, last = special_ends(tokenizer)
    order = list(range(len(texts)))
    rng = random.Random(seed)
    rng.shuffle(order)
    spans: list[tuple[int, list[int]]] = []
    for i in order:
        ids = tokenizer(texts[i]["text"], add_special_tokens=False, verbose=False)["input_ids"]
        starts = list(range(0, len(ids) - body + 1, body))
        if per_document is not None and len(starts) > per_document:
            starts = sorted(rng.sample(starts, per_document))
        spans += [(i, first + ids[a : a + body] + last) for a in starts]
        if len(spans) >= count:
            break
    random.Random(seed + 1).shuffle(spans)
    return spans[:count]


def source_windows(
    sources: Sequence[datasets.Dataset],
    tokenizer: PreTrainedTokenizerBase,
    length: int,
    count: int,
    seed: int,
) -> list[list[int]]:
    """Up to `count` windows of exactly `length` tokens, at most 4 a document, taken from each source in
    turn (source 1's first, source 2's first, ..., source 1's second, ...), so that each source gives an equal
    share while it has windows left. Why in turn: drawn from all the documents at once, a few long books among
    50 000 reviews gave 8 of 80 windows (docs/reproduction/long-minilm/README.md, "Windows by source")."""
    drawn = [long_spans(texts, tokenizer, length, count, seed + i, per_document=4) for i, texts in
             enumerate(sources)]  # fmt: skip
    turns = itertools.zip_longest(*drawn)  # a source that runs short drops out of the turns
    return [window for row in turns for window in row if window is not None][:count]


def stage_examples(
    config: DistillConfig, train: datasets.Dataset, long_sources: Sequence[datasets.Dataset],
    tokenizer: PreTrainedTokenizerBase,
) -> datasets.Dataset:  # fmt: skip
    """The 512 stages' examples: `train`'s (`stage_text="train"`), or as many, half of them windows of
    seq_len tokens of the long text, each source in turn (`source_windows`; the held-out documents are not
    among `long_sources`), the rest a seeded draw of `train`'s ("train+long"); ValueError when the long text
    holds no such window."""
    if config.stage_text == "train":
        return train
    assert config.seq_len is not None
    windows = source_windows(long_sources, tokenizer, config.seq_len, len(train) // 2, config.seed + 3)
    if not windows:
        raise ValueError(
            f"stage_text='train+long': the long text holds no window of seq_len={config.seq_len} tokens; "
            "use --stage-text train"
        )
    # a seeded draw of train's examples, not its first ones: a second --train file is not left out
    kept = train.shuffle(seed=config.seed + 3).select(range(len(train) - len(windows)))
    rows = datasets.Dataset.from_dict(
        {"input_ids": windows, "attention_mask": [[1] * len(w) for w in windows]}
    )
    return datasets.concatenate_datasets([kept, rows.cast(kept.features)])
