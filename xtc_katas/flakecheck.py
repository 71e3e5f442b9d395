"""Run the solutions' performance tests N times in a row and report each floor's margin.

    python -m xtc_katas.flakecheck --runs 10 katas/04_scheduling katas/05_descript
    python -m xtc_katas.flakecheck --runs 10 --hog    # with the other core kept busy

A floor that fails once in twenty runs is a bug, so this is how floors are re-checked on
a new machine: every run is a plain `pytest --solutions -m perf` in a child process, its
figures read back from the JUnit XML that pytest writes (record_perf puts them there as
test properties). For each test it prints the smallest and largest speedup seen, the
floor, and the margin: the smallest of speedup / floor that applied, over the runs. The
check passes with no failure and every margin at MARGIN or more; the exit code says so.
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import shlex
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from xtc_katas import ROOT

#: The room a correct solution must keep above every floor, in every run.
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
    """test id -> its recorded perf figures (speedup, floor, ...) and outcome."""
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
        prog="python -m xtc_katas.flakecheck",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="*", default=["katas"])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--pytest-args", default="", help="extra pytest arguments, quoted")
    args = parser.parse_args(argv)
    hog = multiprocessing.Process(target=_burn, daemon=True) if args.hog else None
    if hog:
        hog.start()
    seen: dict[str, list[dict]] = defaultdict(list)
    try:
        with tempfile.TemporaryDirectory(prefix="xtc-katas-flakecheck-") as scratch:
            for run in range(args.runs):
                junit = Path(scratch) / f"run{run}.xml"
                code = run_once(args.paths, junit, shlex.split(args.pytest_args))
                for name, result in figures(junit).items():
                    seen[name].append(result)
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
        "| test | runs | failures | speedup min–max | floor | margin (min of speedup/floor) |",
        "|---|---|---|---|---|---|",
    ]
    for name, results in sorted(seen.items()):
        failed = sum(r["failed"] for r in results)
        failures += failed
        # kata 08 measures against numpy, not naive
        speedups = [r.get("speedup_vs_numpy", r.get("speedup")) for r in results]
        measured = [(s, r) for s, r in zip(speedups, results, strict=True) if s is not None]
        floor = next((r["floor"] for r in results if "floor" in r), None)
        if not measured or floor is None:
            table.append(f"| {name} | {len(results)} | {failed} | - | - | - |")
            continue
        margin = min(s / r.get("floor_applied", r["floor"]) for s, r in measured)
        short = name.split("::")[-1]
        if margin < MARGIN:
            thin.append(short)
        fastest, slowest = max(s for s, _ in measured), min(s for s, _ in measured)
        table.append(
            f"| {short} | {len(results)} | {failed} | "
            f"{slowest:.1f}–{fastest:.1f} | {floor:g} | {margin:.2f} |"
        )
    return table, failures, thin


if __name__ == "__main__":
    raise SystemExit(main())
