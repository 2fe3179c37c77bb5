"""The training curve on disk as it grows: output_dir/log_history.jsonl, one JSON line per log entry.

`Trainer` keeps its log history in memory and writes it only into checkpoints and, at the end, into
metrics.json: a run cut between checkpoints (a time limit, a kill, a crash) would leave no curve at
all. This callback appends every entry (training loss, validation loss, learning rate, block length,
with its step) as it is logged, on the main process. The file always describes one run: a new run
starts it empty, and a resumed run first drops the entries after the step it resumes from (the
killed run logged them; the resumed one logs them again).
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import TrainerCallback

CURVE_FILE = "log_history.jsonl"


def read_curve(output_dir: str | Path) -> list[dict]:
    """The entries of output_dir/log_history.jsonl (a line cut by a kill is skipped)."""
    path = Path(output_dir) / CURVE_FILE
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # the last line of a killed run may be cut short
    return entries


class CurveCallback(TrainerCallback):
    """Appends each log entry to output_dir/log_history.jsonl (see the module docstring)."""

    def __init__(self) -> None:
        self.begun = False

    def on_train_begin(self, args, state, control, **kwargs):
        self._begin(args, state)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        if not self.begun:  # evaluation without training (max_steps=0)
            self._begin(args, state)
        with open(Path(args.output_dir) / CURVE_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps({**logs, "step": state.global_step}) + "\n")

    def _begin(self, args, state) -> None:
        """Keep what the run being resumed logged up to its checkpoint's step; a new run starts empty."""
        self.begun = True
        if not state.is_world_process_zero:
            return
        kept = [e for e in read_curve(args.output_dir) if e.get("step", 0) <= state.global_step]
        path = Path(args.output_dir) / CURVE_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(e) + "\n" for e in kept) if state.global_step else "")
