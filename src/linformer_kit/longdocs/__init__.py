"""The long-document suite (`linformer longdocs`): a long encoder against what 512-token encoders' users do.

Synthetic retrieval as LongEmbed builds it (passkey, needle), real long tasks (long IMDB reviews,
book and article halves), each at lengths 256 ... 8 192 and timed, for the model reading the whole
text and for the original truncated, chunked (mean, best chunk), late-chunked and extended
(models/readings.py; the halves task: models/halves.py). Records, a Markdown table and a plot (`suite.py`, `report.py`).
"""

from linformer_kit.longdocs.config import TASKS, LongDocsConfig
from linformer_kit.models.readings import METHODS

__all__ = ["METHODS", "TASKS", "LongDocsConfig"]
