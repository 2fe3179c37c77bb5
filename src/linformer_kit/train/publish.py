"""What a finished run leaves in its output directory, ready to share as it is.

    output_dir/  model.safetensors, config.json, modeling_linformer.py (trust_remote_code),
                 tokenizer files (model_max_length = the model's longest input), metrics.json, README.md

Checkpoints (`checkpoint-*/`) keep everything `Trainer` needs to resume; the final directory does not
keep `training_args.bin` (a pickle nobody should have to load to use the model).
"""

from __future__ import annotations

from transformers import PretrainedConfig, PreTrainedTokenizerBase


def limit_tokenizer(tokenizer: PreTrainedTokenizerBase, model_config: PretrainedConfig) -> None:
    """Give the tokenizer the model's longest input, so `truncation=True` truncates to a length that runs.

    A freshly trained tokenizer has no limit (`model_max_length` ~1e30): pipelines and
    sentence-transformers then pass over-long inputs through and the model raises. Models without
    a `max_seq_len` (not Linformer) keep their tokenizer's own limit.
    """
    limit = getattr(model_config, "max_seq_len", None)
    if limit is not None:
        tokenizer.model_max_length = min(tokenizer.model_max_length, limit)
