"""Kata 06: search a space of schedules instead of writing one.

`candidate_specs()` is your search space: named descript specs (kata 05) for the
tutorial's 4x32x512 matmul. `explore(...)` is the search: a generator that compiles and
measures one candidate at a time and yields what it found, so a progress bar can show
each result as it arrives and a caller can stop early.

See your search run, with a progress bar, a top-10 table and a plot:
    xtc-katas explore 6 --backend mlir

Read README.md in this folder first, then run: pytest katas/06_explore
"""

from collections.abc import Iterator
from typing import Any


def candidate_specs() -> list[tuple[str, dict]]:
    """Your search space: at most 32 (name, spec) pairs, each spec for descript_scheduler.

    Specs as in kata 05, varying what you are unsure of; every one valid on this machine."""
    raise NotImplementedError


def explore(
    graph: Any, Backend: Any, specs: list[tuple[str, dict]], peak_fmas_per_s: float
) -> Iterator[tuple[int, int, str, float]]:
    """Compile and measure each spec lazily; yield (index, total, name, percent_of_peak).

    `index` counts 0, 1, 2, ... in the order of `specs`; `total` is len(specs).
    Per spec: a scheduler from a fresh Backend(graph), the spec applied with
    descript_scheduler (kata 05), then kata 03's compile and evaluate, each compile with
    a dump_file of its own. A spec that fails to schedule, compile or run yields 0.0, and
    the search goes on.
    """
    raise NotImplementedError
