"""`linformer finetune`: sequence classification, finetuning a pretrained model or training a new one.

    from linformer_kit.train.finetune import FinetuneConfig, finetune
    result = finetune(FinetuneConfig(model="runs/mlm", glue_task="sst2", output_dir="runs/sst2"))

run.py is the run (its docstring says what it does); beside it, by concern: config.py (FinetuneConfig),
preflight.py (its file checks), data.py (the splits, labels -> classes), trainer.py (tokenizer,
classifier, the dev metrics), report.py (FinetuneResult) and tokenizer_kinds.py (a new model's
tokenizer). The names below, run.py's `__all__`, import from here. run.py is imported last and alone: it
imports the pieces, each piece imports config.py, and none of them imports this package.
"""

# one list of the public names, run.py's `__all__`: this package re-exports exactly those
from linformer_kit.train.finetune.run import *  # noqa: F403
from linformer_kit.train.finetune.run import __all__ as __all__
