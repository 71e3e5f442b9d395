"""`xtc-katas report`: your passing schedules against the reference, measured in one run.

Each raced task of a passing kata (its kind's `raced` or `numpy_race`) is raced as its
test races it (speed_judge.race), every kernel in a child process. Searches (katas 06,
07) show the best candidate of your last test run as that run measured it: re-running
the reference search would take minutes. It writes report.json and report.png (speedup
and % of peak per task, yours beside the reference's, and the machine).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from xtc_katas.checks.kinds import kind_of
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.speed_judge import race
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.cli import search_view
from xtc_katas.kata import progress
from xtc_katas.kata.manifest import Kata, katas
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS, KataBackend
from xtc_katas.measure.timing import ABOVE_PEAK, format_percent, percent_of_peak
from xtc_katas.measure.workdir import Workdir

#: A row of report.json: the kata, the task, the backend, what the figures measure,
#: then yours and the reference's speedups and % of peak.
FIELDS = (
    "kata",
    "task",
    "backend",
    "measure",
    "yours",
    "reference",
    "yours_percent_of_peak",
    "reference_percent_of_peak",
)


def _passing(kata: Kata) -> bool:
    return progress.kata_status(kata, progress.read()).state == "passing"


def raced_rows(backend: KataBackend, workdir: Workdir, peak: float) -> list[dict[str, Any]]:
    """Each raced task of a passing kata, raced as its test races it: kata 08's on one
    thread."""
    rows = []
    for kata in katas():
        tasks = [t for t in kata.tasks if t.caps and (kind_of(t).raced or kind_of(t).numpy_race)]
        if not tasks or not _passing(kata):
            continue
        with Learner(kata, solution=False) as learner:
            for entry in tasks:
                task = TaskUnderTest(kata, entry, learner, backend, workdir)
                if task.kind.numpy_race:
                    task = task.on_threads(1)
                result, timings = race(task.race_kernels(), task.problem, task.threads)
                # the median round, as the speedups and the tests' messages read it
                mine, theirs = (
                    percent_of_peak(task.problem.fmas, timings.typical(name), peak, task.cores)
                    for name in ("learner", "reference")
                )
                over = "numpy" if task.kind.numpy_race else entry.baseline
                figures = (result.learner, result.reference, mine, theirs)
                row = (kata.id, entry.function, backend.name, f"speedup over {over}", *figures)
                rows.append(dict(zip(FIELDS, row, strict=True)))
                print(
                    f"  {kata.id} {entry.function}: yours {result.learner:.3g}x "
                    f"({format_percent(mine)} of peak), reference {result.reference:.3g}x "
                    f"({format_percent(theirs)} of peak)",
                    flush=True,
                )
    return rows


def search_rows() -> list[dict[str, Any]]:
    """Searches (katas 06, 07): the figures of the last passing test run, as recorded."""
    rows = []
    measure = "speedup over naive (recorded by your last test run)"
    for kata in katas():
        searches = [t for t in kata.tasks if kind_of(t).explored == "search"]
        if not searches or not _passing(kata):
            continue
        for result in progress.kata_results(kata, progress.read()).values():
            for figures in result.perf:
                if "best" in figures:
                    task = f"best candidate: {figures['best']}"
                    yours, percent = figures.get("speedup"), figures.get("percent_of_peak")
                    row = (kata.id, task, result.backend, measure, yours, None, percent, None)
                    rows.append(dict(zip(FIELDS, row, strict=True)))
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    labels = [f"{r['kata'][:2]} {r['task']}\n{r['backend']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = search_view.figure((max(6, 1.1 * len(rows)), 5))
    yours = [r["yours"] or 0 for r in rows]
    ax.bar(x - 0.2, yours, 0.4, label="yours")
    ax.bar(x + 0.2, [r["reference"] or 0 for r in rows], 0.4, label="reference")
    percents = [r["yours_percent_of_peak"] for r in rows]
    for n, percent in enumerate(percents):
        if percent is not None:
            shown = format_percent(percent, 0, why="*")
            ax.annotate(shown, (n - 0.2, yours[n]), ha="center", va="bottom", fontsize=7)
    if any(p is not None and p > 100 for p in percents):  # never above 100 without why
        fig.text(0.01, 0.01, f"(*) {ABOVE_PEAK}", fontsize=7)
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    title = "xtc-katas report: yours vs the reference (labels: your % of peak)\n"
    ylabel = "speedup over naive (kata 08: ratio to numpy; 09: over unfused), log scale"
    search_view.save(fig, ax, path, title + machine.describe(), "", ylabel)


def main(args: argparse.Namespace) -> int:
    from xtc_katas.measure.machine_peak import peak_source

    peak = search_view.print_peak()
    rows: list[dict[str, Any]] = []
    with search_view.scratch("report") as workdir:
        for name in args.backend or BACKENDS:
            print(f"measuring on {name} ...", flush=True)
            rows += raced_rows(KataBackend(name), workdir, peak)
    rows += search_rows()
    if not rows:
        print("no passing kata with a schedule to measure yet: see xtc-katas status")
        return 1
    report = {
        "machine": machine.describe(),
        "peak_fmas_per_s": peak,
        "peak": peak_source(),
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    plot(rows, args.out / "report.png")
    print(f"wrote {args.out / 'report.json'} and {args.out / 'report.png'} ({machine.describe()})")
    return 0
