"""The one rule for each thing a model's config decides and several readers need.

    first_position_row, longest_input, position_rows   the position numbering: RoBERTa's starts after
                                                       the pad row, BERT's at row 0
    input_limit                                        what a tokenizer or pipeline saved with a model reads
    head_of, auto_class_of                             which task head a saved model holds, and the Auto
                                                       class that loads it with that head

Each takes a config object or config.json read as a dict (the checks before any load have only the
dict). Apart from models/loading.py, which loads weights: these read a config and nothing else.
Part of the code a saved directory carries (models/remote_code.py): no import of this package.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from transformers import PreTrainedConfig

# position ids start after the pad id in these (fairseq's numbering): the longest input is shorter by pad + 1
PAD_OFFSET_TYPES = ("roberta", "xlm-roberta", "camembert", "roberta-prelayernorm", "data2vec-text")


def first_position_row(config: Mapping[str, Any] | PreTrainedConfig) -> int:
    """The position-table row of position 0: the one numbering rule, for every model type.

    RoBERTa-style numbering (the types above, and a Linformer with position_style "roberta") starts
    after the pad row, at pad_token_id + 1; BERT-style at row 0. `config` is a config object or
    config.json as a dict: the callers that check a folder before loading anything have only the dict.
    """
    model_type = _setting(config, "model_type")
    roberta_numbering = model_type in PAD_OFFSET_TYPES or (
        model_type == "linformer" and _setting(config, "position_style", "roberta") == "roberta"
    )
    return int(_setting(config, "pad_token_id") or 0) + 1 if roberta_numbering else 0


def longest_input(config: Mapping[str, Any] | PreTrainedConfig) -> int:
    """The longest input a model's config allows: its position rows from position 0 on (514 -> 512 in
    RoBERTa's numbering, max_position_embeddings in BERT's)."""
    return int(_setting(config, "max_position_embeddings", 512)) - first_position_row(config)


def position_rows(config: Mapping[str, Any] | PreTrainedConfig, longest: int) -> int:
    """max_position_embeddings for inputs up to `longest` tokens in `config`'s numbering: `longest_input`'s
    inverse, for a model built or extended to a length."""
    return first_position_row(config) + longest


def input_limit(own: int | None, longest: int, exact: bool = False) -> int:
    """What a tokenizer (`model_max_length`) or sentence-transformers pipeline (`max_seq_length`) saved
    with a model reads up to, given its own limit and the model's longest input.

    `exact` (the model was made for a length: `convert` / `extend --max-length`): the longest input, so
    an extended model reads that long. Otherwise its own limit capped at the longest input, so that
    `truncation=True` truncates to a length that runs; no limit of its own (None, 0) is the longest input.
    """
    return longest if exact or not own else min(own, longest)


# the task heads a saved model can hold, as the suffix of its class name ("Model": the bare encoder)
Head = Literal["Model", "ForMaskedLM", "ForSequenceClassification", "ForTokenClassification"]
HEAD_NAMES: tuple[Head, ...] = get_args(Head)


def head_of(config: Mapping[str, Any] | PreTrainedConfig) -> Head:
    """The task head of the model a config (or config.json as a dict) was saved from: the suffix of the
    first class in its `architectures` that ends in one ("BertForMaskedLM" -> "ForMaskedLM"), else
    "Model" (no architectures, or only other heads: the bare encoder). The one rule of every reader of
    a model folder (convert's source, extend's Linformer, distill's teacher)."""
    for name in _setting(config, "architectures") or []:
        for head in HEAD_NAMES[1:]:
            if name.endswith(head):
                return head
    return "Model"


def auto_class_of(config: Mapping[str, Any] | PreTrainedConfig) -> Any:
    """The transformers Auto class that loads the model of `config` with the head it holds (`head_of`):
    `AutoModel`, `AutoModelForMaskedLM`, `AutoModelForSequenceClassification` or
    `AutoModelForTokenClassification` (the class within it follows the config's model_type)."""
    import transformers

    head = head_of(config)
    return getattr(transformers, "AutoModel" if head == "Model" else f"AutoModel{head}")


def _setting(config: Mapping[str, Any] | PreTrainedConfig, name: str, default: Any = None) -> Any:
    """A field of a config object, or of config.json read as a dict."""
    return config.get(name, default) if isinstance(config, Mapping) else getattr(config, name, default)
