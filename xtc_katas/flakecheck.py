"""Run the solutions' performance tests N times in a row and report each floor's margin.

    python -m xtc_katas.flakecheck --runs 10 katas/04_scheduling katas/05_descript
    python -m xtc_katas.flakecheck --runs 10 --hog    # with the other core kept busy

A floor that fails once in twenty runs is a bug, so this is how floors are re-checked on
a new machine: every run is a plain `pytest --solutions -m perf` in a child process, its
figures read back from the JUnit XML that pytest writes (record_perf puts them there as
test properties). For each test it prints the smallest and largest speedup seen, the
floor, and the margin = smallest / floor (it should stay at 1.3 or more).
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
    failures = 0
    print("\n| test | runs | failures | speedup min–max | floor | margin (min of speedup/floor) |")
    print("|---|---|---|---|---|---|")
    for name, results in sorted(seen.items()):
        failed = sum(r["failed"] for r in results)
        failures += failed
        for r in results:  # kata 08 measures against numpy, not naive
            if "speedup_vs_numpy" in r:
                r["speedup"] = r["speedup_vs_numpy"]
        speedups = [r["speedup"] for r in results if "speedup" in r]
        floor = next((r["floor"] for r in results if "floor" in r), None)
        if not speedups or floor is None:
            print(f"| {name} | {len(results)} | {failed} | - | - | - |")
            continue
        margins = [
            r["speedup"] / r.get("floor_applied", r["floor"]) for r in results if "speedup" in r
        ]
        print(
            f"| {name.split('::')[-1]} | {len(results)} | {failed} | "
            f"{min(speedups):.1f}–{max(speedups):.1f} | {floor:g} | {min(margins):.2f} |"
        )
    print(f"\n{failures} failures in {args.runs} runs" + (" with a CPU hog" if hog else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
