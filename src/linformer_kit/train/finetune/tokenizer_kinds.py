"""The tokenizer of a new model (`linformer finetune --preset NAME --tokenizer KIND`): bytes, words, a folder.

    byte_tokenizer()          ids 0..4 the special tokens, 5 + b the byte b: each UTF-8 byte one id (LRA Text)
    word_tokenizer(texts)     ids 0..4 the special tokens, then every whitespace-separated word of `texts`,
                              most frequent first; any other word is <unk>
    listops_tokenizer(texts)  the word tokenizer behind LRA's ListOps input pipeline: "(" and ")" deleted
                              first, so "( ( [MAX 2 ) 9 ) ]" reads as the 4 tokens [MAX 2 9 ] (the
                              lengths 500-2000 of the task count no parentheses)
    new_model_tokenizer("bytes" | "word" | "listops" | DIR, texts)

Both kinds are built with the `tokenizers` library and wrapped in `PreTrainedTokenizerFast`, so they
are saved with the model (`tokenizer.json`) and load with `AutoTokenizer.from_pretrained(dir)` and in
`pipeline("text-classification", ...)`. Their special tokens are RoBERTa's, at RoBERTa's ids
(`train.data.SPECIAL_TOKENS`: <s> <pad> </s> <unk> <mask>), so pad is 1 as in `linformer pretrain`'s
tokenizers, and they add `<s> text </s>` (pairs `<s> a </s></s> b </s>`) as RoBERTa does.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal, get_args

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerBase, PreTrainedTokenizerFast

from linformer_kit.train.data import SPECIAL_TOKENS

TokenizerKind = Literal["bytes", "word", "listops"]
TOKENIZER_KINDS: tuple[str, ...] = get_args(TokenizerKind)
BYTE_OFFSET = len(SPECIAL_TOKENS)  # byte b has id BYTE_OFFSET + b


def check_tokenizer_source(source: str) -> None:
    """ValueError unless `source` is a tokenizer kind or a saved tokenizer folder (reads file names only)."""
    if source in TOKENIZER_KINDS:
        return  # a kind wins over a folder of that name (give ./bytes for the folder)
    folder = Path(source).expanduser()
    if not folder.is_dir():
        raise ValueError(
            f"tokenizer must be one of {TOKENIZER_KINDS} or a saved tokenizer folder, got {source!r} "
            "(no such folder)"
        )
    if not (folder / "tokenizer_config.json").is_file():
        raise ValueError(f"tokenizer: {source!r} is not a saved tokenizer folder (no tokenizer_config.json)")


def new_model_tokenizer(source: str, texts: Iterable[str]) -> PreTrainedTokenizerBase:
    """The tokenizer `source` names; "word" learns its vocabulary from `texts` (read only then)."""
    if source == "bytes":
        return byte_tokenizer()
    if source == "word":
        return word_tokenizer(texts)
    if source == "listops":
        return listops_tokenizer(texts)
    try:
        return AutoTokenizer.from_pretrained(source)
    except (OSError, ValueError) as error:
        raise ValueError(f"tokenizer: cannot load {source!r}: {str(error).splitlines()[0]}") from None


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in for every byte: the character the ByteLevel pre-tokenizer makes of it.

    Printable Latin-1 bytes stand for themselves; the other 68 (controls, space, ...) become chr(256 + i).
    """
    printable = [
        *range(ord("!"), ord("~") + 1),
        *range(ord("¡"), ord("¬") + 1),
        *range(ord("®"), ord("ÿ") + 1),
    ]
    others = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + i) for i, b in enumerate(others)}}


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """UTF-8 bytes as ids: a BPE over the 256 byte symbols with no merges, so every byte is one token.

    The ByteLevel pre-tokenizer maps bytes to their symbols with none of GPT-2's space handling
    (no prefix space, no regex split: spaces are bytes like any other), and its decoder maps them
    back, so decode(encode(text)) == text for any text. Special tokens are never read out of the
    text (`split_special_tokens`): a literal "<s>" in a review is the three bytes it is.
    """
    vocab = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
    vocab.update({symbol: BYTE_OFFSET + b for b, symbol in byte_to_unicode().items()})
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    return _wrapped(tokenizer, split_special_tokens=True)


def word_tokenizer(texts: Iterable[str], drop: str = "") -> PreTrainedTokenizerFast:
    """A word-level vocabulary of `texts` split at whitespace: the special tokens, then words by frequency.

    `drop`: characters deleted before the split (saved in the tokenizer, so every user of it drops them).
    """
    tokenizer = Tokenizer(models.WordLevel(unk_token="<unk>"))
    if drop:
        tokenizer.normalizer = normalizers.Sequence([normalizers.Replace(c, "") for c in drop])
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.WordLevelTrainer(special_tokens=SPECIAL_TOKENS, min_frequency=1, show_progress=False)
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return _wrapped(tokenizer)  # no decoder: decode joins the words with single spaces


def listops_tokenizer(texts: Iterable[str]) -> PreTrainedTokenizerFast:
    """LRA's ListOps input: parentheses deleted, then words (the release's files keep them; LRA reads none)."""
    return word_tokenizer(texts, drop="()")


def _wrapped(tokenizer: Tokenizer, **options: object) -> PreTrainedTokenizerFast:
    """RoBERTa's <s> ... </s> around the text, and the transformers tokenizer that saves and loads it."""
    bos, eos = SPECIAL_TOKENS.index("<s>"), SPECIAL_TOKENS.index("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", bos), ("</s>", eos)]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
        unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
        model_max_length=None,  # `limit_tokenizer` sets the model's longest input
        clean_up_tokenization_spaces=False,  # decode gives the text back ("a , b" stays, not "a, b")
        **options,
    )  # fmt: skip
