"""Kata 12, reference solution: an optimizer that beats random search, on XTC's optimizer interface.

XTC's search (`xtc.search.explore`) compiles and measures the samples an optimizer
suggests, a batch at a time, and tells it how each did:

    class Optimizer:                      # xtc.itf.search.optimizer
        def suggest(self) -> list[list[int]]     # the next batch of samples
        def observe(self, x, y) -> None          # x: that batch; y: each one's fraction
                                                 # of peak, higher is better
        def finished(self) -> None               # the search is over

A sample is a strategy's list of ints (tile sizes, in kata 07's terms). The only way to
get valid ones is `sample_fn(num, seed)`, which draws `num` of them at random; drawing
costs nothing, evaluating costs a compile. XTC's RandomOptimizer suggests
`list(sample_fn(batch, some_seed))` every time.

Read README.md in this folder first, then run: pytest katas/12_optimizer
"""

import random
from collections.abc import Callable, Iterator

import numpy as np
from xtc.itf.search.optimizer import Optimizer

Sample = list[int]


class LocalSearch(Optimizer):
    """Random at first, then near the best sample seen: a trust region in log space.

    Each suggestion draws a pool of fresh samples (free), drops those already evaluated,
    and keeps the `batch` closest to the best one so far, in octaves of every tile size.
    A share of each batch stays random, so that one lucky start cannot trap the search.
    """

    POOL = 300
    FIRST = 8  # random samples before the first local step
    EXPLORE = 0.25  # share of each later batch drawn at random

    def __init__(self, sample_fn: Callable[[int, int], Iterator[Sample]], batch: int, seed: int):
        self.sample_fn = sample_fn
        self.batch = batch
        self.rng = random.Random(seed)
        self.seen: dict[tuple[int, ...], float] = {}

    def _draw(self, num: int) -> list[Sample]:
        fresh = [list(s) for s in self.sample_fn(num, self.rng.randrange(2**31))]
        return [s for s in fresh if tuple(s) not in self.seen]

    def suggest(self) -> list[Sample]:
        if len(self.seen) < self.FIRST:
            return self._draw(self.batch * 4)[: self.batch]
        best = max(self.seen, key=self.seen.get)
        pool = self._draw(self.POOL)
        order = np.argsort(distances(pool, best), kind="stable")  # stable: reproducible
        pool = [pool[i] for i in order]
        explore = sum(self.rng.random() < self.EXPLORE for _ in range(self.batch))
        near = self.batch - explore
        chosen = pool[:near] + self.rng.sample(pool[near:], min(explore, len(pool) - near))
        return chosen[: self.batch]

    def observe(self, x: list[Sample], y: list[float]) -> None:
        for sample, value in zip(x, y, strict=True):
            self.seen[tuple(sample)] = value

    def finished(self) -> None:
        pass


def distances(pool: list[Sample], best: tuple[int, ...]) -> np.ndarray:
    """How far each sample is from `best`, in octaves: tile sizes matter by ratio, not
    difference (4 to 8 is as far as 32 to 64). One numpy expression for the whole pool."""
    octaves = np.log2(np.maximum(np.array(pool, dtype=float), 1))
    return np.abs(octaves - np.log2(np.maximum(np.array(best, dtype=float), 1))).sum(axis=1)


def make_optimizer(
    sample_fn: Callable[[int, int], Iterator[Sample]], batch: int, seed: int
) -> Optimizer:
    """An optimizer of your design (a class in this file, subclassing Optimizer) that
    suggests `batch` samples per call, the same ones for the same seed and observations."""
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
