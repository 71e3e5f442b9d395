"""Kata 08's reference tunes over candidates: every one it may choose must be a valid
schedule, at 1 thread and with its parallel loop, for both SIMD widths it meets.

A CI run once chose a plain candidate at 1 thread whose parallel variant parallelized
`k`, its first loop (the reduction): TVM refused to compile it at 2 threads. A split
candidate (`i[0:1008]`, `i[1008:]`) parallelizes a loop in each of its parts. The
tuning itself needs a quiet machine; these checks only build the schedules.
"""

from __future__ import annotations

import pytest

from xtc_katas.checks.learner_schedules import fresh_scheduler
from xtc_katas.checks.schedule import check_schedule
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
def test_every_candidate_and_its_parallel_variant_is_a_valid_schedule(backend, lanes):
    from xtc.schedules.descript import descript_scheduler

    reference = loader.load(KATA, solution=True)
    for name, spec in reference.candidates(lanes).items():
        for variant, each in reference.with_threads(spec, name).items():
            parallel = parallel_loops(each)
            assert parallel in ([], ["i"], ["j"], ["j", "j"]), (variant, parallel)
            _, scheduler = fresh_scheduler(backend, CHALLENGE)
            descript_scheduler(
                scheduler=scheduler, node_name="C", abstract_dims=["i", "j", "k"], spec=each
            )
            check_schedule(scheduler, KATA.id, "schedule_large", CHALLENGE.reduction_axes)
            scheduler.schedule()
