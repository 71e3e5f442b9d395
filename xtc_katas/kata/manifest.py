"""The ordered kata manifest (katas/manifest.toml), read into small dataclasses.

One file holds the order, titles, stub module names, the functions a learner writes and
their hints, so that the CLI, the friendly failure messages and the lint test all agree.
"""

from __future__ import annotations

import re
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
    #: this step's reference is not speed_rule.PAYS x the previous step's in the learner's
    #: run (speed_rule.step_note).
    no_gain: tuple[tuple[str, str], ...] = ()
    #: The shape checks its loop nest must pass, by name (loop_nests.SHAPES): what
    #: `task.assert_shape()` asserts, and what the harness's own tests read.
    shape: tuple[str, ...] = ()
    #: For a kind its kata declares (the kata's `kinds`), where its class is, as
    #: "katas/NN_name/module.py:Class"; "" for a kind of the harness's KINDS.
    kind_class: str = ""

    def cap(self, backend: str) -> float:
        caps = dict(self.caps)
        if backend not in caps:
            raise LookupError(f"{self.function} has no speed cap for {backend}")
        return caps[backend]

    def no_gain_reason(self, backend: str) -> str:
        return dict(self.no_gain).get(backend, "")

    def speed_hint(self, backend: str) -> str:
        """The default "next:" line of a slow kernel: the task's last hint that is not
        about the other backend (a hint starting "On MLIR" says nothing to a TVM
        learner)."""
        others = [name.upper() for name in ("mlir", "tvm") if name != backend]
        mine = [h for h in self.hints if not any(h.startswith(f"On {o}") for o in others)]
        return mine[-1] if mine else "see the lesson"


#: The keys a kata and a task may have in the manifest: a typo is an error, not a silent
#: default. A kata's `kinds` (optional) declares kinds of its own: { name =
#: "module.Class" }, a TaskKind subclass in a module of the kata's folder.
KATA_KEYS = {"id", "title", "module", "task"}
KATA_OPTIONAL_KEYS = {"kinds"}
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
    "shape",
}
#: What a race may measure speedups over (a task's `baseline`).
BASELINES = ("naive", "unfused")


class ManifestError(ValueError):
    """A manifest entry the harness would misread; the message names the file and line."""


def _line(text: str, kata_id: str, function: str = "", key: str = "") -> int:
    """The line (from 1) in the manifest's `text` of kata `kata_id`'s `id`, of its task
    `function`, or of `key` in either; 0 when the kata is not found."""
    lines = [line.strip() for line in text.splitlines()]

    def first(pattern: str, begin: int, stop_at: str) -> int:
        for number in range(begin + 1, len(lines)):
            if lines[number].startswith(stop_at):
                return -1
            if re.match(pattern, lines[number]):
                return number
        return -1

    at = next(
        (n for n, line in enumerate(lines) if re.match(rf'id\s*=\s*"{re.escape(kata_id)}"', line)),
        -1,
    )
    if at < 0:
        return 0
    if function:
        found = first(rf'function\s*=\s*"{re.escape(function)}"', at, "[[kata]]")
        if found < 0:
            return at + 1
        at = max(n for n in range(found + 1) if lines[n].startswith("[[kata.task]]"))
        if not key:
            return found + 1
    if key:
        found = first(rf"{re.escape(key)}\s*=", at, "[[")
        return (found if found >= 0 else at) + 1
    return at + 1


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


#: What each task key's value must be, and the words for the error.
TASK_TYPES = {
    "function": (lambda v: isinstance(v, str) and v.isidentifier(), "a function's name"),
    "hints": (lambda v: _is_strings(v) and bool(v), "a non-empty list of strings"),
    "cap": (
        lambda v: isinstance(v, dict) and all(_is_number(x) for x in v.values()),
        "a table of numbers per backend, e.g. { mlir = 14, tvm = 18 }",
    ),
    "reference": (lambda v: isinstance(v, str), "a string"),
    "previous": (lambda v: isinstance(v, str), "a string"),
    "problem": (lambda v: isinstance(v, str), "a string"),
    "parallel": (lambda v: isinstance(v, bool), "true or false"),
    "kind": (lambda v: isinstance(v, str) and v.isidentifier(), "a kind's name"),
    "baseline": (lambda v: v in BASELINES, f"one of {list(BASELINES)}"),
    "no_gain": (
        lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
        "a table of strings per backend",
    ),
    "shape": (_is_strings, "a list of shape checks' names (loop_nests.SHAPES)"),
}


