"""Long Range Arena data: the tasks of Tay et al. (ICLR 2021) as TSV files `linformer finetune` reads.

The Long Range Arena ("Long Range Arena: A Benchmark for Efficient Transformers", Tay et al., ICLR
2021) compares efficient Transformers, Linformer among them, on classification tasks of 1K-16K tokens.
Two of them are prepared here (`linformer lra prepare listops | text`):

- ListOps (`listops.py`): nested MIN / MAX / MEDIAN / SUM-MOD-10 expressions of 500-2000 tokens,
  generated as LRA's generator does; 10 classes.
- Text (`text.py`): IMDB reviews read as bytes, cut to 4,000 bytes; 2 classes.

Every file is a TSV with the header `Source<TAB>Target`, one example a line, nothing quoted: the
format of the LRA release (`lra_release/listops-1000/basic_{train,val,test}.tsv`). A user who has
the official release points training at its files instead. Each task also writes
`label_balance.json` (counts per class and the accuracy of always answering the majority class).

Standard library only: nothing here imports torch or transformers.
"""

from __future__ import annotations

from linformer_kit.lra.listops import ListOpsConfig, ListOpsResult, prepare_listops
from linformer_kit.lra.output import format_label_balance, label_balance
from linformer_kit.lra.text import TextConfig, TextResult, prepare_text

__all__ = [
    "ListOpsConfig",
    "ListOpsResult",
    "TextConfig",
    "TextResult",
    "format_label_balance",
    "label_balance",
    "prepare_listops",
    "prepare_text",
]
