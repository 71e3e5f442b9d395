"""Issue 55's planted class: an honest learner, a solved one and one submission of each
attack, graded together on katas 1-4 through the real LocalCluster, confined, as
`xtc-katas grade` grades a class.

    .venv/bin/python -m tools.planted_class --katas 1-4 --backend mlir

Grades the honest and the solved learner alone first, then the whole class in one
grading, and checks what the issue asks of it:
- each honest grade is the one it got alone: results.json less the node, the seconds and
  each race's figures (a speedup moves with the machine's noise, its verdict must not);
- each attacker is graded, fails, and its grade says what stopped it;
- the peak memory of the grader and of its Dask processes, which run outside the sandbox
  (sampled with psutil; a sandbox's processes are the sandbox's cap, grade/memory_cap.py);
- the class's wall time.

It prints a table, the CPU and the figures, and exits 1 when a check fails. Run as root
where bubblewrap can confine (docs/grading.md). tests/test_grade_redteam.py grades the
same attacks on kata 02 alone, in CI.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from tools import planted
from tools.attacks import GADGETS, attacker_stub, git_repository, intake_class
from tools.bench import lscpu_model
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class, parse_katas
from xtc_katas.kata.manifest import Kata, find

#: What each attack's grade must say (tools/attacks.py); the gadgets' kata 04 test
#: says the harness refused what the worker sent.
REFUSED = "not a message of the harness's"
#: intake_class's submissions that test ids, not the grader's doors: left out here.
IDS = ("submission", "bob", "bob-2", "copy")


class Peak:
    """The grader's peak resident memory, sampled: this process and its descendants up to
    (not into) a sandbox, the Dask scheduler, nanny and worker among them."""

    def __init__(self, every: float = 0.2) -> None:
        self.every, self.total, self.largest = every, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _outside(self) -> list[psutil.Process]:
        found, todo = [], [psutil.Process()]
        while todo:
            proc = todo.pop()
            try:
                if proc.name() == "bwrap":
                    continue
                found.append(proc)
                todo.extend(proc.children())
            except psutil.Error:
                pass
        return found

    def _sample(self) -> None:
        while not self._stop.wait(self.every):
            sizes = []
            for proc in self._outside():
                try:
                    sizes.append(proc.memory_info().rss)
                except psutil.Error:
                    pass
            self.total = max(self.total, sum(sizes))
            self.largest = max(self.largest, max(sizes, default=0))

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()


def stable(results: dict[str, Any]) -> dict[str, Any]:
    """results.json without what moves from one grading to the next: the node, each kata's
    seconds, each race's figures and the numbers in its message and output, and the
    addresses of objects in pytest's tracebacks."""
    kept = {k: v for k, v in results.items() if k != "node"}
    kept["katas"] = [{k: v for k, v in kata.items() if k != "seconds"} for kata in kept["katas"]]
    tests = []
    for test in kept["tests"]:
        if test.get("speed"):
            test = {**test, "speed": None}
            for key in ("message", "output"):
                test[key] = re.sub(r"\d+(\.\d+)?", "N", test[key])
        tests.append(test)
    kept["tests"] = tests
    return json.loads(re.sub(r" at 0x[0-9a-f]+", " at 0x...", json.dumps(kept)))


def plant(subs: Path, katas: list[Kata]) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
    """The class in `subs`: ({honest id: its path}, {attacker id: (its path, causes)})."""
    honest = {
        "honest": planted.write(
            subs / "honest", {k.id: planted.partly_solved(k, {k.tasks[0].function}) for k in katas}
        ),
        "solved": planted.write(subs / "solved", {k.id: planted.partly_solved(k) for k in katas}),
    }
    other = git_repository(subs.parent / "other", planted.partly_solved(find(2)))
    attackers = {n: a for n, a in intake_class(subs, other).items() if n not in IDS}
    for gadget in GADGETS:  # a pickle gadget, and a constructor with a side effect
        source = attacker_stub(gadget, "/tmp/fired")  # what it would create in the harness
        path = planted.write(subs / gadget, {find(4).id: source})
        attackers[gadget] = (str(path), (REFUSED,))
    return {n: str(p) for n, p in honest.items()}, attackers


def said(doc: dict[str, Any]) -> str:
    """Everything a grade tells: its message, each kata's cause, each test's message."""
    return (
        doc["message"]
        + "".join(k["cause"] for k in doc["katas"])
        + "".join(t["message"] + t["output"] for t in doc["tests"])
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--katas", default="1-4")
    parser.add_argument("--backend", default="mlir", choices=["mlir", "tvm", ""])
    parser.add_argument("--out", type=Path, help="keep the gradings here (default: a temp dir)")
    args = parser.parse_args(argv)
    katas = parse_katas(args.katas)
    with tempfile.TemporaryDirectory(prefix="xtc-planted-class-") as scratch:
        root = args.out or Path(scratch)
        honest, attackers = plant(root / "subs", katas)
        alone, together = root / "alone", root / "together"
        entries = [submissions.Entry(path, name) for name, path in honest.items()]
        outcome = grade_class(entries, alone, katas, backend=args.backend)
        failures = [f"graded alone: {outcome.grader_errors}"] if outcome.grader_errors else []
        entries += [submissions.Entry(path, name) for name, (path, _) in attackers.items()]
        started = time.monotonic()
        with Peak() as peak:
            outcome = grade_class(entries, together, katas, backend=args.backend)
        seconds = time.monotonic() - started
        if outcome.grader_errors:
            failures.append(f"graded together: {outcome.grader_errors}")
        for name in honest:
            docs = [json.loads((o / name / "results.json").read_text()) for o in (alone, together)]
            same = stable(docs[0]) == stable(docs[1])
            print(f"{name:12} {docs[1]['status']:6} the same grade as alone: {same}")
            if not same:
                failures.append(f"{name}'s grade changed beside the attackers")
        for name, (_, causes) in attackers.items():
            doc = json.loads((together / name / "grading.json").read_text())
            verdicts = ", ".join(f"{k['kata']} {k['verdict']}" for k in doc["katas"])
            told = said(doc)
            print(f"{name:12} {verdicts:48} {told.strip()[:90]!r}")
            # the cache poison's and the record bomb's kata 02 is the solution, the gadget aside
            solved = name in ("poison", "record_bomb")
            passed = not solved and any(k["tasks_passed"] for k in doc["katas"])
            if doc["grading_status"] != "graded" or passed or doc["status"] == "pass":
                failures.append(f"{name}: {doc['grading_status']}, {verdicts}")
            if not all(cause in told for cause in causes):
                failures.append(f"{name}: its grade does not say {causes}")
    mib = 1 << 20
    print(
        f"\n{len(entries)} submissions, katas {args.katas}, backend {args.backend or 'both'}: "
        f"graded together in {seconds:.0f} s on {lscpu_model()}, "
        f"load {psutil.getloadavg()[0]:.1f}\n"
        f"grader's peak memory outside the sandbox: {peak.total / mib:.0f} MiB in all, "
        f"{peak.largest / mib:.0f} MiB its largest process"
    )
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
