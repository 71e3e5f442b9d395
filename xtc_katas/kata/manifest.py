"""The ordered kata manifest (katas/manifest.toml), read into msgspec structs.

One file holds the order, titles, stub module names, the functions a learner writes and
their hints, so that the CLI, the friendly failure messages and the lint test all agree.
The structs below are its schema: msgspec refuses an unknown key or a value of the wrong
type, and ManifestError names the line. What a task's `kind` means is the harness's
registry, checks/kinds.py.
"""

from __future__ import annotations

import functools
import operator
import re
from pathlib import Path
from typing import Annotated, Literal

import msgspec
import msgspec.toml

from xtc_katas import ROOT

MANIFEST = ROOT / "katas" / "manifest.toml"

Name = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z_]\w*$")]


class Task(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One function the learner writes ([[kata.task]]), with hints from gentle to explicit."""

    function: Name
    hints: Annotated[tuple[str, ...], msgspec.Meta(min_length=1)]
    #: Per backend, the most a perf test may ask: a speedup over the naive schedule (kata
    #: 08: a ratio to numpy). The bar itself comes from the same run (speed_rule.py).
    caps: dict[str, int | float] = msgspec.field(default_factory=dict, name="cap")
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
    #: What the function gives the harness (checks/kinds.py, KINDS); "" for one that
    #: builds no schedule.
    kind: str = ""
    #: What the race measures speedups over: "naive" (the unscheduled kernel) or
    #: "unfused" (each side's own schedule without its fusion, kata 09).
    baseline: Literal["naive", "unfused"] = "naive"
    #: Per backend, why this step may not beat the previous one (a cause measured on some
    #: CPU): recorded with the figures when this step's reference is not speed_rule.PAYS x
    #: the previous step's in the run (speed_rule.step_note), for the instructor's summary;
    #: a learner's messages keep to the run's own figures (speed_judge.judge_speed).
    no_gain: dict[str, str] = {}
    #: The shape checks its loop nest must pass, by name (loop_nests.SHAPES): what
    #: `task.assert_shape()` asserts, and what the harness's own tests read.
    shape: tuple[str, ...] = ()

    def no_gain_reason(self, backend: str) -> str:
        return self.no_gain.get(backend, "")


class Kata(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(pattern=r"^\d+_\w+$")]  # "03_compile": its folders
    title: str
    module: Name  # the stub module's name, without .py
    tasks: Annotated[tuple[Task, ...], msgspec.Meta(min_length=1)] = msgspec.field(name="task")

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
        caps = task.caps if (task := self.task(function)) else {}
        if backend not in caps:
            raise LookupError(f"{self.id}.{function} has no speed cap for {backend}")
        return caps[backend]

    def solution_of(self, name: str) -> tuple[Kata, str]:
        """A manifest reference ("function" or "NN_kata.function") as (kata, function)."""
        if "." in name:
            kata_id, function = name.split(".", 1)
            return find(kata_id), function
        return self, name


class _Manifest(msgspec.Struct, forbid_unknown_fields=True):
    kata: tuple[Kata, ...] = ()


class ManifestError(ValueError):
    """A manifest entry the harness would misread; the message names the file and line."""


def _line(text: str, kata: int = -1, task: int = -1, key: str = "") -> int:
    """The line (from 1) of `key = ` in the `kata`-th [[kata]] of the manifest's `text`,
    or in its `task`-th [[kata.task]] (both from 0; -1: the top level), else the line
    where that table starts."""
    at, start = (-1, -1), 0
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line in ("[[kata]]", "[[kata.task]]"):
            at = (at[0] + 1, -1) if line == "[[kata]]" else (at[0], at[1] + 1)
        if at == (kata, task):
            start = start or number
            if key and re.match(rf"{re.escape(key)}\s*=", line):
                return number
    return start


def _name(raw: dict, kata: int, *task: int) -> str:
    """The `kata`-th kata's id, or its `task`-th task's function, as the manifest gives
    it, else "#n"."""
    keys = ("kata", kata, *(("task", *task, "function") if task else ("id",)))
    try:
        return str(functools.reduce(operator.getitem, keys, raw))
    except (KeyError, IndexError, TypeError):
        return f"#{keys[-2] + 1}"


def parse(text: str, path: Path = MANIFEST) -> tuple[Kata, ...]:
    """The katas of a manifest's `text`: an entry the harness would misread raises
    ManifestError, which names `path` and the line."""
    try:
        raw = msgspec.toml.decode(text)
    except msgspec.DecodeError as exc:
        raise ManifestError(f"{path}: {exc}") from None
    try:
        return tuple(msgspec.convert(raw, _Manifest).kata)
    except msgspec.ValidationError as exc:  # "... - at `$.kata[3].task[1].cap[...]`"
        message, _, at = str(exc).partition(" - at `$")
        found = re.match(r"(?:\.kata\[(\d+)\])?(?:\.task\[(\d+)\])?(?:\.(\w+))?", at)
        kata, task = (int(n or -1) for n in found.groups()[:2])
        unknown = re.search(r"unknown field `(\w+)`", message)
        key = unknown.group(1) if unknown else found[3] or ""
        message = message if unknown or not key else f"{key}: {message}"
        owner = f"task {_name(raw, kata, task)!r} of {_name(raw, kata)}"
        owner = "the manifest" if kata < 0 else f"kata {_name(raw, kata)}" if task < 0 else owner
        raise ManifestError(f"{path}:{_line(text, kata, task, key)}: {owner}: {message}") from None


@functools.cache
def katas() -> tuple[Kata, ...]:
    return parse(MANIFEST.read_text())


def find(key: str | int) -> Kata:
    """A kata by number (3, "3", "03"), name ("compile") or id ("03_compile")."""
    text = str(key).strip().rstrip("/").split("/")[-1]
    for kata in katas():
        if text in (kata.id, kata.name) or (text.isdigit() and int(text) == kata.number):
            return kata
    raise LookupError(f"no kata {key!r}; the katas are: {', '.join(k.id for k in katas())}")


def kata_of_path(path: Path) -> Kata | None:
    """The kata a file belongs to (katas/NN_x/... or solutions/NN_x/...), if any."""
    by_id = {kata.id: kata for kata in katas()}
    return next((by_id[part] for part in Path(path).resolve().parts if part in by_id), None)
