"""Kata 12: an optimizer that beats random search, on XTC's optimizer interface.

XTC's search (`xtc.search.explore`) compiles and measures the samples an optimizer
suggests, a batch at a time, and tells it how each did:

    class Optimizer:                      # xtc.itf.search.optimizer
        def suggest(self) -> list[list[int]]     # the next batch: `batch` samples
        def observe(self, x, y) -> None          # x: the samples evaluated; y: each
                                                 # one's fraction of peak, higher is better
        def finished(self) -> None               # the search is over

At each step XTC evaluates `suggest()[:size]` (size: `batch`, or the trials left) and
never asks again within a step: give exactly `batch` samples.

A sample is a strategy's list of ints (one tile factor per tiling level, kata 07). The
only way to get valid ones is `sample_fn(num, seed)`, which draws `num` distinct ones at
random; drawing costs nothing, evaluating costs a compile. XTC's RandomOptimizer suggests
`list(sample_fn(batch, rng.randint(0, 2**32 - 1)))` every time.

Read README.md in this folder first, then run: pytest katas/12_optimizer
"""

from collections.abc import Callable, Iterator

from xtc.itf.search.optimizer import Optimizer

Sample = list[int]


def make_optimizer(
    sample_fn: Callable[[int, int], Iterator[Sample]], batch: int, seed: int
) -> Optimizer:
    """An optimizer of your design (a class in this file, subclassing Optimizer) that
    suggests exactly `batch` samples per call, the same ones for the same seed and the
    same observations, and finds better samples than random sampling by using what it
    observed.

    What you have: sample_fn(num, seed), num distinct valid samples, free to draw;
    observe(x, y), the only news of how samples did (higher is better); and a
    random.Random(seed) for every random choice. RandomOptimizer uses the first and
    ignores the second: README.md, "The idea", says what learning takes.
    """
    raise NotImplementedError


def search(
    optimizer: Optimizer, evaluate: Callable[[Sample], float], budget: int
) -> list[tuple[Sample, float]]:
    """Suggest, evaluate, observe, until `budget` samples are evaluated (never more);
    then tell the optimizer it is finished. Return every (sample, value), in order."""
    raise NotImplementedError
