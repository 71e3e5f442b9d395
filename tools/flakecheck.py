"""Run the solutions' performance tests N times and report each bar's margin: the smallest
speedup / bar over the runs. A bar that fails once in twenty runs is a bug.

    python -m tools.flakecheck --runs 10 [--hog] [--isa ISA] [katas/04_scheduling]
    python -m tools.flakecheck --answers --runs 3 --hog [--pytest-args="..."]

Each run is a plain `pytest --solutions -m perf` whose figures come back in its JUnit XML
(record_perf), every race with all its rounds (speed_judge.FULL_RACES_ENV: an early stop
gives the same verdict from fewer rounds). It passes with no failure and every margin at
MARGIN or more. `--hog` keeps the other core busy; `--isa ISA` judges as that ISA would
(one of machine_description.EMULATED, the ISAs an AVX-512 host can compile for).
`--answers` races the right answers that differ from the references instead
(tests/answers.py), one repository copy per round with one answer per function: each
answer's margin, beside the reference's in the same runs, must be ANSWER_MARGIN or more.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from xtc_katas import ROOT
from xtc_katas.checks import speed_judge
from xtc_katas.grade import repo_copy
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import find
from xtc_katas.measure import machine

#: The room a correct solution must keep above every bar, in every run.
MARGIN = 1.3
#: The room a right answer that differs from the reference must keep: less than MARGIN,
#: as such an answer (another tile, another loop order) may be a little slower than the
#: reference. With the bar at HEADROOM x the reference, 1.2 asks 1.2 x HEADROOM of the
#: reference (0.84 x today); MARGIN would ask 0.91 x, the reference's own speed within
#: the noise of one run.
ANSWER_MARGIN = 1.2


def run_once(paths: list[str], junit: Path, extra: list[str], repo: Path, solutions: bool) -> int:
    """One `pytest -m perf` of `paths` in `repo`: of the references, or (not `solutions`)
    of the learner's files there, as a learner's run sees them."""
    # The cache beside the XML: the repository's own records the learner's progress.
    command = [sys.executable, "-m", "pytest", "-q", "-m", "perf", "-o", f"cache_dir={junit}.cache"]
    command += [*(["--solutions"] if solutions else []), f"--junitxml={junit}", *extra, *paths]
    env = None if solutions else {k: v for k, v in os.environ.items() if k != loader.SOLUTIONS_ENV}
    return subprocess.run(command, cwd=repo, env=env, check=False).returncode


def figures(junit: Path) -> dict[str, dict]:
    """test id -> its recorded perf figures (speedup, bar, ...) and outcome."""
    found = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        failed = case.find("failure") is not None or case.find("error") is not None
        perf = {}
        for prop in case.iter("property"):
            if prop.get("name") == "perf":
                perf.update(ast.literal_eval(prop.get("value", "{}")))
        found[name] = {"failed": failed, **perf}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.flakecheck",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", default=["katas"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, quoted")
    parser.add_argument(
        "--isa", choices=sorted(machine.EMULATED), help="compile every kernel for this ISA"
    )
    parser.add_argument(
        "--answers",
        action="store_true",
        help="race the right answers of tests/answers.py (of the katas in paths) instead of "
        f"the references; their margins must be {ANSWER_MARGIN} or more",
    )
    args = parser.parse_args(argv)
    # inherited by every pytest run
    os.environ[speed_judge.FULL_RACES_ENV] = "1"
    if args.isa:
        os.environ[machine.ISA_ENV] = args.isa
        # numpy as on such a machine: OpenBLAS reads it when numpy loads, in each run
        os.environ.setdefault("OPENBLAS_CORETYPE", machine.OPENBLAS_KERNELS[args.isa])
    print(f"machine: {machine.describe()}", flush=True)
    if args.isa:
        print(f"numpy: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}", flush=True)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.hog else None
    seen: dict[str, list[dict]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory(prefix="xtc-katas-flakecheck-") as scratch:
            for paths, folder, extra, repo, name, what in series(args, Path(scratch)):
                extra += shlex.split(args.pytest_args)
                for run in range(args.runs):
                    junit = folder / f"run{run}.xml"
                    code = run_once(paths, junit, extra, repo, solutions=name is None)
                    for test, result in figures(junit).items():
                        seen[name(test) if name else test].append(result)
                    print(f"{what}run {run + 1}/{args.runs}: pytest exit code {code}", flush=True)
    finally:
        if hog:
            hog.terminate()
    needed = ANSWER_MARGIN if args.answers else MARGIN
    table, failures, thin = summarize(seen, needed, answers=args.answers)
    print("\n" + "\n".join(table))
    print(f"\n{failures} failures in {args.runs} runs" + (" with a CPU hog" if hog else ""))
    if thin:
        print(f"margin below {needed}: " + ", ".join(thin))
    else:
        print(f"every margin is {needed} or more")
    return 1 if failures or thin else 0


def load_answers() -> ModuleType:
    """The catalogue of right answers, imported once by path (tests/ is no package)."""
    name, path = "xtc_katas_right_answers", ROOT / "tests" / "answers.py"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None, path
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before it runs: its dataclasses look it up there
        spec.loader.exec_module(module)
    return sys.modules[name]


def series(args: argparse.Namespace, scratch: Path) -> Iterator[tuple]:
    """(paths, folder, extra pytest arguments, repo, name, what) of each series of runs:
    the references' here, or with --answers, for each round of the catalogue (of the katas
    in args.paths), the learner's files of a copy with the round's answers planted, each
    test's figures named "<answer> › <test>" by `name`."""
    if not args.answers:
        yield args.paths, scratch, [], ROOT, None, ""
        return
    every = any(Path(path).name == "katas" for path in args.paths)
    chosen = None if every else {find(path).number for path in args.paths}
    rounds = load_answers().rounds(chosen)
    for round_ in rounds:
        folder = scratch / f"round{round_.number}"
        repo = repo_copy.copy_repository(folder)
        round_.plant(repo)

        def name(test: str, round_: Any = round_) -> str:
            kata = int(re.search(r"(\d+)_\w+", test)[1])  # katas.NN_name.test_x::test
            answer = round_.answer_of(kata, test.split("::")[-1])
            label = f"{kata:02d} {answer.function}: {answer.label}" if answer else test
            return f"{label} › {test.split('::')[-1]}"

        what = f"round {round_.number + 1}/{len(rounds)}, "
        yield round_.paths(), folder, ["-k", round_.select()], repo, name, what


