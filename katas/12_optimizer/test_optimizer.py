"""Tests of kata 12. Each test's name contains the function it checks.

Most tests run on the harness's cost model (xtc_katas/checks/optimizer_race.py): the
real samples of an XTC strategy, scored by a deterministic landscape, so that eleven
seeds of a 40-sample search take a second and never depend on the machine. The last
test runs your optimizer for real, inside XTC's own exploration driver, and measures its
best schedule again, side by side with the naive one.
"""

import pytest

from xtc_katas.checks import optimizer_race as race
from xtc_katas.kata.failures import KataFailure


class Recorder:
    """An optimizer wrapper that records what search() asks and tells it."""

    def __init__(self, inner):
        self.inner, self.suggested, self.observed, self.finished_calls = inner, [], [], 0

    def suggest(self):
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


# --- make_optimizer -----------------------------------------------------------------------


def test_make_optimizer_follows_xtcs_interface(kata):
    from xtc.itf.search.optimizer import Optimizer

    optimizer = kata.make_optimizer(race.sample_fn, 4, 0)
    assert isinstance(optimizer, Optimizer), (
        f"make_optimizer returned a {type(optimizer).__name__}: subclass "
        "xtc.itf.search.optimizer.Optimizer, as XTC's own optimizers do"
    )
    batch = optimizer.suggest()
    assert len(batch) == 4, f"suggest() gave {len(batch)} samples for a batch of 4"
    width = len(race.cost_model(0).best)
    for sample in batch:
        assert len(sample) == width and all(isinstance(v, int) for v in sample), (
            f"suggest() gave {sample!r}: a sample is a list of {width} ints from sample_fn"
        )


def test_make_optimizer_is_reproducible_for_a_seed(kata):
    runs = [
        race.drive(kata.make_optimizer(race.sample_fn, 4, 3), race.cost_model(3), 16)
        for _ in range(2)
    ]
    assert runs[0].samples == runs[1].samples, (
        "the same seed and the same observations gave other suggestions: draw every "
        "random number from the seed (random.Random(seed), sample_fn's seed argument)"
    )


def test_make_optimizer_beats_random_sampling_at_equal_budget(kata, record_perf):
    result = race.race(kata.make_optimizer)
    record_perf(
        median_best=result.learner_median,
        random_median_best=result.random_median,
        wins=f"{result.wins}/{len(race.SEEDS)}",
    )
    if not result.beats_random:
        raise KataFailure(
            f"12_optimizer › make_optimizer(): over {len(race.SEEDS)} seeds (budget "
            f"{race.BUDGET}, batches of {race.BATCH}), your median best is "
            f"{result.learner_median:.3f}, RandomOptimizer's {result.random_median:.3f}, "
            f"and yours was better on {result.wins} seeds; it must have the higher median "
            f"and win at least {race.WINS:.0%} of the seeds.\n"
            "  next: use what observe() told you: suggest samples near the best one so far "
            "(draw many with sample_fn, they are free, and keep the nearest)"
        )


# --- search -------------------------------------------------------------------------------


@pytest.mark.parametrize("budget", [1, 10, 13])
def test_search_spends_exactly_the_budget(kata, budget):
    model = race.cost_model(1)
    evaluate, calls = counting(model)
    optimizer = Recorder(race.random_optimizer(race.sample_fn, 4, 1))
    results = kata.search(optimizer, evaluate, budget)
    assert len(calls) == budget, f"search evaluated {len(calls)} samples for a budget of {budget}"
    assert [list(s) for s, _ in results] == calls, "return every evaluated sample, in order"
    assert [v for _, v in results] == [model(s) for s in calls], "with its value"
    told = [s for x, _ in optimizer.observed for s in x]
    assert told == calls, "observe() every evaluated sample, in the order evaluated"
    assert optimizer.finished_calls == 1, "call finished() once, at the end"


def test_search_observes_each_batch_before_the_next_suggest(kata):
    optimizer = Recorder(race.random_optimizer(race.sample_fn, 4, 2))
    kata.search(optimizer, race.cost_model(2), 12)
    assert len(optimizer.suggested) == 3 and len(optimizer.observed) == 3, (
        f"{len(optimizer.suggested)} suggest() and {len(optimizer.observed)} observe() calls "
        "for 12 samples in batches of 4: observe each batch before asking for the next"
    )
    assert [x for x, _ in optimizer.observed] == optimizer.suggested


# --- make_optimizer, for real -------------------------------------------------------------


@pytest.mark.perf
def test_make_optimizer_drives_xtcs_exploration_and_its_best_holds(
    kata, backend, workdir, peak, record_perf
):
    found = race.explore_for_real(kata.make_optimizer, backend.name, str(workdir.path), peak())
    assert len(found) == race.EXPLORE_TRIALS, (
        f"XTC's exploration measured {len(found)} of {race.EXPLORE_TRIALS} schedules: "
        "every suggested sample must compile (suggest only samples drawn with sample_fn)"
    )
    sample, reported = min(found, key=lambda item: item[1])
    timings = race.remeasure(sample, backend, workdir)
    again = timings.best["best"]
    record_perf(
        best=str(sample),
        reported_us=reported * 1e6,
        again_us=again * 1e6,
        speedup=timings.speedup("best", "naive"),
    )
    if again > race.HONEST * reported or timings.speedup("best", "naive") <= 1:
        raise KataFailure(
            f"12_optimizer › make_optimizer(): XTC measured its best schedule {sample} at "
            f"{reported * 1e6:.1f} µs; timed again side by side it takes {again * 1e6:.1f} "
            f"µs, {timings.speedup('best', 'naive'):.2f}x the naive schedule. The best of a "
            "search must hold when measured again."
        )
