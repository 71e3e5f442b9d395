"""Tests of kata 12. Each test's name contains the function it checks.

Most tests run on the harness's cost model (xtc_katas/checks/optimizer_race.py): the real
samples of an XTC strategy, scored by landscapes drawn from a secret made at each run, in
the pytest process, where your optimizer (run in child processes) cannot see it. The race
runs your optimizer on 60 seeds of a 40-sample search, in batches of 1, 2, 3, 4, 6 and 8,
twice (each run told the values of its own landscape), and compares each seed's best
with RandomOptimizer's and with its placebo's (itself, told another landscape's values):
a few seconds. The machine does not change the verdict; the secret changes it with the
probabilities the lesson states (a search that does not learn passes with probability
below 1/1000; the reference passed 3000 races of 3000).

The last test runs your optimizer inside XTC's own exploration driver, on a real
compiler. It checks that XTC got a full batch at every step and compiled and measured
every sample, and that the best schedule XTC found computes right and beats the naive
one, timed again side by side. It does not judge your search (8 compiles are too few), nor
XTC's own timing of it (one reading, on a busy machine).
"""

import numbers

import numpy as np
import pytest

from xtc_katas.checks import optimizer_race as race
from xtc_katas.checks.schedule import fresh_scheduler
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.problems import STRATEGY
from xtc_katas.measure import numerics
from xtc_katas.measure.timing import time_side_by_side

#: A landscape for the tests that check the loop, not the search: its best is in plain view.
PRACTICE = race.CostModel(best=(8, 4, 2, 1, 1, 32, 16), salt=12)


class Recorder:
    """An optimizer wrapper that records what search() asks and tells it."""

    def __init__(self, inner):
        self.inner, self.suggested, self.observed, self.finished_calls = inner, [], [], 0
        #: at each suggest() after the first: were all earlier suggestions observed?
        self.unobserved_at_suggest: list[int] = []

    def suggest(self):
        if self.suggested:
            told = sum(len(x) for x, _ in self.observed)
            asked = sum(len(batch) for batch in self.suggested)
            self.unobserved_at_suggest.append(asked - told)
        batch = self.inner.suggest()
        self.suggested.append([list(x) for x in batch])
        return batch

    def observe(self, x, y):
        self.observed.append(([list(s) for s in x], list(y)))
        self.inner.observe(x, y)

    def finished(self):
        self.finished_calls += 1
        self.inner.finished()


def counting(model):
    calls = []

    def evaluate(sample):
        calls.append(list(sample))
        return model(sample)

    return evaluate, calls


def fail(message: str) -> None:
    raise KataFailure(f"12_optimizer › {message}")


# --- make_optimizer -----------------------------------------------------------------------


def sample_mistake(sample) -> str | None:
    """What is wrong with one suggested sample, if anything."""
    width = len(PRACTICE.best)
    values = list(sample) if isinstance(sample, list | tuple | np.ndarray) else []
    if len(values) != width or not all(isinstance(v, numbers.Integral) for v in values):
        return f"{sample!r} is not a sample: a sample is a list of {width} ints from sample_fn"
    if tuple(int(v) for v in values) not in race.space_set():
        return f"{values} is not one of the strategy's samples: suggest only what sample_fn drew"
    return None


def suggestions(module, batch):
    """In your module's process: what make_optimizer(...) is, and what its first three
    suggest() calls gave (each told its values on the practice landscape), as plain data:
    a batch as a list of samples (each a list, or its repr when it is not a sequence), or
    the type's name when it is not a list."""
    from xtc.itf.search.optimizer import Optimizer

    optimizer = module.make_optimizer(race.sample_fn, batch, 0)
    if not isinstance(optimizer, Optimizer):
        return type(optimizer).__name__, []
    steps = []
    for _ in range(3):
        suggested = optimizer.suggest()
        if not isinstance(suggested, list | tuple | np.ndarray):
            steps.append(type(suggested).__name__)
            break
        steps.append(
            [list(x) if isinstance(x, list | tuple | np.ndarray) else repr(x) for x in suggested]
        )
        if len(suggested) != batch or any(sample_mistake(x) for x in suggested):
            break
        optimizer.observe(suggested, [PRACTICE(list(x)) for x in suggested])
    optimizer.finished()
    return None, steps


@pytest.mark.parametrize("batch", [1, 3, 8])
def test_make_optimizer_follows_xtcs_interface(learner_module, batch):
    wrong_type, steps = learner_module.run(suggestions, batch)
    if wrong_type:
        fail(
            f"make_optimizer() returned a {wrong_type}: return an instance of "
            "your own subclass of xtc.itf.search.optimizer.Optimizer, as XTC's optimizers are"
        )
    for step, suggested in enumerate(steps, 1):
        listed = isinstance(suggested, list)
        if not listed or len(suggested) != batch:
            given = len(suggested) if listed else f"a {suggested}, not a list of"
            fail(
                f"make_optimizer(): with batch={batch}, suggest() call {step} gave {given} "
                f"samples. Give a list of exactly `batch`: XTC evaluates suggest()[:batch] "
                "and never asks again for the rest of a step, so a short batch loses budget "
                "and a long one is thrown away unseen (the race uses batches of 1 to 8)"
            )
        for sample in suggested:
            if mistake := sample_mistake(sample):
                fail(f"make_optimizer(): with batch={batch}, suggest() gave {mistake}")


