"""Training throughput from the Trainer's own step events (no timing code in the training loop)."""

from __future__ import annotations

import time

from transformers import TrainerCallback


class ThroughputCallback(TrainerCallback):
    """Input tokens per second over this invocation's optimizer steps, the first step excluded.

    Needs `TrainingArguments(include_num_input_tokens_seen="non_padding")`, which counts real tokens
    on every process. The first step pays for allocation and warm-up, and after a resume the counters
    start at the checkpoint's values, so the rate is taken between the first and last step seen here.
    """

    def __init__(self) -> None:
        self.first: tuple[int, float] | None = None
        self.last: tuple[int, float] | None = None

    def on_step_end(self, args, state, control, **kwargs):
        now = (state.num_input_tokens_seen, time.perf_counter())
        if self.first is None:
            self.first = now
        self.last = now

    def tokens_per_second(self) -> float | None:
        if self.first is None or self.last is None or self.last[1] == self.first[1]:
            return None
        return (self.last[0] - self.first[0]) / (self.last[1] - self.first[1])
