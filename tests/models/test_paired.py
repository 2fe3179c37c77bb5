"""Paired differences (models/paired.py): query by query, over the seeds both readings hold, with the
normal interval of the module docstring; the table's cells; the suite's and the verdict's records keep hits."""

from __future__ import annotations

import pytest

from linformer_kit.longdocs.report import table
from linformer_kit.models.paired import (
    difference,
    differences,
    mrr_table,
    paired_table,
    rr_difference,
    rr_differences,
    t95,
)


def _record(method: str, outcomes: list[int], seed: int = 1, length: int = 4096, **extra) -> dict:
    """A longdocs.json record of these per-query outcomes; `extra` replaces any field (hits=None: an older run's)."""
    return {"task": "books", "length": length, "method": method, "score": 100 * sum(outcomes) / len(outcomes),
            "model": "m", "seed": seed, "seconds_per_document": 0.1, "depth": None, "queries": len(outcomes),
            "hits": outcomes, **extra}  # fmt: skip


def test_a_difference_is_b_minus_c_over_n_with_agresti_and_min_s_interval() -> None:
    mine = {1: [1, 1, 0, 1, 0, 1], 2: [1, 0, 0, 1]}
    theirs = {1: [1, 0, 0, 0, 0, 1], 2: [0, 0, 1, 1], 3: [1, 1, 1, 1]}  # seed 3: no partner, left out
    # b = 3 queries only mine hits, c = 1 only theirs, n = 10 every shared seed's: +20 points; the interval
    # worked by hand (a half in each cell: 3.5, 1.5 of 12): 100 (2 / 12 -+ 1.96 sqrt(5 - 4 / 12) / 12)
    diff, low, high, count = difference(mine, theirs)
    assert (diff, count) == (20.0, 10)
    assert (low, high) == pytest.approx((-18.617, 51.951), abs=1e-3)


def test_few_differing_queries_are_not_told_apart() -> None:
    """4 of 25 one way, none the other: the exact McNemar p is 0.125, and the interval holds 0 (a Wald
    interval would leave it out); one query, or outcomes all equal, never give a zero-width interval."""
    assert difference({1: [1] * 4 + [0] * 21}, {1: [0] * 25})[1] < 0
    one = difference({1: [1]}, {1: [0]})
    assert one[0] == 100.0
    assert one[1] < 0
    same = difference({1: [1, 0, 1, 1, 0, 0, 1, 0]}, {1: [1, 0, 1, 1, 0, 0, 1, 0]})
    assert same[0] == 0.0
    assert same[1] < 0 < same[2]


def test_a_seed_of_other_query_counts_is_left_out() -> None:
    """Runs of other settings gathered into one report: their seeds are not one run's methods."""
    assert difference({1: [1, 0, 1], 2: [1, 1]}, {1: [1, 0], 2: [0, 1]})[3] == 2
    assert difference({1: [1, 0, 1]}, {1: [1, 0]})[3] == 0


def test_differences_pair_each_model_reading_with_each_original_reading_of_its_task_and_length() -> None:
    records = [
        _record("whole", [1, 1, 1, 0]), _record("chunks-best-512", [1, 0, 0, 0]),
        _record("truncate-512", [0, 0, 0, 0]), _record("late-chunking-512", [1, 0, 0, 0]),
        _record("whole", [1, 1], length=1024), _record("chunks-best-512", [1, 1], length=1024),
        _record("chunks-mean-512", [1, 1, 1, 1], hits=None),  # an older record: no hits, no pair
        _record("whole", [1, 0, 0, 0], depth="0.00-0.25"),  # a depth subset is not a reading of its own
    ]  # fmt: skip
    got = {
        (e["length"], e["method"], e["against"]): (e["difference"], e["queries"])
        for e in differences(records)
    }
    assert got == {
        (1024, "whole", "chunks-best-512"): (0.0, 2),
        (4096, "late-chunking-512", "chunks-best-512"): (0.0, 4),
        (4096, "late-chunking-512", "truncate-512"): (25.0, 4),
        (4096, "whole", "chunks-best-512"): (50.0, 4),
        (4096, "whole", "truncate-512"): (75.0, 4),
        # the strongest of the original's chunk readings that keep hits (truncation is not a chunking)
        (1024, "whole", "strongest chunking"): (0.0, 2),
        (4096, "late-chunking-512", "strongest chunking"): (0.0, 4),
        (4096, "whole", "strongest chunking"): (50.0, 4),
    }


def test_the_strongest_chunking_is_the_chunk_reading_with_most_hits_of_any_length_and_stride() -> None:
    records = [
        _record("whole", [1, 1, 1, 0, 0]), _record("chunks-mean-512", [1, 0, 0, 0, 0]),
        _record("chunks-best-128", [1, 1, 0, 0, 0]), _record("chunks-mean-256-overlap", [1, 1, 1, 0, 1]),
        _record("truncate-512", [1, 1, 1, 1, 1]),  # not a chunking: never the strongest
        _record("contextual-chunks-256", [1, 0, 1, 0, 1]),  # the model's reading, at its own chunk length
    ]  # fmt: skip
    strongest = [e for e in differences(records) if e["against"] == "strongest chunking"]
    assert [(e["method"], e["strongest"], e["difference"]) for e in strongest] == [
        ("contextual-chunks-256", "chunks-mean-256-overlap", -20.0),
        ("whole", "chunks-mean-256-overlap", -20.0),
    ]
    text = paired_table(records)
    assert (
        "| vs truncate-512 | vs chunks-mean-256-overlap | vs chunks-mean-512 | vs chunks-best-128 | vs strongest chunking |"
        in text
    )
    assert "-20.0 [" in text
    assert "(chunks-mean-256-overlap)" in text


