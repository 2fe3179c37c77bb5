"""`linformer pretrain`: masked-language-model pretraining of a Linformer (or its full-attention baseline).

    from linformer_kit.train.pretrain import PretrainConfig, pretrain
    result = pretrain(PretrainConfig(train=["books/"], output_dir="runs/mlm", preset="small", max_steps=300))

run.py is the run (its docstring says what it does); beside it, by concern: config.py (PretrainConfig),
preflight.py (its file checks), trainer.py (tokenizer, model, masking collator, MaskedLMTrainer) and
report.py (the start line, PretrainResult). The names below, run.py's `__all__`, import from here. run.py
is imported last and alone: it imports the pieces, each piece imports config.py, and none of them imports
this package.
"""

from linformer_kit.train.pretrain.run import (
    PRESETS,
    MaskedLMTrainer,
    PretrainConfig,
    PretrainResult,
    ResumableMaskingCollator,
    build_model,
    build_tokenizer,
    no_context_advice,
    pretrain,
    start_line,
    warn_if_no_context,
)

__all__ = [
    "PRESETS",
    "MaskedLMTrainer",
    "PretrainConfig",
    "PretrainResult",
    "ResumableMaskingCollator",
    "build_model",
    "build_tokenizer",
    "no_context_advice",
    "pretrain",
    "start_line",
    "warn_if_no_context",
]
