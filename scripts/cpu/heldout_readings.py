"""Score readings of the held-out pairs from the rows heldout_rows.py kept (issue "A long student worth it at 4 096").

Each reading is a score s(q, d) between a first half q and a second half d; q finds d when its own second half
scores highest among every second half of the draw. Two scores of a reading, per query:

    hit@1  whether its own second half ranks first (the suite's accuracy@1; paired interval: paired.py's
           Agresti-Min)
    RR     1 / the rank of its own second half (the mean is the MRR; a paired 95 % interval is Student's on
           the per-query differences, paired.py `rr_difference`): a miss at rank 2 counts half a hit, so it
           varies less across queries than hit@1 on the same pairs (item 1's "less variance")

Ranks and scores are the suite's (readings.py `retrieval_scores`, `ranks_of`: a tie ranks the earlier
document first). readings-k256.json and readings-whole.json were scored before this script read them from
there: with ties counted against the query's own half (a tie of two float scores is rare; those rows are no longer
kept, so the two rules were not compared on them) and the
normal quantile 1.96 for the MRR interval (Student's at 299 degrees of freedom is 1.968: 0.4 % wider).

The readings (`READINGS`, named before the dev pairs were read; every one reported, chosen on dev, read on test):

    the original's 512-token chunk rows c (unit):
      chunks-best      q's rows averaged (normalised), d's best row: the suite's chunks-best-512
      chunks-mean      both averaged: chunks-mean-512
      chunks-chamfer   mean over q's rows of the best of d's rows (ColBERT's MaxSim at the chunk level)
    the student (its whole reading's text states, pooled):
      whole            the suite's `whole`
      late-N           spans of N text tokens pooled (unit), read as chunks-best; N = 510, 1020, 2046
      contextual       c_i + the student's span over chunk i's 510 tokens, normalised: contextual-chunks-512
      contextual-chamfer, late-510-chamfer   the same rows scored as chunks-chamfer
      whole+best       cos(whole) + chunks-best's score: the student's one vector beside the original's chunks

    python scripts/cpu/heldout_readings.py ROWS_DIR OUT.json [--suite-chunkings LONGDOCS.json]

Each draw heldout_rows.py read is scored (its meta.json's `pairs`): rows of `--draws test` give `test` alone.

--suite-chunkings adds to the test split's strongest chunking by hit@1 every other chunking a suite run read on
the same pairs (`longdocs --documents HELD --pairs 300 --seeds 1 --baselines 256`: chunks of 256 tokens,
consecutive and overlapping, averaged and best), from the per-query hits its records keep; refused unless its own
best and averaged 512-token chunks hit exactly the queries this script's do (the same pairs, in the same
order). Those records keep no ranks: the strongest by MRR stays among the 512-token chunkings.

Not run in tests: reads heldout_rows.py's output (about 40 minutes of 2 cores to make).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import torch
from safetensors.torch import load_file
from torch.nn import functional as F

from linformer_kit.models.paired import difference, rr_difference
from linformer_kit.models.retrieval import ranks_of, retrieval_scores

Rows = dict[str, torch.Tensor]
Score = Callable[[Rows, Rows], torch.Tensor]  # (queries' rows, documents' rows) -> (Q, N) scores


def chunk_rows(rows: Rows) -> list[torch.Tensor]:
    """Each text's original chunk rows (m_i, D), unit."""
    return [r[:m] for r, m in zip(rows["chunk_rows"], rows["chunk_counts"].tolist(), strict=True)]


def spans(rows: Rows, size: int) -> list[torch.Tensor]:
    """Each text's student states pooled over spans of `size` text tokens (a multiple of the group), unit."""
    per = size // 6
    sums, counts = rows["group_sums"].float(), rows["group_counts"]
    out = []
    for s, c in zip(sums, counts, strict=True):
        filled = int((c > 0).sum())
        pooled = [
            s[a : min(a + per, filled)].sum(0) / c[a : min(a + per, filled)].sum()
            for a in range(0, filled, per)
        ]
        out.append(F.normalize(torch.stack(pooled), dim=-1))
    return out


def contextual(rows: Rows) -> list[torch.Tensor]:
    """c_i + the student's pooled span of chunk i's tokens, normalised (readings.contextual_rows, weight 1)."""
    out = []
    for c, s in zip(chunk_rows(rows), spans(rows, 510), strict=True):
        context = torch.cat([s, torch.zeros_like(c[len(s) :])])[: len(c)]
        out.append(F.normalize(c + context, dim=-1))
    return out


def best(q: list[torch.Tensor], d: list[torch.Tensor]) -> torch.Tensor:
    """(Q, N): cos(normalised mean of q's rows, d's best row): the suite's retrieval."""
    return retrieval_scores(q, d)


def chamfer(q: list[torch.Tensor], d: list[torch.Tensor]) -> torch.Tensor:
    """(Q, N): mean over q's rows of the best of d's rows: the suite's Chamfer methods."""
    return retrieval_scores(q, d, chamfer=True)