def two_runs(module):
    """In your module's process: the samples two optimizers made with seed 7 evaluate,
    each told the practice landscape's values."""
    runs = []
    for _ in range(2):
        evaluated = []

        def evaluate(in_x, evaluated=evaluated):
            evaluated.extend(race.plain(in_x))
            return [PRACTICE(x) for x in race.plain(in_x)]

        race.drive(module.make_optimizer(race.sample_fn, 3, 7), evaluate, 16, 3)
        runs.append(evaluated)
    return runs


def test_make_optimizer_is_reproducible_for_a_seed(learner_module):
    runs = learner_module.run(two_runs)
    if runs[0] != runs[1]:
        fail(
            "make_optimizer(): two optimizers made with the same seed and told the same "
            "values suggested different samples: draw every random number from the seed "
            "(random.Random(seed), and seeds for sample_fn drawn from it), and keep no "
            "state outside the optimizer"
        )


def test_make_optimizer_learns_and_beats_random_sampling(learner_module, record_perf):
    result = race.race_against_random(learner_module)
    record_perf(
        median_best=result.median("learner"),
        random_median_best=result.median("random"),
        placebo_median_best=result.median("placebo"),
        wins=f"{result.wins}/{len(result.learner)}",
        placebo_wins=f"{result.placebo_wins}/{len(result.learner)}",
    )
    if verdict := result.verdict():
        raise KataFailure(verdict)


# --- search -------------------------------------------------------------------------------


def searched(module, budget, batch, seed):
    """In your module's process: search() driving a recorded RandomOptimizer on the
    practice landscape; what it returned, evaluated, and did with the optimizer."""
    evaluate, calls = counting(PRACTICE)
    optimizer = Recorder(race.random_optimizer(race.sample_fn, batch, seed))
    results = module.search(optimizer, evaluate, budget)
    recorded = {
        "suggested": optimizer.suggested,
        "observed": optimizer.observed,
        "finished": optimizer.finished_calls,
        "unobserved": optimizer.unobserved_at_suggest,
    }
    return [(list(s), v) for s, v in results], calls, recorded


@pytest.mark.parametrize("budget, batch", [(1, 4), (10, 4), (13, 4), (10, 3), (5, 1)])
def test_search_spends_exactly_the_budget(learner_module, budget, batch):
    results, calls, optimizer = learner_module.run(searched, budget, batch, 1)
    where = f"search(): with a budget of {budget} and batches of {batch}"
    if len(calls) != budget:
        fail(
            f"{where}, search evaluated {len(calls)} samples for a budget of {budget}: "
            "cut the last batch to the budget left"
        )
    if [list(s) for s, _ in results] != calls:
        fail(f"{where}, return every evaluated sample, in the order evaluated")
    if [v for _, v in results] != [PRACTICE(s) for s in calls]:
        fail(f"{where}, return each sample with its value: (sample, evaluate(sample))")
    if [s for x, _ in optimizer["observed"] for s in x] != calls:
        fail(f"{where}, observe() every evaluated sample, in the order evaluated")
    if optimizer["finished"] != 1:
        fail(f"{where}, call finished() once, at the end ({optimizer['finished']} calls)")


def test_search_observes_each_batch_before_the_next_suggest(learner_module):
    # One observe() per batch, as XTC's own driver calls it, or one per sample: either
    # way the optimizer knows every value before it suggests again. (An outside learner's
    # search observed each sample as soon as it was evaluated and failed with "the
    # optimizer chooses without knowing": issue 20.)
    _, _, optimizer = learner_module.run(searched, 12, 4, 2)
    if len(optimizer["suggested"]) != 3:
        fail(
            f"search(): {len(optimizer['suggested'])} suggest() calls for 12 samples in "
            "batches of 4: evaluate every sample of a batch before asking for the next"
        )
    if unknown := max(optimizer["unobserved"], default=0):
        fail(
            f"search(): suggest() was called with {unknown} evaluated samples not yet "
            "observed: observe() each batch's values before asking for the next batch, or "
            "the optimizer chooses without knowing them"
        )
    observed = [s for x, _ in optimizer["observed"] for s in x]
    if observed != [s for batch in optimizer["suggested"] for s in batch]:
        fail("search(): observe() the samples exactly as suggest() gave them, in order")


# --- make_optimizer, inside XTC's exploration ---------------------------------------------

#: 8 trials in batches of 3: XTC asks for 3, 3, then 3 of which it evaluates 2.
TRIALS, BATCH = 8, 3


