"""The learner's progress: real test results, kept in pytest's own cache, and what they
mean for each kata (`kata_status`, read by `xtc-katas status`, `watch` and `report`),
which kata is the current one, and which hint of each task comes next (the CLI's and
the notebook's).

Nothing here is hand-edited state. Each learner-mode pytest run records, per test, its
outcome, any performance figures, and a hash of the kata's module at that moment; the
status table reads them back and treats a result as stale once the module changed.
Deleting .pytest_cache loses only this history.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from xtc_katas import ROOT
from xtc_katas.kata.manifest import Kata, Task, katas

CACHE_KEY = "xtc-katas/results"


def cache_file(root: Path = ROOT, key: str = CACHE_KEY) -> Path:
    """Where pytest's cache provider stores `key` (config.cache.set writes this file)."""
    return root / ".pytest_cache" / "v" / key


def module_hash(kata: Kata, root: Path = ROOT) -> str:
    path = kata.stub_path(root)
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.exists() else ""


@dataclass(frozen=True)
class TestResult:
    """One test's last result, as the plugin recorded it (the only writer)."""

    __test__ = False  # not a pytest test class, despite its name

    kata: str  # "04_scheduling"
    tasks: tuple[str, ...]  # the functions it checks, as bound at collection
    backend: str  # "mlir", "tvm", or "" for a test that compiles nothing
    outcome: str  # "passed", "failed", "skipped"
    module_hash: str  # of the kata's module when it ran: a later edit makes it stale
    perf: list[dict[str, Any]] = field(default_factory=list)  # figures, e.g. speedup
    when: float = 0.0
    message: str = ""  # a failure's first line

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


Results = dict[str, TestResult]  # by pytest node id, a key only: never parsed


def read(root: Path = ROOT) -> Results:
    """The recorded results; an entry this version cannot read (an older harness's) is
    left out: run again."""
    try:
        raw = json.loads(cache_file(root).read_text())
    except (OSError, ValueError):
        return {}
    results = {}
    for key, value in raw.items():
        with contextlib.suppress(msgspec.ValidationError):
            results[key] = msgspec.convert(value, TestResult)
    return results


def record(cache: Any, results: Results) -> None:
    """Add `results` to those in pytest's cache (`config.cache`), the newest winning."""
    stored = cache.get(CACHE_KEY, {})
    stored.update({key: dataclasses.asdict(r) for key, r in results.items()})
    cache.set(CACHE_KEY, stored)


def kata_results(kata: Kata, results: Results, root: Path = ROOT) -> Results:
    """This kata's recorded results, only those recorded against its current module."""
    current = module_hash(kata, root)
    return {key: r for key, r in results.items() if r.kata == kata.id and r.module_hash == current}


@dataclass(frozen=True)
class BestFigure:
    """A passed test's figures, all of one task and one run: the status table shows its
    speedup, what that speedup is over, and its % of peak side by side."""

    task: str
    speedup: float
    #: What the speedup is over, as the race recorded it ("numpy": kata 08; "your schedule
    #: unfused": kata 09), else the manifest's baseline ("naive", "unfused").
    over: str
    percent_of_peak: float | None
    backend: str


@dataclass
class KataStatus:
    kata: Kata
    state: str  # "passing", "failing", "not started", "not run", "partly run"
    tasks_passed: int
    first_failure: TestResult | None
    best: BestFigure | None


def task_states(kata: Kata, results: Results, root: Path = ROOT) -> dict[str, str]:
    """Each task's state against the current stub: "passed" when it has results and all
    passed, "failed" when one failed, else "not run" (the status table counts the first;
    the notebook's task list shows all three)."""
    mine = kata_results(kata, results, root).values()
    outcomes = {t.function: [r.passed for r in mine if t.function in r.tasks] for t in kata.tasks}
    return {
        function: "not run" if not ran else "passed" if all(ran) else "failed"
        for function, ran in outcomes.items()
    }


def kata_status(kata: Kata, results: Results) -> KataStatus:
    """The kata's state from its results against the current stub: "passing" only when
    every task has passed tests and none failed; "partly run" when none failed but some
    task has no result yet (a run with -k, or one interrupted)."""
    mine = kata_results(kata, results).values()
    if not mine:
        return KataStatus(kata, "not run", 0, None, None)
    passed = sum(state == "passed" for state in task_states(kata, results).values())
    failures = [r for r in mine if not r.passed]
    figures = [
        (r.tasks[0], f["speedup"], f.get("percent_of_peak"), r.backend, f.get("over"))
        for r in mine
        if r.passed and r.tasks
        for f in r.perf
        if isinstance(f.get("speedup"), (int, float))
    ]
    if not failures:
        state = "passing" if passed == len(kata.tasks) else "partly run"
    elif all("not implemented yet" in r.message for r in failures) and not passed:
        state = "not started"
    else:
        state = "failing"
    best = None
    if figures:
        task, speedup, percent, backend, recorded = max(figures, key=lambda f: f[1])
        over = recorded or getattr(kata.task(task), "baseline", "naive")
        best = BestFigure(task, speedup, over, percent, backend)
    return KataStatus(kata, state, passed, failures[0] if failures else None, best)


def current_kata() -> Kata:
    """The first kata not passing yet, else the last: where the commands start."""
    results = read()
    return next((k for k in katas() if kata_status(k, results).state != "passing"), katas()[-1])


def next_hint(kata: Kata, task: Task, advance: bool = False, root: Path = ROOT) -> tuple[int, str]:
    """(index, text) of the task's next hint, in order and round again; `advance` marks
    it shown (the count is kept beside the results)."""
    path = cache_file(root, "xtc-katas/hints")
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        state = {}
    key = f"{kata.id}:{task.function}"
    shown = state.get(key, 0)
    if advance:
        state[key] = shown + 1
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(state))
    return shown % len(task.hints), task.hints[shown % len(task.hints)]