def test_the_table_bolds_a_difference_whose_interval_leaves_out_zero() -> None:
    many = 40
    records = [
        _record("whole", [1] * many), _record("chunks-best-512", [0] * many),  # +100, told apart
        _record("whole", [1, 0] * 20, length=1024), _record("chunks-best-512", [0, 1] * 20, length=1024),  # 0
    ]  # fmt: skip
    text = paired_table(records)
    assert "| books | 4096 | whole | 40 | **+100.0 [+87.3, +100.0]** |" in text
    assert "| books | 1024 | whole | 40 | +0.0 [-29.9, +29.9] |" in text
    assert "vs chunks-best-512" in text
    assert "Paired differences" in table(records)  # the suite's report carries it


def test_no_hits_no_table() -> None:
    records = [_record("whole", [1, 0], hits=None), _record("chunks-best-512", [1, 1], hits=None)]
    assert paired_table(records) == ""
    assert "Paired differences" not in table(records)


def test_the_strongest_chunking_is_chosen_on_the_queries_it_is_compared_on() -> None:
    """A chunking strong on a seed the model's reading lacks is not the strongest against it."""
    records = [
        _record("whole", [1, 0, 0, 0], seed=0),
        _record("chunks-best-512", [1, 1, 0, 0], seed=0),
        _record("chunks-mean-256", [0, 0, 0, 1], seed=0), _record("chunks-mean-256", [1, 1, 1, 1], seed=1),
    ]  # fmt: skip
    (strongest,) = [e for e in differences(records) if e["against"] == "strongest chunking"]
    assert (strongest["strongest"], strongest["difference"]) == ("chunks-best-512", -25.0)


def test_of_chunkings_tied_on_hits_the_strongest_is_the_one_the_model_is_weakest_against() -> None:
    """Tied on hits, the chunking whose paired interval with the model's reading reaches lowest: the stricter."""
    records = [
        _record("whole", [1, 1, 0, 0], seed=0),
        _record("chunks-best-512", [1, 1, 0, 0], seed=0),  # the model's own hits: a narrow interval
        _record("chunks-mean-256", [0, 0, 1, 1], seed=0),  # the same count, the other queries: a wide one
    ]  # fmt: skip
    (strongest,) = [e for e in differences(records) if e["against"] == "strongest chunking"]
    assert strongest["strongest"] == "chunks-mean-256"


def _ranked(method: str, ranks: list[int], seed: int = 1, length: int = 4096) -> dict:
    """A retrieval's record: its hits the ranks of 1, the ranks kept (`Record.of_ranks`)."""
    return _record(method, [int(r == 1) for r in ranks], seed, length, ranks=ranks)


def test_an_mrr_difference_is_the_mean_reciprocal_rank_difference_with_student_s_interval() -> None:
    mine, theirs = {1: [1, 2, 1, 4], 2: [1, 3]}, {1: [2, 2, 1, 1], 2: [1, 1], 3: [5]}  # seed 3: no partner
    d = [0.5, 0.0, 0.0, -0.75, 0.0, -2 / 3]  # 1 / mine - 1 / theirs, query by query
    mean = sum(d) / 6
    sd = (sum((x - mean) ** 2 for x in d) / 5) ** 0.5
    diff, low, high, n = rr_difference(mine, theirs)
    assert n == 6
    t = t95(5)
    assert t == pytest.approx(
        2.5706, abs=0.003
    )  # Student's 97.5 % quantile at 5 degrees of freedom (the table's)
    assert (diff, low, high) == pytest.approx(
        (100 * mean, 100 * (mean - t * sd / 6**0.5), 100 * (mean + t * sd / 6**0.5))
    )
    assert [round(t95(df), 3) for df in (10, 24, 100)] == [2.228, 2.064, 1.984]  # the table's, to 3 places


def test_the_mrr_table_sets_each_model_reading_against_the_chunking_of_most_mrr() -> None:
    records = [
        _ranked("whole", [1] * 30 + [2] * 10),
        # the same hits; by MRR chunks-chamfer-512 (its misses at rank 2) is the stronger chunking
        _ranked("chunks-best-512", [1] * 20 + [9] * 20), _ranked("chunks-chamfer-512", [1] * 20 + [2] * 20),
        _ranked("truncate-512", [1] * 40),  # not a chunking: never the strongest
        _record("chunks-mean-512", [1] * 40),  # keeps no ranks (an older run's record): not read
    ]  # fmt: skip
    (entry,) = rr_differences(records)
    assert (entry["method"], entry["strongest"], entry["queries"]) == ("whole", "chunks-chamfer-512", 40)
    assert entry["mrr"] == pytest.approx(100 * (30 + 5) / 40)
    assert entry["strongest_mrr"] == pytest.approx(100 * (20 + 10) / 40)
    assert entry["difference"] == pytest.approx(12.5)
    assert entry["low"] > 0
    text = mrr_table(records)
    assert "| books | 4096 | whole | 40 | 87.5 | chunks-chamfer-512 75.0 | **+12.5 [" in text
    assert "MRR, in points" in table(records)  # the suite's report carries it
    assert mrr_table([_record("whole", [1, 0]), _record("chunks-best-512", [1, 1])]) == ""
