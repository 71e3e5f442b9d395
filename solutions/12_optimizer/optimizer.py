"""Kata 12, reference solution: an optimizer that beats random search, on XTC's optimizer interface.

XTC's search (`xtc.search.explore`) compiles and measures the samples an optimizer
suggests, a batch at a time, and tells it how each did:

    class Optimizer:                      # xtc.itf.search.optimizer
        def suggest(self) -> list[list[int]]     # the next batch: `batch` samples
        def observe(self, x, y) -> None          # x: the samples evaluated; y: each
                                                 # one's fraction of peak, higher is better
        def finished(self) -> None               # the search is over

At each step XTC evaluates `suggest()[:size]` (size: `batch`, or the trials left) and
never asks again within a step: give exactly `batch` samples.

A sample is a strategy's list of ints (tile sizes, in kata 07's terms). The only way to
get valid ones is `sample_fn(num, seed)`, which draws `num` distinct ones at random;
drawing costs nothing, evaluating costs a compile. XTC's RandomOptimizer suggests
`list(sample_fn(batch, rng.randint(0, 2**32 - 1)))` every time.

Read README.md in this folder first, then run: pytest katas/12_optimizer
"""

import random
from collections.abc import Callable, Iterator

import numpy as np
from xtc.itf.search.optimizer import Optimizer

Sample = list[int]


class LocalSearch(Optimizer):
    """Random at first, then near the best sample seen: a trust region in log space.

    Drawing samples is free and evaluating them is not, so the optimizer draws one large
    pool at the start (2000 samples, about a sixth of this strategy's 11088) and then chooses
    among them. Each batch is the samples not yet suggested that are closest to the best
    one so far, in octaves of every tile size, with a share still picked at random, so
    that one lucky start cannot trap the search.
    """

    POOL = 2000
    FIRST = 8  # random samples before the first local step
    EXPLORE = 0.1  # share of each later batch picked at random

    def __init__(self, sample_fn: Callable[[int, int], Iterator[Sample]], batch: int, seed: int):
        self.sample_fn = sample_fn
        self.batch = batch
        self.rng = random.Random(seed)
        self.seen: dict[tuple[int, ...], float] = {}
        self._refill()

    def _refill(self) -> None:
        """A new pool, its samples in octaves, and none of them suggested yet."""
        drawn = list(self.sample_fn(self.POOL, self.rng.randrange(2**31)))
        self.pool = [s for s in drawn if tuple(s) not in self.seen]
        self.octaves = octaves(self.pool)
        self.fresh = np.ones(len(self.pool), dtype=bool)

    def suggest(self) -> list[Sample]:
        if self.fresh.sum() < self.batch:  # a long search used the whole pool
            self._refill()
        left = np.flatnonzero(self.fresh)
        if len(self.seen) < self.FIRST:
            chosen = self.rng.sample(left.tolist(), min(self.batch, len(left)))
        else:
            best = max(self.seen, key=self.seen.get)
            distance = np.abs(self.octaves[left] - octaves([best])[0]).sum(axis=1)
            ranked = left[np.argsort(distance, kind="stable")].tolist()  # stable: reproducible
            explore = sum(self.rng.random() < self.EXPLORE for _ in range(self.batch))
            near = self.batch - explore
            chosen = ranked[:near] + self.rng.sample(
                ranked[near:], min(explore, len(ranked[near:]))
            )
        self.fresh[chosen] = False
        return [list(self.pool[i]) for i in chosen]

    def observe(self, x: list[Sample], y: list[float]) -> None:
        for sample, value in zip(x, y, strict=True):
            self.seen[tuple(sample)] = value

    def finished(self) -> None:
        pass


def octaves(samples: list[Sample]) -> np.ndarray:
    """Samples in octaves (log2 of each tile size): tile sizes matter by ratio, not by
    difference, so 4 to 8 is as far as 32 to 64."""
    return np.log2(np.maximum(np.array(samples, dtype=float), 1))


def make_optimizer(
    sample_fn: Callable[[int, int], Iterator[Sample]], batch: int, seed: int
) -> Optimizer:
    """An optimizer of your design (a class in this file, subclassing Optimizer) that
    suggests exactly `batch` samples per call, the same ones for the same seed and the
    same observations, and finds better samples than random sampling by using what it
    observed."""
    return LocalSearch(sample_fn, batch, seed)


def search(
    optimizer: Optimizer, evaluate: Callable[[Sample], float], budget: int
) -> list[tuple[Sample, float]]:
    """Suggest, evaluate, observe, until `budget` samples are evaluated (never more);
    then tell the optimizer it is finished. Return every (sample, value), in order."""
    results: list[tuple[Sample, float]] = []
    while len(results) < budget:
        batch = [list(x) for x in optimizer.suggest()][: budget - len(results)]
        if not batch:
            break
        values = [evaluate(x) for x in batch]
        optimizer.observe(batch, values)
        results += list(zip(batch, values, strict=True))
    optimizer.finished()
    return results
