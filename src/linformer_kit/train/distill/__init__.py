"""`linformer distill`: a Linformer made from a pretrained encoder, keeping its quality by distillation.

    from linformer_kit.train.distill import DistillConfig, distill
    result = distill(DistillConfig(teacher="teacher/", output_dir="runs/student", train=["books/"]))

run.py is the run (its docstring says what it does); beside it, by concern: config.py (DistillConfig),
preflight.py (its file checks), data.py, losses.py, trainer.py, report.py (DistillResult) and long.py
(the long stage). The names below, run.py's `__all__`, import from here. run.py is imported last and
alone: it imports the pieces, each piece imports config.py, and none of them imports this package.
"""

# one list of the public names, run.py's `__all__`: this package re-exports exactly those
from linformer_kit.train.distill.run import *  # noqa: F403
from linformer_kit.train.distill.run import __all__ as __all__
