"""Run the solutions' performance tests N times in a row and report each bar's margin.

    python -m xtc_katas.tools.flakecheck --runs 10 katas/04_scheduling katas/05_descript
    python -m xtc_katas.tools.flakecheck --runs 10 --hog    # with the other core kept busy
    python -m xtc_katas.tools.flakecheck --runs 3 --isa avx2  # as an AVX2 machine would judge

A speed judgement that fails once in twenty runs is a bug, so this is how the rule is
re-checked on a new machine: every run is a plain `pytest --solutions -m perf` in a
child process, its figures read back from the JUnit XML that pytest writes (record_perf
puts them there as test properties). For each test it prints the smallest and largest
speedup seen, the reference's, the bars that applied (speed_rule.py: each run sets its
own), and the margin: the smallest of speedup / bar over the runs. The check passes
with no failure and every margin at MARGIN or more; the exit code says so. The first
line names the machine (machine.py).

Every race runs all its rounds here (speed_judge.FULL_RACES_ENV): a race that stops once
its verdict is settled gets exactly the verdict of all its rounds, but its figures are
medians of fewer rounds, and the margin is a measure of the verdict's distance from the
bar. `--early-stop` times races as a learner's run does.
"""

from __future__ import annotations

import argparse
import ast
import json
import multiprocessing
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.checks import speed_judge
from xtc_katas.measure import machine

#: The room a correct solution must keep above every bar, in every run.
MARGIN = 1.3


def _burn() -> None:  # pragma: no cover - runs in the hog process
    while True:
        pass


def run_once(paths: list[str], junit: Path, extra: list[str]) -> int:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--solutions",
        "-m",
        "perf",
        "-p",
        "no:cacheprovider",
        f"--junitxml={junit}",
        *extra,
        *paths,
    ]
    return subprocess.run(command, cwd=ROOT, check=False).returncode


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
        # JUnit's per-test seconds: with the tests' order, when in its run each was timed
        found[name] = {"failed": failed, "seconds": float(case.get("time") or 0), **perf}
    return found


def record_run(path: Path, run: int, found: dict[str, dict]) -> None:
    """Append one JSON line per test of `run` to `path`: a margin names a test, and this
    says which run read low, when it ended, and each test's own seconds within it."""
    ended = time.time()
    with path.open("a") as record:
        for name, result in found.items():
            line = {"run": run, "at": ended, "test": name, **result}
            record.write(json.dumps(line, default=str) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m xtc_katas.tools.flakecheck",
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
        "--early-stop",
        action="store_true",
        help="let races stop once settled, as a learner's do (margins then come from fewer rounds)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        help="append every run's figures to this file, one JSON line per test and run "
        "(to find which run read low, and when)",
    )
    args = parser.parse_args(argv)
    if not args.early_stop:  # inherited by every pytest run
        os.environ[speed_judge.FULL_RACES_ENV] = "1"
    if args.isa:  # inherited by every pytest run
        os.environ[machine.ISA_ENV] = args.isa
        # numpy as on such a machine: OpenBLAS reads it when numpy loads, in each run
        os.environ.setdefault("OPENBLAS_CORETYPE", machine.OPENBLAS_KERNELS[args.isa])
    print(f"machine: {machine.describe()}", flush=True)
    if args.isa:
        print(f"numpy: OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}", flush=True)
    hog = multiprocessing.Process(target=_burn, daemon=True) if args.hog else None
    if hog:
        hog.start()
    seen: dict[str, list[dict]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory(prefix="xtc-katas-flakecheck-") as scratch:
            for run in range(args.runs):
                junit = Path(scratch) / f"run{run}.xml"
                code = run_once(args.paths, junit, shlex.split(args.pytest_args))
                found = figures(junit)
                for name, result in found.items():
                    seen[name].append(result)
                if args.record:
                    record_run(args.record, run, found)
                print(f"run {run + 1}/{args.runs}: pytest exit code {code}", flush=True)
    finally:
        if hog:
            hog.terminate()
    table, failures, thin = summarize(seen)
    print("\n" + "\n".join(table))
    print(f"\n{failures} failures in {args.runs} runs" + (" with a CPU hog" if hog else ""))
    if thin:
        print(f"margin below {MARGIN}: " + ", ".join(thin))
    else:
        print(f"every margin is {MARGIN} or more")
    return 1 if failures or thin else 0


def summarize(seen: dict[str, list[dict]]) -> tuple[list[str], int, list[str]]:
    """(Markdown table, failed test runs, tests whose margin fell below MARGIN)."""
    failures = 0
    thin: list[str] = []
    table = [
        "| test | runs | failures | speedup min–max | reference min–max | bar min–max | margin |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, results in sorted(seen.items()):
        failed = sum(r["failed"] for r in results)
        failures += failed
        # kata 08 measures against numpy, not naive
        measured = [(r.get("speedup"), r) for r in results if r.get("bar") is not None]
        if not measured:
            table.append(f"| {name} | {len(results)} | {failed} | - | - | - | - |")
            continue
        margin = min(s / r["bar"] for s, r in measured)
        short = name.split("::")[-1]
        if margin < MARGIN:
            thin.append(short)
        references = [r.get("reference_speedup") for _, r in measured]
        table.append(
            f"| {short} | {len(results)} | {failed} | {_span(s for s, _ in measured)} | "
            f"{_span(references)} | {_span(r['bar'] for _, r in measured)} | {margin:.2f} |"
        )
    return table, failures, thin


def _span(values) -> str:
    values = [v for v in values if v is not None]
    return f"{min(values):.3g}–{max(values):.3g}" if values else "-"


if __name__ == "__main__":
    raise SystemExit(main())