def explored(module, backend, directory, peak_flops):
    """In your module's process: XTC's Exploration (search="iterative") with your optimizer
    registered in XTC's registry, the search kata 07 did by hand, on the strategy the race
    searches: how many samples each suggest() gave, and XTC's results (sample, status,
    seconds)."""
    import importlib
    import os

    from xtc.search.explore import Exploration, ExplorationConfig
    from xtc.search.optimizers import BaseOptimizerPreset, Optimizers

    from xtc_katas.measure.backends import KataBackend
    from xtc_katas.measure.observed import Proxy

    batches = []

    def suggest(inner):
        batch = inner()
        batches.append(len(batch))
        return batch

    class Registered(BaseOptimizerPreset):
        """What XTC's registry expects: a class built with (sample_fn, batch, seed, file)."""

        def __new__(cls, sample_fn, batch, seed, config_file=""):
            return Proxy(module.make_optimizer(sample_fn, batch, seed), suggest=suggest)

    Optimizers._map["xtc-katas-learner"] = Registered
    # XTC's driver imports xtc.backends.<name>.Backend itself: hand it the harness's class,
    # which compiles for XTC_KATAS_ISA when set, as the re-measurement will (this
    # process's modules only).
    importlib.import_module(f"xtc.backends.{backend}").Backend = KataBackend(backend).Backend
    os.makedirs(directory, exist_ok=True)  # a graded worker's own /tmp
    os.chdir(directory)  # XTC writes its results and run manifest where it runs
    config = ExplorationConfig(
        operator="matmul",
        dims=[64, 128, 256],  # the race's strategy problem (problems.STRATEGY)
        strategy="tile_pprprp_vr",  # Strategy_PPRPRPvr, race.strategy()
        search="iterative",
        optimizer="xtc-katas-learner",
        trials=TRIALS,
        batch=BATCH,
        backends=[backend],
        jobs=1,
        threads=1,
        seed=0,
        peak_flops=peak_flops,
        output=os.path.join(directory, "results.csv"),
        explore_dir=directory,
        quiet=True,
    )
    results = Exploration(config).run()
    return batches, [(race.plain([x])[0], int(code), float(s)) for x, code, s, _ in results]


def remeasured(sample, backend, workdir):
    """The naive schedule and `sample`'s, compiled here, `sample`'s checked against numpy,
    then both timed side by side."""
    modules = {}
    for name in ("naive", "best"):
        impl, scheduler = fresh_scheduler(backend, STRATEGY)
        if name == "best":
            race.strategy().generate(scheduler, list(sample))
        modules[name] = workdir.compile(impl, scheduler.schedule(), stem=name)
    try:
        numerics.assert_computes(modules["best"], STRATEGY, backend.name)
    except AssertionError as wrong:
        raise KataFailure(
            f"12_optimizer › make_optimizer(): the best schedule of XTC's exploration, "
            f"{sample}, compiled again by the harness, computes a {wrong}. The strategy "
            "builds a right schedule from each of its samples: suggest only samples drawn "
            "with sample_fn"
        ) from None
    return time_side_by_side(modules, STRATEGY)


def exploration_mistakes(batches, results):
    """What your optimizer made XTC's exploration lose: short batches (XTC evaluates what
    it is given and does not ask again), samples XTC could not compile or run. (XTC's
    loop builds, asks, tells and finishes every optimizer alike.)"""
    mistakes = []
    if short := [size for size in batches if size < BATCH]:
        mistakes.append(
            f"suggest() gave batches of {short} samples for a batch of {BATCH}: XTC "
            "evaluates what it is given and does not ask again, so the budget is lost"
        )
    if failed := [(x, code) for x, code, _ in results if code != 0]:
        mistakes.append(f"XTC could not compile or run {failed} (sample, error code)")
    return mistakes


@pytest.mark.perf
def test_make_optimizer_runs_inside_xtcs_exploration(
    learner_module, backend, workdir, peak, record_perf
):
    what = "XTC's exploration, driven by your optimizer,"
    batches, results = learner_module.run(
        explored, backend.name, str(workdir.path), peak(), what=what, time_limit_s=300
    )
    if mistakes := exploration_mistakes(batches, results):
        listed = "\n".join(f"  - {m}" for m in mistakes)
        fail(f"make_optimizer(): in XTC's exploration on {backend.name}:\n{listed}")
    sample, _, reported = min(results, key=lambda result: result[2])
    timings = remeasured(sample, backend, workdir)  # fails if it computes wrong
    speedup = timings.speedup("best", "naive")
    record_perf(best=str(sample), xtc_us=reported * 1e6, speedup=speedup)
    if speedup <= 1:
        fail(
            f"make_optimizer(): the best schedule of XTC's exploration, {sample}, timed "
            f"again side by side with the naive one, runs {speedup:.2f}x naive: it should "
            "beat it (every sample of this strategy measured so far did, by 16x or more)"
        )
