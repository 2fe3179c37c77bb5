"""One table of a long student on the held-out books beside the original's chunkings, from two `longdocs` runs on
the same seeded pairs (the baselines' run and the student's: docs/longdocs.md, "The held-out books"): writes
FOLDER/longdocs.{json,md,png}, the paired table setting each student reading against each chunking and the
strongest.

    python scripts/cpu/gather_heldout.py runs/eval/baselines-4096-p300 runs/eval/h40-s42-4096-p300 \
        docs/reproduction/long-minilm/heldout/h40-s42
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from linformer_kit.longdocs.report import Source, gathered, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("baselines", type=Path, help="the original's run (--baselines)")
    parser.add_argument(
        "student", type=Path, help="the student's run on the same documents, lengths, pairs, seeds"
    )
    parser.add_argument("out", type=Path, help="the folder to write longdocs.{json,md,png} into")
    args = parser.parse_args()
    methods = [
        {r["method"] for r in json.loads((f / "longdocs.json").read_text())["records"]}
        for f in (args.baselines, args.student)
    ]
    records = gathered(
        [Source(args.baselines, tuple(sorted(methods[0]))), Source(args.student, tuple(sorted(methods[1])))]
    )
    args.out.mkdir(parents=True, exist_ok=True)
    body = {"sources": [str(args.baselines), str(args.student)], "records": records}
    (args.out / "longdocs.json").write_text(json.dumps(body, indent=1) + "\n", encoding="utf-8")
    paths = write_report(args.out, timing="two runs, each A/B in its own process: compare within a run only")
    print(paths["table"].read_text())


if __name__ == "__main__":
    main()
