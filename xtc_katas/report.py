"""`xtc-katas report`: your passing schedules against the reference, measured in one run.

For every task of a passing kata that has one schedule to measure (katas 04 and 05: each
task; kata 08: the 1024^3 schedule on one thread), it compiles your version and the
reference and times them side by side with the naive schedule (for kata 08, with numpy),
as the tests do. Katas 06 and 07 are searches: their rows are the best candidate your
last test run found, measured now side by side with the naive schedule (no reference
row: re-running the reference search would take minutes).

It writes report.json and report.png (speedup and % of peak per task, yours next to the
reference's) and prints where.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from xtc_katas import loader, progress
from xtc_katas.backends import BACKENDS, KataBackend
from xtc_katas.calibration import GROUPS, compile_task
from xtc_katas.cli import kata_status
from xtc_katas.compiling import Workdir
from xtc_katas.learner_schedules import fresh_scheduler
from xtc_katas.manifest import Kata, find
from xtc_katas.problems import CHALLENGE
from xtc_katas.speedups import cores, measure
from xtc_katas.timing import percent_of_peak


def _passing(kata: Kata) -> bool:
    return kata_status(kata, progress.read()).state == "passing"


def schedule_rows(backend: KataBackend, workdir: Workdir, peak: float) -> list[dict[str, Any]]:
    rows = []
    for group in GROUPS:
        kata = find(group.kata)
        if not _passing(kata):
            continue
        impl, scheduler = fresh_scheduler(backend, group.problem)
        modules = {
            "naive": workdir.compile(impl, scheduler.schedule(), stem="naive"),
            "learner": compile_task(
                workdir,
                kata,
                loader.load(kata, solution=False),
                group.task,
                backend,
                group.problem,
            ),
            "reference": compile_task(
                workdir,
                kata,
                loader.load(kata, solution=True),
                group.task,
                backend,
                group.problem,
            ),
        }
        threads = cores() if group.parallel else 1
        figures = measure(modules, group.problem, peak, threads)
        rows.append(
            {
                "kata": kata.id,
                "task": group.task,
                "backend": backend.name,
                "measure": "speedup over naive",
                "yours": figures.learner,
                "reference": figures.reference,
                "yours_percent_of_peak": figures.learner_percent,
                "reference_percent_of_peak": figures.reference_percent,
            }
        )
        print(
            f"  {kata.id} {group.task}: yours {figures.learner:.1f}x, "
            f"reference {figures.reference:.1f}x",
            flush=True,
        )
    return rows


def challenge_row(backend: KataBackend, workdir: Workdir, peak: float) -> list[dict[str, Any]]:
    kata = find(8)
    if not _passing(kata):
        return []
    a, b = CHALLENGE.inputs("random", seed=0)
    out = np.empty(CHALLENGE.output_shape, dtype=CHALLENGE.dtype)
    best: dict[str, float] = {}
    evaluators = {}
    for side, solution in (("yours", False), ("reference", True)):
        impl, scheduler = fresh_scheduler(backend, CHALLENGE)
        loader.load(kata, solution=solution).schedule_large(scheduler, 1)
        module = workdir.compile(impl, scheduler.schedule(), stem=f"large_{side}")
        evaluators[side] = module.get_evaluator(
            parameters=([a, b], [out]), repeat=3, number=1, min_repeat_ms=0, validate=False
        )
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(5):
            for side, evaluator in evaluators.items():
                best[side] = min(best.get(side, np.inf), min(evaluator.evaluate()[0]))
            start = time.perf_counter()
            np.matmul(a, b, out=out)
            best["numpy"] = min(best.get("numpy", np.inf), time.perf_counter() - start)
    return [
        {
            "kata": kata.id,
            "task": "schedule_large (1 thread)",
            "backend": backend.name,
            "measure": "speed relative to numpy",
            "yours": best["numpy"] / best["yours"],
            "reference": best["numpy"] / best["reference"],
            "yours_percent_of_peak": percent_of_peak(CHALLENGE.fmas, best["yours"], peak),
            "reference_percent_of_peak": percent_of_peak(CHALLENGE.fmas, best["reference"], peak),
        }
    ]


def search_rows() -> list[dict[str, Any]]:
    """Katas 06 and 07: the figures of the last passing test run, as recorded."""
    rows = []
    for number in (6, 7):
        kata = find(number)
        if not _passing(kata):
            continue
        for nodeid, result in progress.kata_results(kata, progress.read()).items():
            for figures in result.get("perf", []):
                if "best" in figures:
                    rows.append(
                        {
                            "kata": kata.id,
                            "task": f"best candidate: {figures['best']}",
                            "backend": nodeid.rsplit("[", 1)[-1].rstrip("]"),
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
    for n, r in enumerate(rows):
        if r["yours_percent_of_peak"] is not None:
            ax.annotate(
                f"{r['yours_percent_of_peak']:.0f}%",
                (n - 0.2, yours[n]),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("speedup over naive (kata 08: ratio to numpy), log scale")
    ax.set_title("xtc-katas report: yours vs the reference (labels: your % of peak)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(args: argparse.Namespace) -> int:
    from xtc_katas.peak import peak_fmas_per_s

    peak = peak_fmas_per_s()
    rows: list[dict[str, Any]] = []
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="xtc-katas-report-") as scratch:
        os.chdir(scratch)
        workdir = Workdir(Path(scratch))
        try:
            for name in args.backend or BACKENDS:
                print(f"measuring on {name} ...", flush=True)
                backend = KataBackend(name)
                rows += schedule_rows(backend, workdir, peak)
                rows += challenge_row(backend, workdir, peak)
        finally:
            os.chdir(cwd)
    rows += search_rows()
    if not rows:
        print("no passing kata with a schedule to measure yet: see xtc-katas status")
        return 1
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps({"peak_fmas_per_s": peak, "rows": rows}, indent=1))
    plot(rows, out / "report.png")
    print(f"wrote {out / 'report.json'} and {out / 'report.png'}")
    return 0
