"""The ordered kata manifest (katas/manifest.toml), read into small dataclasses.

One file holds the order, titles, stub module names, the functions a learner writes and
their hints, so that the CLI, the friendly failure messages and the lint test all agree.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from xtc_katas import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MANIFEST = ROOT / "katas" / "manifest.toml"

#: What a task's function gives the harness (the manifest's `kind`), and how it is called.
KINDS = {
    "schedule": "f(sch): schedules the scheduler it is given",
    "spec": "f(): returns a descript spec for descript_scheduler",
    "baseline": "f(graph, Backend, dump_file): compiles the graph, unscheduled",
    "candidates": "f(): returns {name: spec}, the specs a search tries",
    "search": "f(graph, Backend, specs, peak): yields (index, total, name, percent)",
    "strategy": "f(graph): returns an XTC strategy (a search space)",
    "strategy_search": "f(graph, Backend, strategy, num, seed, peak): yields like search",
    "large": "f(sch, threads): schedules the challenge matmul",
    "optimizer": "f(sample_fn, batch, seed): returns an XTC Optimizer (suggest/observe)",
}
#: The kinds whose function yields one schedule the harness can rebuild alone.
SCHEDULE_KINDS = ("schedule", "spec")


@dataclass(frozen=True)
class Task:
    """One function the learner writes, with hints from gentle to explicit."""

    function: str
    hints: tuple[str, ...]
    #: Per backend, the most a perf test may ask: a speedup over the naive schedule (kata
    #: 08: a ratio to numpy). The bar itself comes from the same run (speed_rule.py).
    caps: tuple[tuple[str, float], ...] = ()
    #: The solution timed next to the learner's kernel: "function" of this kata or
    #: "NN_kata.function" of another; empty means this task's own function.
    reference: str = ""
    #: The previous technique's reference, timed in the same run, that a schedule must
    #: beat where speed can tell the two apart; empty when there is none.
    previous: str = ""
    #: The problem its perf test races (a name in problems.PROBLEMS), and whether the
    #: race runs on every core.
    problem: str = ""
    parallel: bool = False
    #: What the function gives the harness (KINDS); "" for one that builds no schedule.
    kind: str = ""
    #: What the race measures speedups over: "naive" (the unscheduled kernel) or
    #: "unfused" (each side's own schedule without its fusion, kata 09).
    baseline: str = "naive"
    #: Per backend, why this step may not beat the previous one (a cause measured on some
    #: CPU, e.g. LLVM vectorized the previous step already): shown with the figures when
    #: the previous step's reference is as fast in the learner's run (speed_rule.step_note).
    no_gain: tuple[tuple[str, str], ...] = ()

    def cap(self, backend: str) -> float:
        caps = dict(self.caps)
        if backend not in caps:
            raise LookupError(f"{self.function} has no speed cap for {backend}")
        return caps[backend]

    def no_gain_reason(self, backend: str) -> str:
        return dict(self.no_gain).get(backend, "")


#: The keys a task may have in the manifest: a typo is an error, not a silent default.
TASK_KEYS = {
    "function",
    "hints",
    "cap",
    "reference",
    "previous",
    "problem",
    "parallel",
    "kind",
    "baseline",
    "no_gain",
}


def _task(kata_id: str, entry: dict) -> Task:
    unknown = sorted(set(entry) - TASK_KEYS)
    if unknown:
        raise ValueError(
            f"{MANIFEST}: task {entry.get('function', '?')!r} of {kata_id} has unknown "
            f"key(s) {unknown}; the keys are {sorted(TASK_KEYS)}"
        )
    return Task(
        entry["function"],
        tuple(entry["hints"]),
        tuple(entry.get("cap", {}).items()),
        entry.get("reference", ""),
        entry.get("previous", ""),
        entry.get("problem", ""),
        entry.get("parallel", False),
        entry.get("kind", ""),
        entry.get("baseline", "naive"),
        tuple(entry.get("no_gain", {}).items()),
    )


@dataclass(frozen=True)
class Kata:
    id: str  # "03_compile": the folder name under katas/ and solutions/
    title: str
    module: str  # the stub module's name, without .py
    tasks: tuple[Task, ...]

    @property
    def number(self) -> int:
        return int(self.id.split("_", 1)[0])

    @property
    def name(self) -> str:
        return self.id.split("_", 1)[1]

    def folder(self, root: Path = ROOT) -> Path:
        return root / "katas" / self.id

    def stub_path(self, root: Path = ROOT) -> Path:
        return self.folder(root) / f"{self.module}.py"

    def solution_path(self, root: Path = ROOT) -> Path:
        return root / "solutions" / self.id / f"{self.module}.py"

    def task(self, function: str) -> Task | None:
        return next((t for t in self.tasks if t.function == function), None)

    def cap(self, function: str, backend: str) -> float:
        task = self.task(function)
        if task is None:
            raise LookupError(f"{self.id} has no task {function}")
        return task.cap(backend)

    def solution_of(self, name: str) -> tuple[Kata, str]:
        """A manifest reference ("function" or "NN_kata.function") as (kata, function)."""
        if "." in name:
            kata_id, function = name.split(".", 1)
            return find(kata_id), function
        return self, name

    def tasks_of_kind(self, *kinds: str) -> list[Task]:
        return [t for t in self.tasks if t.kind in kinds]


@cache
def katas() -> tuple[Kata, ...]:
    data = tomllib.loads(MANIFEST.read_text())
    return tuple(
        Kata(
            id=k["id"],
            title=k["title"],
            module=k["module"],
            tasks=tuple(_task(k["id"], t) for t in k["task"]),
        )
        for k in data["kata"]
    )


def find(key: str | int) -> Kata:
    """A kata by number (3, "3", "03"), name ("compile") or id ("03_compile")."""
    text = str(key).strip().rstrip("/").split("/")[-1]
    for kata in katas():
        if text in (kata.id, kata.name) or (text.isdigit() and int(text) == kata.number):
            return kata
    known = ", ".join(k.id for k in katas())
    raise LookupError(f"no kata {key!r}; the katas are: {known}")


def kata_of_path(path: Path) -> Kata | None:
    """The kata a file belongs to (katas/NN_x/... or solutions/NN_x/...), if any."""
    for part in Path(path).resolve().parts:
        for kata in katas():
            if part == kata.id:
                return kata
    return None
