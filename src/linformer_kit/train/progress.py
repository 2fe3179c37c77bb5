"""Labelled progress bars: the Trainer's own bars, named "train" and "evaluate"."""

from __future__ import annotations

from contextlib import contextmanager

from tqdm.auto import tqdm
from transformers.trainer_callback import ProgressCallback
from transformers.trainer_utils import has_length
from transformers.utils import logging as hf_logging


class LabelledProgressCallback(ProgressCallback):
    """`ProgressCallback` whose bars say what they count (the Trainer's are unlabelled).

    The bars are created here, labelled from their first line; the Trainer's callback updates them.
    """

    # ProgressCallback starts both as None in an unannotated __init__, which types them as None alone
    training_bar: tqdm | None  # type: ignore[assignment]
    prediction_bar: tqdm | None  # type: ignore[assignment]

    def on_train_begin(self, args, state, control, **kwargs):  # ProgressCallback's, with a label
        if state.is_world_process_zero:
            self.training_bar = tqdm(total=state.max_steps, dynamic_ncols=True, desc="train (steps)")
        self.current_step = 0

    def on_prediction_step(self, args, state, control, eval_dataloader=None, **kwargs):
        if state.is_world_process_zero and has_length(eval_dataloader) and self.prediction_bar is None:
            self.prediction_bar = tqdm(
                total=len(eval_dataloader), leave=self.training_bar is None, dynamic_ncols=True,
                desc="evaluate (batches)",
            )  # fmt: skip
        super().on_prediction_step(args, state, control, eval_dataloader=eval_dataloader, **kwargs)


@contextmanager
def no_save_bars():
    """transformers' "Writing model shards" bar off while a model is saved (a one-shard save needs none)."""
    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def label_progress(trainer) -> None:
    """Swap the Trainer's `ProgressCallback` (present unless --disable_tqdm) for the labelled one."""
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(LabelledProgressCallback())
