"""One table and plot of the recommended long student (`c1`) beside every baseline, from the suite's runs
made apart on the same seeded documents (docs/reproduction/long-minilm/README.md): writes
docs/reproduction/long-minilm/answer/longdocs.{json,md,png}.

    python scripts/cpu/gather_longdocs.py
"""

from __future__ import annotations

import json
from pathlib import Path

from linformer_kit.longdocs.report import Source, gathered, write_report

RUNS = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "long-minilm"
STUDENT = ("whole", "late-chunking-512")
BASELINES = ("truncate-512", "chunks-mean-512", "chunks-best-512")

SOURCES = [
    # the student, c1: passkey and needle at 256 ... 4 096 (seed 1), needle at 1 024 / 2 048 (seeds 2, 3),
    # book halves, long IMDB reviews at the suite's default probe
    Source(RUNS / "long4096-c1-late" / "synthetic", STUDENT),
    Source(RUNS / "long4096-c1-late" / "needle-seeds", STUDENT),
    Source(RUNS / "long4096-c1-seeds", ("whole",)),
    Source(RUNS / "long4096-c1-late" / "books", STUDENT),
    Source(RUNS / "long4096-c1-books", ("whole",)),
    Source(RUNS / "long4096-c1-books-seeds", ("whole",)),
    Source(RUNS / "long4096-c1-late" / "imdb-full", (*STUDENT, "truncate-512", "chunks-mean-512")),
    # the original on the same documents
    Source(RUNS / "long4096", BASELINES, ("passkey", "needle")),
    Source(RUNS / "needle4096-baselines", BASELINES),
    Source(RUNS / "long4096-c1-seeds", BASELINES),
    Source(RUNS / "long4096-books", BASELINES),
    Source(RUNS / "long4096-c1-books-seeds", BASELINES),
]


def main() -> None:
    out = RUNS / "answer"
    out.mkdir(exist_ok=True)
    records = gathered(SOURCES)
    (out / "longdocs.json").write_text(json.dumps({"records": records}, indent=1) + "\n", encoding="utf-8")
    timing = "each run timed apart, in its own process: compare within a run, not across them"
    for path in write_report(out, timing).values():
        print(f"wrote {path.relative_to(RUNS.parents[2])}")


if __name__ == "__main__":
    main()
