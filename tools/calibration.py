"""Measure the speed rule's figures on this machine: `python -m tools.calibration`.

Every task with a cap in the manifest is raced as its test races it (speed_judge.py,
speed_rule.py), N times, with the reference solution in the learner's seat: naive, the
reference, the previous technique's reference; kata 08 against numpy on 1 and 2 threads.
It prints the machine (machine.py), a table of the ranges (the reference's speedup, the
previous task's, the bar of each run, a correct solution's smallest margin over its bar),
for each kata one row of the lesson's per-machine table, ready to paste, and the steps
that did not pay here: where, in the median run, a task's reference was not
ABOVE_PREVIOUS times faster than the previous step's reference (speed_rule.step_note),
with the reason the manifest gives.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from tools.flakecheck import span
from xtc_katas.checks import speed_judge
from xtc_katas.checks.speed_rule import ABOVE_PREVIOUS, Speedups, bar
from xtc_katas.checks.task_under_test import TaskUnderTest, reference_learner
from xtc_katas.kata.manifest import Kata, Task, find, katas
from xtc_katas.measure import machine
from xtc_katas.measure.backends import BACKENDS, KataBackend
from xtc_katas.measure.workdir import Workdir

LARGE_THREADS = (1, 2)


def race(task: TaskUnderTest, kernel: Any = None) -> Speedups:
    return speed_judge.race(task.race_kernels(kernel), task.problem, task.threads)[0]


def run_once(kata: Kata, entry: Task, backend: KataBackend, workdir: Workdir) -> list[tuple]:
    """[(label, Speedups, cap)] of one side-by-side run of this task, the reference in
    the learner's seat (kata 08: on each of LARGE_THREADS)."""
    task = TaskUnderTest(kata, entry, reference_learner(kata), backend, workdir)
    cap = kata.cap(entry.function, backend.name)
    if task.kind.numpy_race:
        return [
            (f"{entry.function} {threads}T", race(task.on_threads(threads)), cap)
            for threads in LARGE_THREADS
        ]
    kernel = None if entry.baseline == "unfused" else task.reference().compiled()
    return [(entry.function, race(task, kernel), cap)]


#: Each race's runs, (Speedups, cap), by (kata id, label, backend).
Results = dict[tuple[str, str, str], list[tuple[Speedups, float]]]


def table(results: Results) -> list[str]:
    lines = [
        "| task | backend | reference | previous task's reference | bar (cap) | margin |",
        "|---|---|---|---|---|---|",
    ]
    for (_, label, backend), runs in results.items():
        references = [r.reference for r, _ in runs]
        previous = [r.previous for r, _ in runs if r.previous is not None]
        bars = [bar(r, cap).value for r, cap in runs]
        margin = min(bar(r, cap).margin(r.learner) for r, cap in runs)
        lines.append(
            f"| {label} | {backend} | {span(references)} | {span(previous)} | "
            f"{span(bars)} ({runs[0][1]:g}) | {margin:.2f} |"
        )
    return lines


def machine_rows(results: Results) -> list[str]:
    """Per kata, this machine's row of the lesson's table: each task's reference range,
    MLIR / TVM."""
    by_kata: dict[str, list[str]] = defaultdict(list)
    for kata_id, label in dict.fromkeys(key[:2] for key in results):
        cells = [
            span(r.reference for r, _ in results.get((kata_id, label, b), [])) for b in BACKENDS
        ]
        by_kata[kata_id].append(f"{label}: {' / '.join(cells)}")
    return [
        f"{kata_id}: | {machine.describe()} | " + " | ".join(cells) + " |"
        for kata_id, cells in by_kata.items()
    ]


def unpaid_steps(results: Results) -> list[str]:
    """One line per (task, backend) whose reference, in the median run, gained less than
    ABOVE_PREVIOUS over the previous step's reference on this machine."""
    lines = []
    for (kata_id, label, backend), runs in results.items():
        gains = [r.reference / r.previous for r, _ in runs if r.previous]
        if not gains or statistics.median(gains) >= ABOVE_PREVIOUS:
            continue
        task = find(kata_id).task(label)
        why = task.no_gain_reason(backend) if task else ""
        lines.append(
            f"{label} on {backend}: the reference gained {statistics.median(gains):.2f}x over "
            f"the previous step's (median of {len(gains)} runs; {span(gains)})"
            + (f": {why}" if why else "")
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.calibration", description=__doc__)
    parser.add_argument("runs", type=int, nargs="?", default=10)
    parser.add_argument("--task", action="append", help="only these tasks")
    args = parser.parse_args(argv)
    machine.remember_cpu_reading()
    machine.emulate_cpu_info()
    print(f"machine: {machine.describe()}; parallel races on {os.cpu_count()} threads", flush=True)
    results: Results = defaultdict(list)
    chosen = [(k, t) for k in katas() for t in k.tasks if t.caps]
    tasks = [(k, t) for k, t in chosen if not args.task or t.function in args.task]
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="xtc-katas-calibration-") as scratch:
        os.chdir(scratch)  # TVM writes ./tmpXXXX/ next to its compiles
        workdir = Workdir(Path(scratch))  # one for the whole run: dump_files never repeat
        try:
            for run in range(args.runs):
                for name in BACKENDS:
                    for kata, task in tasks:
                        for label, result, cap in run_once(kata, task, KataBackend(name), workdir):
                            results[kata.id, label, name].append((result, cap))
                print(f"run {run + 1}/{args.runs} done", flush=True)
        finally:
            os.chdir(cwd)
    print("\n".join(table(results)))
    print("\nthe lessons' per-machine rows (reference, MLIR / TVM):")
    print("\n".join(machine_rows(results)))
    unpaid = unpaid_steps(results)
    print(f"\nsteps that did not pay on this machine (< {ABOVE_PREVIOUS:g}x the previous step):")
    print("\n".join(unpaid) if unpaid else "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
