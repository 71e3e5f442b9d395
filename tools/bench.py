"""Grades per hour on this machine, and what Dask costs over grading in a plain loop.

    .venv/bin/python -m tools.bench --submissions 5 --katas 1-4 --backend mlir

With --confinement: what bubblewrap's confinement costs (grade/sandbox.py), the class
graded confined and unconfined in turn, in a plain loop: the wall times, and each speed
test's speedup against its spread between rounds of one way.

Plants a class (tools/planted.py: every other submission solved, the others half done),
grades one submission untimed (the references' compiled kernels go to the module cache,
as on any node after its first grade), then grades the class in rounds, both ways in
each, in turn first: in a plain loop in this process (grading_job.grade, one after
another), and through Dask as `xtc-katas grade` does (a LocalCluster of one worker: its
start, the checks, the jobs).

Dask's own cost is its wall time beyond the time the gradings took, each measured inside
its job, over the latter: the machine's noise moves both alike. The best wall time of
each way is the direct comparison (noisier: the same gradings differ by the machine's
noise from one run to the next). --out keeps the Dask run's outputs
(results.json, class.html: the docs' screenshot, tools/page_view.py).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

from tools import planted
from xtc_katas.grade import class_report, cluster, grading_job, submissions
from xtc_katas.grade.grade_command import grader_error, parse_katas, write_results
from xtc_katas.grade.grading_job import GradeConfig
from xtc_katas.grade.result_formats import speed
from xtc_katas.kata.manifest import Kata


def lscpu_model() -> str:
    """lscpu's "Model name" (and family and model), else /proc/cpuinfo's."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return grading_job.cpu_model()
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    if "Model name" not in fields:
        return grading_job.cpu_model()
    family = (
        f" (family {fields['CPU family']} model {fields['Model']})" if "Model" in fields else ""
    )
    return f"{fields['Model name']}{family}, {fields.get('CPU(s)', '?')} CPUs"


