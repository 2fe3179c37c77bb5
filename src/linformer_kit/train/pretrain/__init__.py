"""`linformer pretrain`: masked-language-model pretraining of a Linformer (or its full-attention baseline).

    from linformer_kit.train.pretrain import PretrainConfig, pretrain
    result = pretrain(PretrainConfig(train=["books/"], output_dir="runs/mlm", preset="small", max_steps=300))

run.py is the run (its docstring says what it does); beside it, by concern: config.py (PretrainConfig),
preflight.py (its file checks), trainer.py (tokenizer, model, masking collator, MaskedLMTrainer) and
report.py (the start line, PretrainResult). The names below, run.py's `__all__`, import from here. run.py
is imported last and alone: it imports the pieces, each piece imports config.py, and none of them imports
this package.
"""

# one list of the public names, run.py's `__all__`: this package re-exports exactly those
from linformer_kit.train.pretrain.run import *  # noqa: F403
from linformer_kit.train.pretrain.run import __all__ as __all__
