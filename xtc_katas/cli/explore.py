"""Run a learner's search (kata 06 or 07) outside pytest, as the tutorial's cells do.

    python -m xtc_katas.cli.explore 6                  # both backends
    python -m xtc_katas.cli.explore 7 --backend mlir   # one backend, faster
    python -m xtc_katas.cli.explore 6 --solutions      # the reference search, to compare

First the peak every % divides by (machine_peak.py), with XTC's evaluate_flops beside
it when the two differ by more than 5%. For each backend: the naive schedule's % of peak
(the baseline), a progress bar with the best candidate so far, the top-10 table (and,
when the best reads above 100%, why), and a PNG plot whose path is printed (its title
names the machine). The search runs in a child process (checks/learner.py).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.checks.kinds import feeder_of, kind_of, search_probe
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.schedule import fresh_scheduler
from xtc_katas.cli import search_view
from xtc_katas.kata.manifest import Kata, Task, find
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


def search_task(kata: Kata) -> Task | None:
    """The kata's search generator task, if it has one."""
    return explored_task(kata, "search")


def baseline_percent(
    backend: KataBackend, problem: Problem, peak: float, workdir: Workdir
) -> float:
    impl, scheduler = fresh_scheduler(backend, problem)
    naive = workdir.compile(impl, scheduler.schedule(), stem="naive")
    seconds = time_side_by_side({"naive": naive}, problem, rounds=2, **FEW_LONG_ROUNDS).best[
        "naive"
    ]
    return percent_of_peak(problem.fmas, seconds, peak)


def optimizer_convergence(kata: Kata, args: argparse.Namespace) -> int:
    """Kata 12: the optimizer against RandomOptimizer on the cost model, every seed, and
    a convergence plot (no compile: the cost model scores each sample)."""
    from xtc_katas.checks import optimizer_race

    function = explored_task(kata, "optimizer").function
    with Learner(kata, solution=args.solutions) as learner:
        result = optimizer_race.race_against_random(learner)
    side = "solution" if args.solutions else "yours"
    print(
        f"{kata.id} ({side}) on the cost model, {len(result.learner)} seeds, budget "
        f"{optimizer_race.BUDGET} in batches of {optimizer_race.BATCH}: median best "
        f"{result.learner_median:.3f} against RandomOptimizer's {result.random_median:.3f}, "
        f"better on {result.wins} seeds"
    )
    curves = {
        f"{function} ({side})": [run.best_so_far() for run in result.learner.values()],
        "RandomOptimizer": [run.best_so_far() for run in result.random.values()],
    }
    png = search_view.plot_convergence(
        curves,
        args.out.resolve() / f"{kata.id}-convergence-{side}.png",
        f"{kata.id}: best so far per evaluation, {len(result.learner)} seeds",
    )
    print(f"plot: {png}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xtc_katas.cli.explore",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("kata", help="6, 7 or 12 (or explore, strategies, optimizer)")
    parser.add_argument("--backend", action="append", choices=BACKENDS)
    parser.add_argument("--solutions", action="store_true", help="run the reference search")
    parser.add_argument("--num", type=int, default=30, help="kata 07: samples to draw")
    parser.add_argument("--seed", type=int, default=42, help="kata 07: the sampling seed")
    parser.add_argument("--out", type=Path, default=OUT, help=f"where plots go ({OUT})")
    args = parser.parse_args(argv)
    kata = find(args.kata)
    if explored_task(kata, "optimizer"):
        return optimizer_convergence(kata, args)
    search = search_task(kata)
    if search is None:
        parser.error(f"{kata.id} has no search to run: explore runs katas 06, 07 and 12")
    from xtc_katas.measure.machine_peak import peak_fmas_per_s, peak_note, peak_source

    learner = Learner(kata, solution=args.solutions)
    feed = feeder_of(kata, search)
    problem = PROBLEMS[search.problem]
    peak = peak_fmas_per_s()
    print(f"peak: {peak_source()}")
    note = peak_note()
    if note:
        print(f"  ({note})")
    side = "solution" if args.solutions else "yours"
    out = args.out.resolve()
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="xtc-katas-explore-") as scratch:
        os.chdir(scratch)  # TVM writes ./tmpXXXX/ where it compiles
        workdir = Workdir(Path(scratch))  # one for the run: dump_files never repeat
        try:
            for name in args.backend or BACKENDS:
                backend = KataBackend(name)
                baseline = baseline_percent(backend, problem, peak, workdir)
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
                    out / f"{kata.id}-{name}-{side}.png",
                    f"{kata.id} ({side}) on {name}: {problem.label}\n{machine.describe()}",
                )
                print(f"plot: {png}")
        finally:
            os.chdir(cwd)
            learner.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
