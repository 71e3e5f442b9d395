"""Kata 08's reference tunes over candidates: every one it may choose must be a valid
schedule, at 1 thread and with its parallel loop, for both SIMD widths it meets.

A CI run once chose a plain candidate at 1 thread whose parallel variant parallelized
`k`, its first loop (the reduction): TVM refused to compile it at 2 threads. A split
candidate (`i[0:1008]`, `i[1008:]`) parallelizes a loop in each of its parts. The
tuning itself needs a quiet machine; these checks only build the schedules.
"""

from __future__ import annotations

import pytest

from xtc_katas.checks.schedule import check_schedule, fresh_scheduler
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import CHALLENGE

KATA = find(8)


def parallel_loops(spec: dict) -> list[str]:
    """The loops a spec parallelizes, those of each part of a split included."""
    found = []
    for loop, notes in spec.items():
        if "[" in loop:
            found += parallel_loops(notes)
        elif notes.get("parallelize"):
            found.append(loop)
    return found


@pytest.mark.parametrize("lanes", [8, 16], ids=["avx2", "avx512"])
def test_every_candidate_and_its_parallel_variants_are_valid_schedules(backend, lanes):
    from xtc.schedules.descript import descript_scheduler

    reference = loader.load(KATA, solution=True)
    for name, spec in reference.candidates(lanes).items():
        for variant, each in reference.with_threads(spec, name).items():
            parallel = parallel_loops(each)
            assert parallel in ([], ["i"], ["j"], ["j", "j"]), (variant, parallel)
            _, scheduler = fresh_scheduler(backend, CHALLENGE)
            descript_scheduler(
                scheduler=scheduler,
                node_name=CHALLENGE.scheduled_node,
                abstract_dims=CHALLENGE.dims,
                spec=each,
            )
            check_schedule(scheduler, KATA.id, "schedule_large", CHALLENGE)
            scheduler.schedule()


def test_at_two_threads_a_split_is_also_tried_with_narrower_blocks_of_columns_in_each_part():
    # 4 blocks of 256 columns ran the 6x16 split 14.0-14.5 ms at 2 threads where 2 of 512
    # ran it in 14.9-15.1 (TVM, Intel Xeon family 6 model 207 as AVX2): each part of the
    # split must get the narrower block, or the two parts tile j differently.
    reference = loader.load(KATA, solution=True)
    spec = reference.split_spec(6, 16, 48, 128, 4)
    variants = reference.with_threads(spec, "6x16")
    assert list(variants) == [
        "6x16",
        "6x16 parallel",
        "6x16 parallel j#256",
        "6x16 parallel j#128",
    ]
    for part in variants["6x16 parallel j#256"].values():
        assert "j#256" in part and "j#512" not in part and part["j"] == {"parallelize": True}
