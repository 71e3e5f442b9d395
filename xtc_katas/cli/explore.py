"""`xtc-katas explore`: a learner's search (kata 06 or 07) outside pytest, as the
tutorial's cells run it, or kata 12's optimizer against random search.

For each backend: the naive schedule's % of peak (the baseline), a progress bar with the
best candidate so far, the top-10 table (and, when the best reads above 100%, why), and
a PNG plot whose path is printed (its title names the machine). The search runs in the
learner's process (checks/learner.py).
"""

from __future__ import annotations

import argparse

from xtc_katas import ROOT
from xtc_katas.checks.kinds import feeder_of, kind_of, search_probe
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.schedule import fresh_scheduler
from xtc_katas.cli import search_view
from xtc_katas.kata.manifest import Kata, Task
from xtc_katas.kata.problems import PROBLEMS, Problem
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS, KataBackend
from xtc_katas.measure.isolation import SEARCH_TIME_LIMIT_S
from xtc_katas.measure.timing import (
    FEW_LONG_ROUNDS,
    format_percent,
    percent_of_peak,
    time_side_by_side,
)
from xtc_katas.measure.workdir import Workdir

OUT = ROOT / ".xtc-katas" / "explore"


def explored_task(kata: Kata, what: str) -> Task | None:
    """The kata's task that `explore` runs as `what` ("search", "optimizer"), if any
    (its kind's `explored`)."""
    return next((t for t in kata.tasks if kind_of(t).explored == what), None)


def baseline_percent(
    backend: KataBackend, problem: Problem, peak: float, workdir: Workdir
) -> float:
    impl, scheduler = fresh_scheduler(backend, problem)
    naive = workdir.compile(impl, scheduler.schedule(), stem="naive")
    timings = time_side_by_side({"naive": naive}, problem, rounds=2, **FEW_LONG_ROUNDS)
    return percent_of_peak(problem.fmas, timings.best["naive"], peak)


def optimizer_convergence(kata: Kata, function: str, side: str, solution: bool) -> int:
    """Kata 12: the optimizer against RandomOptimizer on the cost model, every seed, and
    a convergence plot (no compile: the cost model scores each sample)."""
    from xtc_katas.checks import optimizer_race

    with Learner(kata, solution=solution) as learner:
        result = optimizer_race.race_against_random(learner)
    print(
        f"{kata.id} ({side}) on the cost model, {len(result.learner)} seeds, budget "
        f"{optimizer_race.BUDGET} in batches of {optimizer_race.BATCH}: median best "
        f"{result.median('learner'):.3f} against RandomOptimizer's {result.median('random'):.3f}, "
        f"better on {result.wins} seeds"
    )
    curves = {
        f"{function} ({side})": [run.best_so_far() for run in result.learner.values()],
        "RandomOptimizer": [run.best_so_far() for run in result.random.values()],
    }
    png = search_view.plot_convergence(
        curves,
        OUT / f"{kata.id}-convergence-{side}.png",
        f"{kata.id}: best so far per evaluation, {len(result.learner)} seeds",
    )
    print(f"plot: {png}")
    return 0


def main(args: argparse.Namespace) -> int:
    kata: Kata = args.kata
    side = "solution" if args.solutions else "yours"
    optimizer = explored_task(kata, "optimizer")
    if optimizer:
        return optimizer_convergence(kata, optimizer.function, side, args.solutions)
    search = explored_task(kata, "search")
    if search is None:
        raise LookupError(f"{kata.id} has no search to run: explore runs katas 06, 07 and 12")
    feed = feeder_of(kata, search)
    problem = PROBLEMS[search.problem]
    peak = search_view.print_peak()
    with Learner(kata, solution=args.solutions) as learner, search_view.scratch("explore") as wd:
        for name in args.backend or BACKENDS:
            backend = KataBackend(name)
            baseline = baseline_percent(backend, problem, peak, wd)
            shown = format_percent(baseline, 2)
            print(f"\n{kata.id} on {name}, {problem.label}: naive {shown} of peak")
            # In the learner's process, streamed item by item: a crashing candidate
            # stops the search with a message, and no kernel runs in this process.
            items = learner.iterate(
                search_probe,
                search.function,
                feed.function,
                kind_of(search).feeds_on,
                backend,
                problem,
                peak,
                args.num,
                args.seed,
                time_limit_s=SEARCH_TIME_LIMIT_S,
            )
            results = search_view.run(items, description=f"{kata.id} {name}")
            print(search_view.top_table(results, baseline))
            best = max((r.percent for r in results), default=0.0)
            if best > 100:  # a % of peak above 100 is never shown without saying why
                print(f"best: {format_percent(best, 2)}")
            png = search_view.plot(
                results,
                baseline,
                OUT / f"{kata.id}-{name}-{side}.png",
                f"{kata.id} ({side}) on {name}: {problem.label}\n{machine.describe()}",
            )
            print(f"plot: {png}")
    return 0