def _task(
    kata_id: str,
    entry: dict,
    text: str = "",
    path: Path = MANIFEST,
    own_kinds: dict[str, str] | None = None,
) -> Task:
    """One [[kata.task]] entry, checked against TASK_KEYS and TASK_TYPES; its kind is one
    of KINDS or of the kata's `own_kinds` ({name: "katas/NN_name/module.py:Class"})."""
    own_kinds = own_kinds or {}
    function = entry.get("function", "?")

    def error(key: str, message: str) -> ManifestError:
        line = _line(text, kata_id, function if isinstance(function, str) else "", key)
        where = f"{path}:{line}" if line else str(path)
        return ManifestError(f"{where}: task {function!r} of {kata_id}: {message}")

    unknown = sorted(set(entry) - TASK_KEYS)
    if unknown:
        raise error(unknown[0], f"unknown key(s) {unknown}; the keys are {sorted(TASK_KEYS)}")
    for key in ("function", "hints"):
        if key not in entry:
            raise error("", f"no {key!r}: every task names its function and gives hints")
    for key, value in entry.items():
        valid, wanted = TASK_TYPES[key]
        if not valid(value):
            raise error(key, f"{key} = {value!r}: expected {wanted}")
    kind = entry.get("kind", "")
    if kind and kind not in KINDS and kind not in own_kinds:
        own = f" or the kata's own {sorted(own_kinds)}" if own_kinds else ""
        raise error("kind", f"kind = {kind!r}: expected one of the KINDS {sorted(KINDS)}{own}")
    return Task(
        function=entry["function"],
        hints=tuple(entry["hints"]),
        caps=tuple(entry.get("cap", {}).items()),
        reference=entry.get("reference", ""),
        previous=entry.get("previous", ""),
        problem=entry.get("problem", ""),
        parallel=entry.get("parallel", False),
        kind=entry.get("kind", ""),
        baseline=entry.get("baseline", "naive"),
        no_gain=tuple(entry.get("no_gain", {}).items()),
        shape=tuple(entry.get("shape", ())),
        kind_class=own_kinds.get(kind, ""),
    )


#: A kata's own kind: "module.Class", both identifiers.
KIND_CLASS = re.compile(r"[A-Za-z_]\w*\.[A-Za-z_]\w*")


def _own_kinds(kata_id: str, entry: dict, text: str, path: Path) -> dict[str, str]:
    """The kinds a kata declares (its `kinds` table), each as where its class is:
    {name: "katas/NN_name/module.py:Class"}. A name of the harness's KINDS is refused:
    a kata adds kinds, it never redefines one."""
    kinds = entry.get("kinds", {})
    line = _line(text, kata_id, key="kinds")
    if not isinstance(kinds, dict) or not all(
        isinstance(v, str) and KIND_CLASS.fullmatch(v) for v in kinds.values()
    ):
        raise ManifestError(
            f"{path}:{line}: kata {kata_id}: kinds = {kinds!r}: expected a table of "
            '"module.Class" per kind, e.g. { tile_sizes = "tile_kind.TileSizesKind" }'
        )
    taken = sorted(set(kinds) & set(KINDS))
    if taken:
        raise ManifestError(f"{path}:{line}: kata {kata_id}: kinds {taken} are the harness's own")
    return {
        name: f"katas/{kata_id}/{where.split('.')[0]}.py:{where.split('.')[1]}"
        for name, where in kinds.items()
    }


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


def parse(text: str, path: Path = MANIFEST) -> tuple[Kata, ...]:
    """The katas of a manifest's `text`, checked against the schema (KATA_KEYS,
    TASK_KEYS, TASK_TYPES): an entry the harness would misread raises ManifestError,
    which names `path` and the line."""
    data = tomllib.loads(text)
    unknown = sorted(set(data) - {"kata"})
    if unknown:
        raise ManifestError(f"{path}: unknown top-level key(s) {unknown}: only [[kata]]")
    found = []
    for entry in data.get("kata", []):
        kata_id = entry.get("id", "?")
        unknown = sorted(set(entry) - KATA_KEYS - KATA_OPTIONAL_KEYS)
        if unknown:
            line = _line(text, str(kata_id), key=unknown[0])
            raise ManifestError(
                f"{path}:{line}: kata {kata_id}: unknown key(s) {unknown}; the keys are "
                f"{sorted(KATA_KEYS | KATA_OPTIONAL_KEYS)}"
            )
        missing = sorted(KATA_KEYS - set(entry))
        if missing or not all(isinstance(entry[k], str) for k in ("id", "title", "module")):
            line = _line(text, str(kata_id))
            raise ManifestError(
                f"{path}:{line}: kata {kata_id}: a kata has a string id, title and module, "
                "and at least one [[kata.task]]"
            )
        own = _own_kinds(kata_id, entry, text, path)
        found.append(
            Kata(
                id=kata_id,
                title=entry["title"],
                module=entry["module"],
                tasks=tuple(_task(kata_id, task, text, path, own) for task in entry["task"]),
            )
        )
    return tuple(found)


@cache
def katas() -> tuple[Kata, ...]:
    return parse(MANIFEST.read_text())


def line_of(kata: Kata, function: str = "", key: str = "") -> str:
    """Where a lint error points: "katas/manifest.toml:LINE" of a kata's id, of one of
    its tasks, or of a key of either."""
    line = _line(MANIFEST.read_text(), kata.id, function, key)
    return f"{MANIFEST.relative_to(ROOT)}:{line}"


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