def summarize(
    seen: dict[str, list[dict]], needed: float = MARGIN, answers: bool = False
) -> tuple[list[str], int, list[str]]:
    """(Markdown table, failed test runs, tests whose margin fell below `needed`). With
    `answers`, a test is "<answer> › <test>", and a last column gives the reference's own
    margin in the same runs."""
    failures = 0
    thin: list[str] = []
    table = [
        "| test | runs | failures | speedup min–max | reference min–max | bar min–max | margin |"
        + (" reference's margin |" if answers else ""),
        "|---|---|---|---|---|---|---|" + ("---|" if answers else ""),
    ]
    for name, results in sorted(seen.items()):
        failed = sum(r["failed"] for r in results)
        failures += failed
        # kata 08 measures against numpy, not naive
        measured = [(r.get("speedup"), r) for r in results if r.get("bar") is not None]
        if not measured:
            dashes = " - |" * (5 if answers else 4)
            table.append(f"| {name} | {len(results)} | {failed} |{dashes}")
            continue
        short = name if answers else name.split("::")[-1]
        margin = min(s / r["bar"] for s, r in measured)
        if margin < needed:
            thin.append(short)
        references = [r.get("reference_speedup") for _, r in measured]
        row = (
            f"| {short} | {len(results)} | {failed} | {span(s for s, _ in measured)} | "
            f"{span(references)} | {span(r['bar'] for _, r in measured)} | {margin:.2f} |"
        )
        if answers:
            own = min((r.get("reference_speedup") or 0) / r["bar"] for _, r in measured)
            row += f" {own:.2f} |"  # the reference's margin in the same runs
        table.append(row)
    return table, failures, thin


def span(values: Iterable[float | None]) -> str:
    """min–max of the values that are not None, else "-"."""
    values = [v for v in values if v is not None]
    return f"{min(values):.3g}–{max(values):.3g}" if values else "-"


if __name__ == "__main__":
    raise SystemExit(main())
