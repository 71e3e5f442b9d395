"""Kata 07: let an XTC strategy define the search space, and search it.

A strategy (`xtc.search.strategies`) turns a graph into a space of schedules, each one a
*sample*: a short list of integers (tile sizes, unroll factors...). `strategy.sample(num,
seed)` draws distinct samples, `strategy.generate(scheduler, sample)` applies one to a
scheduler. The problem is the tutorial's 64x128x256 float32 matmul. One space, for
example, built for 8 lanes (not necessarily a good one):

    Strategy_PRP(graph, vec_size=8, max_unroll=64)

See your search run, with a progress bar, a top-10 table and a plot:
    xtc-katas explore 7 --backend mlir

Read README.md in this folder first, then run: pytest katas/07_strategies
"""

from collections.abc import Iterator
from typing import Any


def make_strategy(graph: Any) -> Any:
    """Choose a strategy class of xtc.search.strategies and its parameters for `graph`:
    a space whose 30 samples of seed 42 hold a fast schedule on this machine."""
    raise NotImplementedError


def explore_strategy(
    graph: Any, Backend: Any, strategy: Any, num: int, seed: int, peak_fmas_per_s: float
) -> Iterator[tuple[int, int, list[int], float]]:
    """Draw `num` samples with `seed`; compile and measure each lazily, as kata 06's
    explore does per spec (strategy.generate applies a sample to a fresh scheduler).

    Yield (index, total, sample, percent_of_peak); an invalid sample yields 0.0 and the
    search goes on.
    """
    raise NotImplementedError
