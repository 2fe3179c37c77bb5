"""Labelled progress bars: the Trainer's own bars, named "train" and "evaluate"."""

from __future__ import annotations

from transformers.trainer_callback import ProgressCallback


class LabelledProgressCallback(ProgressCallback):
    """`ProgressCallback` whose bars say what they count (the Trainer's are unlabelled)."""

    def on_train_begin(self, args, state, control, **kwargs):
        super().on_train_begin(args, state, control, **kwargs)
        if self.training_bar is not None:
            self.training_bar.set_description("train (steps)")

    def on_prediction_step(self, args, state, control, eval_dataloader=None, **kwargs):
        new = self.prediction_bar is None
        super().on_prediction_step(args, state, control, eval_dataloader=eval_dataloader, **kwargs)
        if new and self.prediction_bar is not None:
            self.prediction_bar.set_description("evaluate (batches)")


def label_progress(trainer) -> None:
    """Swap the Trainer's `ProgressCallback` (present unless --disable_tqdm) for the labelled one."""
    if trainer.pop_callback(ProgressCallback) is not None:
        trainer.add_callback(LabelledProgressCallback())