def one_row(q: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    return q @ d.T


READINGS: dict[str, Score] = {
    "chunks-best": lambda q, d: best(chunk_rows(q), chunk_rows(d)),
    "chunks-mean": lambda q, d: one_row(
        *(torch.stack([F.normalize(r.mean(0), dim=-1) for r in chunk_rows(x)]) for x in (q, d))
    ),
    "chunks-chamfer": lambda q, d: chamfer(chunk_rows(q), chunk_rows(d)),
    "whole": lambda q, d: one_row(q["whole"], d["whole"]),
    "late-510": lambda q, d: best(spans(q, 510), spans(d, 510)),
    "late-1020": lambda q, d: best(spans(q, 1020), spans(d, 1020)),
    "late-2046": lambda q, d: best(spans(q, 2046), spans(d, 2046)),
    "late-510-chamfer": lambda q, d: chamfer(spans(q, 510), spans(d, 510)),
    "contextual": lambda q, d: best(contextual(q), contextual(d)),
    "contextual-chamfer": lambda q, d: chamfer(contextual(q), contextual(d)),
    "whole+best": lambda q, d: one_row(q["whole"], d["whole"]) + best(chunk_rows(q), chunk_rows(d)),
}
ORIGINAL = ("chunks-best", "chunks-mean", "chunks-chamfer")


def rr_interval(mine: torch.Tensor, theirs: torch.Tensor) -> tuple[float, float, float]:
    """MRR difference in points and its 95 % interval (Student's), paired by query (paired.py `rr_difference`),
    of two readings' ranks."""
    diff, low, high, _ = rr_difference({1: mine.tolist()}, {1: theirs.tolist()})
    return round(diff, 2), round(low, 2), round(high, 2)


def suite_chunkings(path: Path, length: int, own: dict[str, list[int]]) -> dict[str, list[int]]:
    """{label: per-query hits} of the original's chunkings in a suite record at `length` (task documents, seed
    1), checked against this script's own 512-token chunkings `own` (the same pairs, in the same order)."""
    records = [r for r in json.loads(path.read_text())["records"]
               if (r["task"], r["length"], r["seed"], r.get("depth")) == ("documents", length, 1, None)
               and r["method"].startswith("chunks-") and r.get("hits")]  # fmt: skip
    hits = {r["method"]: list(r["hits"]) for r in records}
    for mine, theirs in (("chunks-best", "chunks-best-512"), ("chunks-mean", "chunks-mean-512")):
        if hits.get(theirs) != own[mine]:
            raise ValueError(f"{path}: {theirs}'s hits differ from this draw's {mine}: not the same pairs")
    return {m: h for m, h in hits.items() if m not in ("chunks-best-512", "chunks-mean-512")}


def score_split(folder: Path, split: str, extra: Path | None = None) -> dict:
    q = load_file(str(folder / f"{split}-firsts.safetensors"))
    d = load_file(str(folder / f"{split}-seconds.safetensors"))
    results: dict[str, dict] = {}
    per: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    for name, score in READINGS.items():
        r = ranks_of(score(q, d), list(range(len(q["whole"]))))  # q's own second half: the diagonal
        hits, rr = (r == 1).int(), 1.0 / r.double()
        per[name] = (hits, r)
        results[name] = {
            "hit@1": round(100 * float(hits.float().mean()), 2),
            "MRR": round(100 * float(rr.mean()), 2),
            "ranks": r.tolist(),  # each query's, in pair order: a later scoring needs no rows
        }
    strongest_rr = max(ORIGINAL, key=lambda m: results[m]["MRR"])
    chunkings = {m: per[m][0].tolist() for m in ORIGINAL}
    if extra is not None:
        length = json.loads((folder / "meta.json").read_text())["length"]
        chunkings |= suite_chunkings(extra, length, chunkings)
    for name in READINGS:
        if name in ORIGINAL:
            continue
        # the strongest chunking by hits; of those tied, the one this reading's interval is lowest against
        # (paired.py's rule: never the kinder one)
        against = {m: difference({1: per[name][0].tolist()}, {1: h}) for m, h in chunkings.items()}
        strongest = max(chunkings, key=lambda m: (sum(chunkings[m]), -against[m][1]))
        diff, low, high, _n = against[strongest]
        results[name]["hit@1 vs strongest"] = [round(diff, 2), round(low, 2), round(high, 2), strongest]
        results[name]["MRR vs strongest"] = [*rr_interval(per[name][1], per[strongest_rr][1]), strongest_rr]
    scored = {"pairs": len(q["whole"]), "strongest by MRR": strongest_rr, "readings": results}
    if extra is not None:
        scored["suite chunkings"] = {"file": str(extra), "hit@1": {m: round(100 * sum(h) / len(h), 2)
                                                                   for m, h in chunkings.items() if m not in ORIGINAL}}  # fmt: skip
    return scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--suite-chunkings", type=Path, default=None)
    args = parser.parse_args()
    meta = json.loads((args.rows / "meta.json").read_text())
    splits = [s for s in ("dev", "test") if s in meta["pairs"]]  # heldout_rows.py --draws: test alone too
    if args.suite_chunkings is not None and "test" not in splits:
        parser.error(
            f"--suite-chunkings {args.suite_chunkings}: adds to the test draw's chunkings, and {args.rows} holds none"
        )
    body = {"rows": meta}
    for split in splits:
        body[split] = score_split(args.rows, split, args.suite_chunkings if split == "test" else None)
    args.out.write_text(json.dumps(body, indent=1) + "\n")
    for split in splits:
        print(split, body[split]["pairs"], "pairs")
        for name, r in body[split]["readings"].items():  # (ranks not printed)
            print(
                f"  {name:20s} {r['hit@1']:6.2f} {r['MRR']:6.2f}  {r.get('hit@1 vs strongest', '')}  {r.get('MRR vs strongest', '')}"
            )


if __name__ == "__main__":
    main()
