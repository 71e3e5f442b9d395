"""Kata 12's race: a learner's optimizer against XTC's RandomOptimizer, at equal budgets
(compiling is a search's cost, so optimizers are compared at an equal number of
evaluations, in XTC's loop: `drive`), on a cost model instead of a compiler: a landscape
over the real samples of an XTC strategy, free to evaluate, so that many seeds fit in a
few seconds and no verdict depends on the machine's noise.

Each landscape's best comes from a secret drawn in the pytest process after the learner's
optimizers were forked, so their code only sees what `observe()` gives it. Each seed runs
twice, in two children each fed its own landscape; the secret picks the run scored, and
the other, scored on the same landscape, is its placebo: a search that does not learn
beats it with probability at most 1/2 per seed. The verdict is a sign test on both
counts of wins. Why, and how often searches pass: docs/calibration/12_optimizer.md.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import multiprocessing.connection
import random
import secrets
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import numpy as np

from xtc_katas.checks.learner import Learner, run_probe
from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import wire
from xtc_katas.measure.isolation import Worker, ask

#: The space searched: XTC's Strategy_PPRPRPvr on the tutorial's strategy problem, with a
#: fixed vector width, so that the space is the same on every machine.
VEC_SIZE = 16
BUDGET = 40
#: Seed s searches in batches of BATCHES[s % 6] (XTC's default is 1, its tutorials' 5, 8);
#: 40 trials in batches of 3 or 6 end on a partial batch.
BATCHES = (1, 2, 3, 4, 6, 8)
#: The batch sizes as messages say them ("in batches of {BATCH}"; `xtc-katas explore 12`).
BATCH = ", ".join(str(b) for b in BATCHES[:-1]) + f" and {BATCHES[-1]}"
SEEDS = tuple(range(60))
#: The chance a search that does not learn may have to pass.
SIGNIFICANCE = 1e-3
#: Each landscape's bump is this wide (octaves, one standard deviation per tile size).
WIDTH = 1.5
#: Each sample's value is scaled by a factor in (1 - ROUGHNESS, 1], fixed per sample and
#: landscape: real timings are not a smooth function of tile sizes either, and on a
#: smooth bump two searches often end on different samples of exactly the same value.
ROUGHNESS = 0.05
#: The learner's optimizers have this long for the whole race (2 x 60 searches).
TIME_LIMIT_S = 300.0

Sample = list[int]
SampleFn = Callable[[int, int], Iterator[Sample]]
MakeOptimizer = Callable[[SampleFn, int, int], Any]
Evaluate = Callable[[list[Sample]], list[float]]


def binomial_tail(n: int, k: int) -> float:
    """P(a fair coin shows at least k heads in n throws)."""
    return sum(math.comb(n, i) for i in range(k, n + 1)) / 2**n


def wins_needed(seeds: int) -> int:
    """The fewest wins of `seeds` that a fair coin reaches with probability < SIGNIFICANCE
    (more than `seeds` when even all of them is not that rare: 9 seeds or fewer)."""
    rare = (k for k in range(seeds + 1) if binomial_tail(seeds, k) < SIGNIFICANCE)
    return next(rare, seeds + 1)


#: 43 of 60: a fair coin shows 43 heads or more with probability 5.3e-4 (42: 1.3e-3).
WINS = wins_needed(len(SEEDS))


def batch_of(seed: int) -> int:
    return BATCHES[seed % len(BATCHES)]


@cache
def strategy() -> Any:
    """The strategy whose samples the race searches (built once per process)."""
    from xtc.search.strategies import Strategy_PPRPRPvr

    from xtc_katas.kata.problems import STRATEGY

    return Strategy_PPRPRPvr(STRATEGY.graph(), vec_size=VEC_SIZE, max_unroll=256, threads=1)


@cache
def space() -> tuple[tuple[int, ...], ...]:
    """Every sample of the strategy (XTC's `exhaustive()`: 11088 of them, ~1 s to list)."""
    return tuple(tuple(int(v) for v in sample) for sample in strategy().exhaustive())


@cache
def space_set() -> frozenset[tuple[int, ...]]:
    return frozenset(space())


@cache
def space_array() -> np.ndarray:
    return np.array(space(), dtype=np.int64)


def sample_fn(num: int, seed: int | None) -> Iterator[Sample]:
    """`num` distinct samples drawn with `seed`: what XTC hands an optimizer, with the
    strategy's own distribution (uniform over `exhaustive()`), drawn from the listed space
    so that an optimizer may draw thousands per step and the race stays fast."""
    if num <= 0 or (seed is not None and seed < 0):  # XTC asserts both
        raise ValueError(f"sample_fn({num}, {seed}): num must be > 0 and seed >= 0")
    everything = space_array()
    picks = np.random.default_rng(seed).choice(len(everything), min(num, len(everything)), False)
    return iter(everything[picks].tolist())


@dataclass(frozen=True)
class CostModel:
    """1.0 at `best`; each tile size's distance from best's, in octaves, costs alike."""

    best: tuple[int, ...]
    salt: int

    def __call__(self, sample: Sequence[int]) -> float:
        if len(sample) and all(isinstance(x, (list, tuple)) for x in sample):
            raise ValueError(
                f"evaluate() takes one sample (a list of {len(self.best)} ints) and got a list "
                f"of {len(sample)} samples: call it once per sample of the batch"
            )
        if len(sample) != len(self.best):
            raise ValueError(f"a sample of {len(sample)} values, the space has {len(self.best)}")
        octaves = sum(
            (math.log2(max(x, 1)) - math.log2(max(b, 1))) ** 2
            for x, b in zip(sample, self.best, strict=True)
        )
        digest = hashlib.blake2b(repr((self.salt, tuple(sample))).encode(), digest_size=8)
        bump = int.from_bytes(digest.digest(), "little") / 2**64
        return math.exp(-octaves / (2 * WIDTH**2)) * (1 - ROUGHNESS * bump)


def landscape(secret: int, seed: int, side: int) -> CostModel:
    """One of the two landscapes (side 0 or 1) of `seed`: a best drawn with the secret."""
    rng = random.Random(f"{secret}:{seed}:{side}")
    return CostModel(best=rng.choice(space()), salt=rng.getrandbits(64))


def real_side(secret: int, seed: int) -> int:
    """Which of a seed's two runs the verdict scores, the other being its placebo: drawn
    with the secret, so that neither child knows which of the two it is."""
    return random.Random(f"{secret}:{seed}:real").randrange(2)


@wire.record
@dataclass
class Run:
    """One search: each evaluated sample and its value, in order."""

    samples: list[Sample] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    @property
    def best(self) -> float:
        return max(self.values, default=0.0)

    def best_so_far(self) -> list[float]:
        return list(itertools.accumulate(self.values, max))


def drive(optimizer: Any, evaluate: Evaluate, budget: int, batch: int) -> None:
    """XTC's loop (`Exploration.evaluate_iterative`), `evaluate` for compile+measure: a
    short batch is not made up for, a long one is cut, only what was evaluated observed."""
    for step in range(0, budget, batch):
        size = min(batch, budget - step)
        in_x = optimizer.suggest()[:size]
        optimizer.observe(in_x, evaluate(in_x))
    optimizer.finished()


def random_optimizer(samples: SampleFn, batch: int, seed: int) -> Any:
    from xtc.search.optimizers import RandomOptimizer

    return RandomOptimizer(samples, batch, seed)


class Oracle:
    """The pytest process's side of a race: scores a learner's suggestions on landscapes
    the learner cannot see, and keeps what was evaluated (never what the learner says)."""

    def __init__(self, models: dict[int, CostModel]) -> None:
        self.models = models
        self.runs = {seed: Run() for seed in models}

    def __call__(self, seed: int, samples: list[Sample]) -> list[float]:
        run = self.runs[seed]
        if len(run.samples) + len(samples) > BUDGET:
            raise KataFailure(
                f"12_optimizer › make_optimizer(): more than {BUDGET} evaluations for "
                f"seed {seed}: the harness asked for {BUDGET}"
            )
        for sample in samples:
            if tuple(sample) not in space_set():
                raise KataFailure(
                    f"12_optimizer › make_optimizer(): suggest() gave {sample}, which is not "
                    "a sample of the strategy (its filter excludes it: sample_fn never "
                    "draws it). Suggest only samples drawn with sample_fn"
                )
        values = [self.models[seed](sample) for sample in samples]
        run.samples += samples
        run.values += values
        return values


def plain(samples: Any) -> list[Sample]:
    """A batch as lists of ints, whatever sequence types the optimizer used."""
    return [[int(v) for v in sample] for sample in samples]


def run_learner(
    make_optimizer: MakeOptimizer,
    ask: Callable[[int, list[Sample]], list[float]],
    seeds: Sequence[int],
) -> None:
    """Every seed's search, each sample scored by `ask(seed, samples)`."""
    for seed in seeds:
        batch = batch_of(seed)

        def evaluate(in_x: list[Sample], seed: int = seed) -> list[float]:
            return ask(seed, plain(in_x)) if len(in_x) else []

        drive(make_optimizer(sample_fn, batch, seed), evaluate, BUDGET, batch)


@dataclass
class OptimizerRace:
    """Per seed, the learner's run, its placebo (the other run, scored on this run's
    landscape) and RandomOptimizer's run on the same landscape, at the same batch."""

    learner: dict[int, Run]
    placebo: dict[int, Run]
    random: dict[int, Run]

    def median(self, side: str) -> float:
        """The median over the seeds of the best of `side`: "learner", "placebo", "random"."""
        return statistics.median(run.best for run in getattr(self, side).values())

    @property
    def wins(self) -> int:
        """Seeds on which the learner found a strictly better best than RandomOptimizer."""
        return sum(self.learner[s].best > self.random[s].best for s in self.learner)

    @property
    def placebo_wins(self) -> int:
        """Seeds on which the learner's best beat its placebo's on the landscape it saw."""
        return sum(self.learner[s].best > self.placebo[s].best for s in self.learner)

    @property
    def repeats(self) -> int:
        """Evaluations of a sample the same search had already evaluated."""
        return sum(
            len(r.samples) - len({tuple(x) for x in r.samples}) for r in self.learner.values()
        )

    @property
    def short(self) -> int:
        """Seeds on which the learner evaluated fewer samples than RandomOptimizer, which
        fills every batch: its suggest() gave short batches."""
        return sum(len(self.learner[s].samples) < len(self.random[s].samples) for s in self.learner)

    @property
    def beats_random(self) -> bool:
        return self.wins >= WINS

    @property
    def learns(self) -> bool:
        return self.placebo_wins >= WINS

    @property
    def passes(self) -> bool:
        return self.beats_random and self.learns

    def verdict(self) -> str | None:
        """None if the optimizer passes, else the failure message (kata, function, fix)."""
        if self.passes:
            return None
        seeds = len(self.learner)
        advice = []
        if self.short:
            advice.append(
                f"on {self.short} of the {seeds} seeds your optimizer evaluated fewer samples "
                "than the budget: suggest() gave fewer than `batch` samples, and XTC's loop "
                "does not make up a short batch (it moves on to the next step). Give exactly "
                "`batch` samples at every call"
            )
        if self.repeats > len(self.learner):
            advice.append(
                f"you suggested samples that were already evaluated ({self.repeats} times "
                "over the race): a repeat costs a compile and tells nothing new. Keep a set "
                "of what was evaluated and suggest only new samples"
            )
        if not self.learns:
            advice.append(
                "your suggestions hardly depend on what observe() told you: let the values "
                "you observed decide what you suggest next (the lesson's exploit and "
                "explore; xtc-katas hint 12)"
            )
        if self.learns and not self.beats_random:
            advice.append(
                "your optimizer learns, but not enough to beat random sampling at this "
                "budget: revisit the balance of exploring and exploiting, and what 'near' "
                "means for tile sizes (the lesson)"
            )
        return (
            f"12_optimizer › make_optimizer(): over {seeds} seeds (budget {BUDGET}, batches "
            f"of {BATCH}), your optimizer found a better best than RandomOptimizer on "
            f"{self.wins} seeds and a better best than itself fed another landscape's values "
            f"(its placebo) on {self.placebo_wins} seeds; it must win at least "
            f"{WINS} of {seeds} of each, which a search that does not learn reaches "
            f"with probability below {SIGNIFICANCE:g}. Median best: yours "
            f"{self.median('learner'):.3f}, RandomOptimizer's {self.median('random'):.3f}, your "
            f"placebo's {self.median('placebo'):.3f}."
            + "".join(f"\n  next: {each}" for each in advice)
        )


#: The make_optimizer a race's worker holds (in the worker only).
_HELD: list[MakeOptimizer] = []


def _hold(make_optimizer: MakeOptimizer) -> None:
    _HELD[:] = [make_optimizer]


def searches(module: Any) -> None:
    """In a race's worker: every seed's search (the held optimizer's, or the module's),
    each batch's values asked of the parent, which alone holds the landscapes."""
    make = _HELD[0] if _HELD else module.make_optimizer
    run_learner(make, lambda seed, samples: ask((seed, samples)), SEEDS)


def serve(workers: dict[Worker, Oracle]) -> None:
    """Answer both workers' questions as they come (they run side by side, one per core)
    until both are done, or TIME_LIMIT_S is over."""
    deadline = time.monotonic() + TIME_LIMIT_S
    waiting = {worker.connection: worker for worker in workers}
    while waiting:
        ready = multiprocessing.connection.wait(
            list(waiting), timeout=max(0.0, deadline - time.monotonic())
        )
        if not ready:
            raise KataFailure(
                f"12_optimizer › make_optimizer(): the race's {2 * len(SEEDS)} searches of "
                f"{BUDGET} samples took more than {TIME_LIMIT_S:g} s and were stopped. Make "
                "suggest() cheaper: drawing a few thousand samples per call is cheap, "
                "refitting a model at every call may not be."
            )
        for connection in ready:
            worker = waiting[connection]
            done, _ = worker.step(lambda question, w=worker: workers[w](*question))
            if done:
                del waiting[connection]


def oracles(secret: int) -> list[Oracle]:
    """The two sides of a race: each seed's landscapes, drawn with the secret."""
    return [Oracle({seed: landscape(secret, seed, side) for seed in SEEDS}) for side in (0, 1)]


def race_against_random(
    optimizer: Learner | MakeOptimizer, secret: int | None = None
) -> OptimizerRace:
    """Race an optimizer (the learner's module, or a make_optimizer) against
    RandomOptimizer on landscapes drawn from a new secret (or `secret`), in two workers
    forked alike before the secret exists."""
    import xtc.search.optimizers  # noqa: F401  (sklearn: ~2 s to import, once, before any fork)

    space_array(), space_set()  # listed once, before any fork
    workers: list[Worker] = []
    learners: list[Learner] = []
    try:
        if isinstance(optimizer, Learner) and not optimizer.local:
            learners = [Learner(optimizer.kata, optimizer.solution) for _ in range(2)]
            workers = [learner.submit(searches) for learner in learners]
        else:
            make = optimizer.module.make_optimizer if isinstance(optimizer, Learner) else optimizer
            workers = [Worker(_hold, make, what="your optimizer") for _ in range(2)]
            for worker in workers:
                worker.submit(run_probe, searches)
        secret = secrets.randbits(128) if secret is None else secret
        sides = oracles(secret)
        serve(dict(zip(workers, sides, strict=True)))
    finally:
        for each in [*learners, *workers]:
            each.close()
    return score(sides, secret)


def score(sides: list[Oracle], secret: int) -> OptimizerRace:
    """Each seed's run the secret picks, its placebo, and RandomOptimizer's run on the
    same landscape."""
    result = OptimizerRace({}, {}, {})
    for seed in SEEDS:
        side = real_side(secret, seed)
        model = sides[side].models[seed]
        result.learner[seed] = sides[side].runs[seed]
        placebo = sides[1 - side].runs[seed].samples
        result.placebo[seed] = Run([list(x) for x in placebo], [model(x) for x in placebo])
        scored = Oracle({seed: model})
        run_learner(random_optimizer, scored, [seed])
        result.random[seed] = scored.runs[seed]
    return result
