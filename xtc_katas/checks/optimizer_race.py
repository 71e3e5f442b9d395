"""Kata 12's race: a learner's optimizer against XTC's RandomOptimizer, at equal budgets.

XTC's search (`xtc.search.explore.Exploration.evaluate_iterative`) builds an optimizer
with `(sample_fn, batch, seed)`, asks it for a batch (`suggest()`), compiles and
measures each sample, and tells it each one's fraction of peak (`observe(x, y)`, higher
is better). Compiling is the cost, so optimizers are compared at an equal number of
evaluations.

Most of the race runs on a cost model instead of a compiler: a landscape over the real
samples of an XTC strategy, deterministic and free to evaluate, so that many seeds fit in
a second and the verdict never depends on the machine's noise. Its shape is the one
tile-size searches have: performance falls off as tile sizes move away (in log scale)
from a best configuration, hidden at a different place for each seed.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

#: The space searched: XTC's Strategy_PPRPRPvr on the tutorial's strategy problem, with a
#: fixed vector width, so that the space is the same on every machine.
VEC_SIZE = 16
SEEDS = tuple(range(11))
BUDGET = 40
BATCH = 4

Sample = list[int]
SampleFn = Callable[[int, int], Iterator[Sample]]


@cache
def strategy() -> Any:
    """The strategy whose samples the race searches (built once per process)."""
    from xtc.search.strategies import Strategy_PPRPRPvr

    from xtc_katas.kata.problems import STRATEGY

    return Strategy_PPRPRPvr(STRATEGY.graph(), vec_size=VEC_SIZE, max_unroll=256, threads=1)


def sample_fn(num: int, seed: int) -> Iterator[Sample]:
    """`num` valid samples drawn with `seed`: what XTC hands an optimizer."""
    return (list(sample) for sample in strategy().sample(num, seed))


@dataclass(frozen=True)
class CostModel:
    """1.0 at `best`; each tile size's distance from best's, in octaves, costs alike."""

    best: tuple[int, ...]
    width: float = 1.5

    def __call__(self, sample: Sample) -> float:
        if len(sample) != len(self.best):
            raise ValueError(f"a sample of {len(sample)} values, the space has {len(self.best)}")
        octaves = sum(
            (math.log2(max(x, 1)) - math.log2(max(b, 1))) ** 2
            for x, b in zip(sample, self.best, strict=True)
        )
        return math.exp(-octaves / (2 * self.width**2))


def cost_model(seed: int) -> CostModel:
    """The landscape of one seed: its best configuration is a sample of another seed."""
    return CostModel(tuple(next(sample_fn(1, 10_000 + seed))))


@dataclass
class Run:
    """One search: each evaluation's value, in order, and what was asked of the optimizer."""

    values: list[float]
    samples: list[Sample]

    @property
    def best(self) -> float:
        return max(self.values, default=0.0)

    def best_so_far(self) -> list[float]:
        best, curve = 0.0, []
        for value in self.values:
            best = max(best, value)
            curve.append(best)
        return curve


def drive(optimizer: Any, evaluate: Callable[[Sample], float], budget: int) -> Run:
    """XTC's loop (evaluate_iterative), on `evaluate` instead of a compiler."""
    run = Run([], [])
    while len(run.values) < budget:
        batch = [list(x) for x in optimizer.suggest()][: budget - len(run.values)]
        if not batch:
            raise ValueError("suggest() returned an empty batch before the budget was spent")
        values = [evaluate(x) for x in batch]
        optimizer.observe(batch, values)
        run.samples += batch
        run.values += values
    optimizer.finished()
    return run


def random_optimizer(samples: SampleFn, batch: int, seed: int) -> Any:
    from xtc.search.optimizers import RandomOptimizer

    return RandomOptimizer(samples, batch, seed)


@dataclass
class OptimizerRace:
    """Per seed, the best value the learner's optimizer and RandomOptimizer found."""

    learner: dict[int, Run]
    random: dict[int, Run]

    @property
    def learner_median(self) -> float:
        return statistics.median(run.best for run in self.learner.values())

    @property
    def random_median(self) -> float:
        return statistics.median(run.best for run in self.random.values())

    @property
    def wins(self) -> int:
        return sum(self.learner[s].best > self.random[s].best for s in self.learner)


def race(
    make_optimizer: Callable[[SampleFn, int, int], Any],
    seeds: tuple[int, ...] = SEEDS,
    budget: int = BUDGET,
    batch: int = BATCH,
) -> OptimizerRace:
    learner, random = {}, {}
    for seed in seeds:
        model = cost_model(seed)
        learner[seed] = drive(make_optimizer(sample_fn, batch, seed), model, budget)
        random[seed] = drive(random_optimizer(sample_fn, batch, seed), model, budget)
    return OptimizerRace(learner, random)