def plant(folder: Path, katas: list[Kata], count: int) -> list[submissions.Entry]:
    """`count` submissions: even ones solve every task, odd ones the first half of each
    kata's tasks."""
    entries = []
    for number in range(count):
        solved = number % 2 == 0
        modules = {
            kata.id: planted.partly_solved(
                kata, None if solved else [t.function for t in kata.tasks[: len(kata.tasks) // 2]]
            )
            for kata in katas
        }
        name = f"{'solved' if solved else 'half'}-{number}"
        entries.append(submissions.Entry(str(planted.write(folder / name, modules)), name))
    return entries


def in_a_loop(subs: list[Any], config: grading_job.GradeConfig) -> list[dict[str, Any]]:
    """The gradings one after another in this process."""
    return [grading_job.grade(sub, config) for sub in subs]


def on_dask(subs: list[Any], config: grading_job.GradeConfig) -> list[dict[str, Any]]:
    """The gradings as `xtc-katas grade` runs them: a LocalCluster started, checked and
    given the jobs, one node at a time."""
    docs: list[dict[str, Any]] = []
    with cluster.connect() as (client, copies):
        slots = cluster.check(client)
        config = grading_job.GradeConfig(**{**vars(config), "scratch": str(copies)})
        cluster.run(
            client,
            [(f"bench-{sub.id}-{time.time_ns()}", sub) for sub in subs],
            slots,
            partial(grading_job.grade, config=config),
            partial(grader_error, config=config),
            lambda sub, doc: docs.append(doc),
        )
    return docs


def speedups(docs: list[dict[str, Any]]) -> dict[str, float]:
    """Each speed test's speedup over the naive kernel (or numpy), by submission and test."""
    found = {}
    for doc in docs:
        for test in doc["tests"]:
            figures = speed(test["figures"])
            if figures and figures["speedup"]:
                found[f"{doc['id']}::{test['name']}"] = float(figures["speedup"])
    return found


def compare_confinement(subs: list[Any], config: grading_job.GradeConfig, rounds: int) -> int:
    """The class graded confined and unconfined, in turn first, `rounds` times: the wall
    times, and each speed test's speedup, against its spread between rounds of one way."""
    ways = {"unconfined": GradeConfig(**{**vars(config), "confined": False}), "confined": config}
    walls: dict[str, list[float]] = {way: [] for way in ways}
    ratios: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    for number in range(rounds):
        order = list(ways) if number % 2 == 0 else list(ways)[::-1]
        for way in order:
            started = time.perf_counter()
            docs = in_a_loop(subs, ways[way])
            walls[way].append(time.perf_counter() - started)
            ratios[way].append(speedups(docs))
            print(f"round {number + 1}, {way}: {walls[way][-1]:.1f} s", flush=True)
    best = {way: min(times) for way, times in walls.items()}
    change = 100 * (best["confined"] - best["unconfined"]) / best["unconfined"]
    print(f"best wall times: confined {best['confined']:.1f} s, unconfined "
          f"{best['unconfined']:.1f} s: {change:+.1f}%")  # fmt: skip
    tests = sorted(set.intersection(*(set(r) for rs in ratios.values() for r in rs)))
    between, within = [], []
    for test in tests:
        means = {w: statistics.mean(r[test] for r in rs) for w, rs in ratios.items()}
        between.append(abs(means["confined"] - means["unconfined"]) / means["unconfined"])
        for way, rs in ratios.items():
            values = [r[test] for r in rs]
            within.append((max(values) - min(values)) / means[way])
    if tests:
        print(
            f"{len(tests)} speed tests' speedups: confined vs unconfined (means) differ by "
            f"{100 * statistics.median(between):.1f}% (median; max "
            f"{100 * max(between):.1f}%); between rounds of one way they spread by "
            f"{100 * statistics.median(within):.1f}% (median; max {100 * max(within):.1f}%)"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--submissions", type=int, default=5)
    parser.add_argument("--katas", default="1-4")
    parser.add_argument("--backend", choices=("mlir", "tvm"), default="mlir")
    parser.add_argument(
        "--rounds", type=int, default=2, help="each grades the class both ways, in turn first"
    )
    parser.add_argument("--out", type=Path, help="keep the Dask run's outputs here")
    parser.add_argument(
        "--confinement",
        action="store_true",
        help="compare confined and unconfined gradings (in a plain loop) instead",
    )
    args = parser.parse_args(argv)
    katas = parse_katas(args.katas)
    print(f"CPU: {lscpu_model()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="xtc-katas-bench-") as scratch:
        tmp = Path(scratch)
        entries = plant(tmp / "class", katas, args.submissions)
        subs = [submissions.read(e.source, katas, sub_id=e.id) for e in entries]
        config = grading_job.GradeConfig(
            katas=tuple(k.id for k in katas),
            backend=args.backend,
            suite=grading_job.suite_id(),
            scratch=str(tmp / "copies"),
        )
        print(f"{len(subs)} submissions, katas {', '.join(config.katas)} on {args.backend}")
        started = time.perf_counter()
        grading_job.grade(subs[0], config)
        print(f"warm-up grade (not counted): {time.perf_counter() - started:.1f} s", flush=True)
        if args.confinement:
            grading_job.grade(subs[0], GradeConfig(**{**vars(config), "confined": False}))
            return compare_confinement(subs, config, args.rounds)
        walls: dict[str, list[float]] = {"plain loop": [], "Dask": []}
        own: list[float] = []  # Dask's time beyond its gradings, over them
        docs: list[dict[str, Any]] = []
        for number in range(args.rounds):
            ways = [("plain loop", in_a_loop), ("Dask", on_dask)]
            for name, way in ways if number % 2 == 0 else ways[::-1]:
                started = time.perf_counter()
                graded = way(subs, config)
                wall = time.perf_counter() - started
                inside = sum(doc["seconds"] for doc in graded)
                walls[name].append(wall)
                if name == "Dask":
                    docs = graded
                    own.append((wall - inside) / inside)
                errors = [d["id"] for d in graded if d["grading_status"] != "graded"]
                if errors:
                    print(f"grader errors: {errors}")
                    return 1
                print(f"round {number + 1}, {name}: {wall:.1f} s ({inside:.1f} s in the gradings)")
        dask, loop = min(walls["Dask"]), min(walls["plain loop"])
        print(
            f"Dask's own time (its wall time beyond the gradings', cluster start included) "
            f"over the gradings: {', '.join(f'{100 * r:+.1f}%' for r in own)}\n"
            f"best wall times: Dask {dask:.1f} s, plain loop {loop:.1f} s: "
            f"{100 * (dask - loop) / loop:+.1f}%\n"
            f"throughput: {3600 * len(subs) / dask:.0f} submissions per hour on Dask "
            f"({3600 * len(subs) / loop:.0f} in the plain loop)"
        )
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            docs.sort(key=lambda doc: doc["id"])
            for doc in docs:
                write_results(args.out, doc, "exercism")
            class_report.write_csv(args.out / "class.csv", docs, katas)
            class_report.write_html(args.out / "class.html", docs, katas, config.suite)
            print(f"wrote {args.out / 'class.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
