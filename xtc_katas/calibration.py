"""Calibrate the performance floors of katas 04 and 05: `python -m xtc_katas.calibration`.

Each group is timed exactly as its test times it: naive, a "learner" and the reference
side by side (timing.py), where the learner is the *previous* task's reference. Over N
runs that gives the range of the reference's speedup (a floor must sit at or below
HEADROOM = 0.7 of its slowest) and the range of the previous task's (a floor must sit
above its fastest, so the earlier schedule cannot pass the later task). The script
prints both, the current floors from the manifest, and whether each floor keeps the two
rules.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from xtc_katas import loader
from xtc_katas.backends import BACKENDS, KataBackend
from xtc_katas.compiling import Workdir
from xtc_katas.learner_schedules import apply_schedule, apply_spec, fresh_scheduler
from xtc_katas.manifest import Kata, find
from xtc_katas.problems import LARGE, SPLIT, TUTORIAL, Matmul
from xtc_katas.speedups import HEADROOM, cores, measure


class InterchangeOnly:
    """The schedule just before vectorizing, as imperative code and as a spec."""

    @staticmethod
    def schedule_interchange(sch: Any) -> None:
        sch.interchange(["i", "k", "j"])

    @staticmethod
    def interchange_spec() -> dict:
        return {"i": {}, "k": {}, "j": {}}


@dataclass(frozen=True)
class Group:
    kata: int
    task: str
    problem: Matmul
    previous: tuple[str, str] | None  # ("solution" | "interchange", function)
    parallel: bool = False


GROUPS = (
    Group(4, "schedule_interchange", TUTORIAL, None),
    Group(4, "schedule_vectorize", TUTORIAL, ("solution", "schedule_interchange")),
    Group(4, "schedule_register_tile", TUTORIAL, ("solution", "schedule_vectorize")),
    Group(4, "schedule_split", SPLIT, ("interchange", "schedule_interchange")),
    Group(4, "schedule_parallel", LARGE, ("solution", "schedule_register_tile"), True),
    Group(5, "vectorize_spec", TUTORIAL, ("interchange", "interchange_spec")),
    Group(5, "register_tile_spec", TUTORIAL, ("solution", "vectorize_spec")),
    Group(5, "split_spec", SPLIT, ("interchange", "interchange_spec")),
    Group(5, "parallel_spec", LARGE, ("solution", "register_tile_spec"), True),
)


def compile_task(
    workdir: Workdir,
    kata: Kata,
    module: ModuleType,
    function: str,
    backend: KataBackend,
    problem: Matmul,
) -> Any:
    """Compile a kata 04 schedule function or a kata 05 spec function of `module`."""
    apply = apply_schedule if function.startswith("schedule_") else apply_spec
    impl, scheduler = apply(kata, module, function, backend, problem)
    return workdir.compile(impl, scheduler.schedule(), stem=function)


def run_group(group: Group, backend: KataBackend, workdir: Workdir, peak: float) -> tuple:
    """(reference speedup, previous task's speedup or None) of one side-by-side run."""
    kata = find(group.kata)
    solution = loader.load(kata, solution=True)
    impl, scheduler = fresh_scheduler(backend, group.problem)
    naive = workdir.compile(impl, scheduler.schedule(), stem="naive")
    reference = compile_task(workdir, kata, solution, group.task, backend, group.problem)
    if group.previous is None:
        previous = naive
    else:
        side, function = group.previous
        source = solution if side == "solution" else InterchangeOnly
        previous = compile_task(workdir, kata, source, function, backend, group.problem)
    figures = measure(
        {"naive": naive, "learner": previous, "reference": reference},
        group.problem,
        peak,
        cores() if group.parallel else 1,
    )
    return figures.reference, (figures.learner if group.previous else None)


def table(results: dict[str, dict[str, list[float]]]) -> list[str]:
    """A Markdown table: measured ranges, the manifest's floor, and the two rules."""
    lines = [
        "| task | backend | reference | previous task's reference | floor | rules |",
        "|---|---|---|---|---|---|",
    ]
    for key, values in results.items():
        backend, task = key.split(" ")
        group = next(g for g in GROUPS if g.task == task)
        floor = find(group.kata).floor(task, backend)
        ref, prev = values["reference"], values["previous"]
        within = floor <= HEADROOM * min(ref)
        rules = [f"≤ {HEADROOM:g} of slowest" if within else f"**above {HEADROOM:g} of slowest**"]
        if prev and floor > max(prev):
            rules.append("above previous")
        elif prev:
            rules.append("previous is as fast or faster: the shape test tells them apart")
        shown_prev = f"{min(prev):.1f}–{max(prev):.1f}" if prev else "-"
        lines.append(
            f"| {task} | {backend} | {min(ref):.1f}–{max(ref):.1f} | {shown_prev} | "
            f"{floor:g} | {'; '.join(rules)} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xtc_katas.calibration", description=__doc__)
    parser.add_argument("runs", type=int, nargs="?", default=10)
    parser.add_argument("--backend", action="append", choices=BACKENDS)
    parser.add_argument("--task", action="append", help="only these tasks")
    parser.add_argument("--json", type=Path, help="also write the raw figures here")
    args = parser.parse_args(argv)
    from xtc_katas.peak import peak_fmas_per_s

    groups = [g for g in GROUPS if not args.task or g.task in args.task]
    results: dict[str, dict[str, list[float]]] = {}
    peak = peak_fmas_per_s()
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="xtc-katas-calibration-") as scratch:
        os.chdir(scratch)  # TVM writes ./tmpXXXX/ next to its compiles
        workdir = Workdir(Path(scratch))  # one for the whole run: dump_files never repeat
        try:
            for run in range(args.runs):
                for name in args.backend or BACKENDS:
                    for group in groups:
                        ref, prev = run_group(group, KataBackend(name), workdir, peak)
                        entry = results.setdefault(
                            f"{name} {group.task}", {"reference": [], "previous": []}
                        )
                        entry["reference"].append(ref)
                        if prev is not None:
                            entry["previous"].append(prev)
                print(f"run {run + 1}/{args.runs} done", flush=True)
        finally:
            os.chdir(cwd)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print("\n".join(table(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
