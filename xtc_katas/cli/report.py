"""`xtc-katas report`: your passing schedules against the reference, measured in one run.

For every raced task of a passing kata (its kind's `raced`, and its `numpy_race`: kata
08's 1024^3 schedule, on one thread), it compiles your version and the reference and
races them exactly as the tests do (speed_judge.race: with the naive schedule and the
previous task's reference, or numpy), every kernel in a child process. Katas 06 and 07
are searches: their rows are the best candidate your last test run found, as that run
measured it (no reference row: re-running the reference search would take minutes).

It writes report.json and report.png (speedup and % of peak per task, yours next to the
reference's, and the machine they were measured on) and prints where. The peak is the
harness's (machine_peak.py: a register FMA probe); XTC's evaluate_flops is printed
beside it when the two differ by more than 5%, and a % of peak above 100 says why.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from xtc_katas.checks.kinds import kind_of
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.speed_judge import race
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.kata import progress
from xtc_katas.kata.manifest import Kata, katas
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS, KataBackend
from xtc_katas.measure.timing import ABOVE_PEAK, format_percent, percent_of_peak
from xtc_katas.measure.workdir import Workdir


def _passing(kata: Kata) -> bool:
    return progress.kata_status(kata, progress.read()).state == "passing"


def raced_rows(backend: KataBackend, workdir: Workdir, peak: float) -> list[dict[str, Any]]:
    """Each raced task of a passing kata (its kind's `raced` or `numpy_race`), raced as its
    test races it (speed_judge.race): kata 08's on one thread."""
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
                result, timings = race(task)

                def percent(name: str, t=timings, task=task) -> float:
                    # the median round, as the speedups and the tests' messages read it
                    return percent_of_peak(task.problem.fmas, t.typical(name), peak, task.cores)

                over = "numpy" if task.kind.numpy_race else entry.baseline
                rows.append(
                    {
                        "kata": kata.id,
                        "task": entry.function,
                        "backend": backend.name,
                        "measure": f"speedup over {over}",
                        "yours": result.learner,
                        "reference": result.reference,
                        "yours_percent_of_peak": percent("learner"),
                        "reference_percent_of_peak": percent("reference"),
                    }
                )
                print(
                    f"  {kata.id} {entry.function}: yours {result.learner:.3g}x "
                    f"({format_percent(percent('learner'))} of peak), "
                    f"reference {result.reference:.3g}x "
                    f"({format_percent(percent('reference'))} of peak)",
                    flush=True,
                )
    return rows


def search_rows() -> list[dict[str, Any]]:
    """Searches (katas 06, 07): the figures of the last passing test run, as recorded."""
    rows = []
    for kata in katas():
        searches = [t for t in kata.tasks if kind_of(t).explored == "search"]
        if not searches or not _passing(kata):
            continue
        for result in progress.kata_results(kata, progress.read()).values():
            for figures in result.perf:
                if "best" in figures:
                    rows.append(
                        {
                            "kata": kata.id,
                            "task": f"best candidate: {figures['best']}",
                            "backend": result.backend,
                            "measure": "speedup over naive (recorded by your last test run)",
                            "yours": figures.get("speedup"),
                            "reference": None,
                            "yours_percent_of_peak": figures.get("percent_of_peak"),
                            "reference_percent_of_peak": None,
                        }
                    )
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r['kata'][:2]} {r['task']}\n{r['backend']}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(rows)), 5))
    yours = [r["yours"] or 0 for r in rows]
    reference = [r["reference"] or 0 for r in rows]
    ax.bar(x - 0.2, yours, 0.4, label="yours")
    ax.bar(x + 0.2, reference, 0.4, label="reference")
    above = False
    for n, r in enumerate(rows):
        if r["yours_percent_of_peak"] is not None:
            above |= r["yours_percent_of_peak"] > 100
            ax.annotate(
                format_percent(r["yours_percent_of_peak"], 0, why="*"),
                (n - 0.2, yours[n]),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over naive (kata 08: ratio to numpy), log scale")
    ax.set_title(
        "xtc-katas report: yours vs the reference (labels: your % of peak)\n" + machine.describe(),
        fontsize=9,
    )
    if above:  # a % of peak above 100 is never shown without saying why
        fig.text(0.01, 0.01, f"(*) {ABOVE_PEAK}", fontsize=7)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(args: argparse.Namespace) -> int:
    from xtc_katas.measure.machine_peak import peak_fmas_per_s, peak_note, peak_source

    peak = peak_fmas_per_s()
    print(f"peak: {peak_source()}")
    note = peak_note()
    if note:
        print(f"  ({note})")
    rows: list[dict[str, Any]] = []
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="xtc-katas-report-") as scratch:
        os.chdir(scratch)
        workdir = Workdir(Path(scratch))
        try:
            for name in args.backend or BACKENDS:
                print(f"measuring on {name} ...", flush=True)
                backend = KataBackend(name)
                rows += raced_rows(backend, workdir, peak)
        finally:
            os.chdir(cwd)
    rows += search_rows()
    if not rows:
        print("no passing kata with a schedule to measure yet: see xtc-katas status")
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": machine.describe(),
        "peak_fmas_per_s": peak,
        "peak": peak_source(),
        "rows": rows,
    }
    (out / "report.json").write_text(json.dumps(report, indent=1))
    plot(rows, out / "report.png")
    print(f"wrote {out / 'report.json'} and {out / 'report.png'} ({machine.describe()})")
    return 0
