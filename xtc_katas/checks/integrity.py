"""The judges as the harness made them: a learner's module that changes them is named.

The learner's module runs in the pytest process that judges it: the `kata` fixture
imports it, and the tests call its functions. Code there can rebind what the judges
read: a constant of the speed rule, a method of the `task` fixture, the race's source of
randomness, the module cache's store (a learner's attempts did all four: each then
passed every test of its kata without doing the task, and the poisoned cache entry
passed a wrong answer in the next run). So the plugin records, before any learner's
module is imported, every attribute of the harness's judging modules and of their
classes, and those of the standard library's sources of randomness; it compares after
the import and after every kata test. A change fails that test with what changed, is
undone (the rest of the run is judged by the real harness), and the module cache drops
the entries this process stored (module_cache.forget_stored).

A tripwire, not a sandbox: code that undoes its change before the check runs, or that
edits the harness's files, is not caught. Only running the learner's code in a process
of its own would close that; kata 12's race already runs the learner's search that way.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import xtc_katas
from xtc_katas.kata.failures import KataFailure
from xtc_katas.measure import module_cache

#: The harness's packages whose modules judge (not the CLI or the maintainers' tools,
#: which a test run does not use; the pytest plugin does), and the standard library
#: modules the judges draw their secrets and random numbers from.
JUDGES = ("xtc_katas.kata", "xtc_katas.measure", "xtc_katas.checks", "xtc_katas.plugin")
SOURCES_OF_CHANCE = ("secrets", "random", "os")
#: Module attributes that change on their own (the import system's bookkeeping).
MOVING = frozenset({"__builtins__", "__loader__", "__spec__", "__cached__", "__warningregistry__"})


class HarnessChanged(KataFailure):
    """The learner's module rebound or removed something the tests judge with."""


def judging_modules() -> list[ModuleType]:
    """Every module of JUDGES (imported now if it was not: ~15 ms), the plugin's among
    them, and SOURCES_OF_CHANCE."""
    names = [
        info.name
        for info in pkgutil.walk_packages(xtc_katas.__path__, "xtc_katas.")
        if info.name.startswith(JUDGES)
    ]
    modules = [importlib.import_module(name) for name in names]
    return modules + [importlib.import_module(name) for name in SOURCES_OF_CHANCE]


@dataclass
class Snapshot:
    """What each watched module and class held, by identity."""

    held: dict[tuple[Any, str], Any] = field(default_factory=dict)

    @classmethod
    def take(cls) -> Snapshot:
        snapshot = cls()
        for module in judging_modules():
            for name, value in list(vars(module).items()):
                if name in MOVING:
                    continue
                snapshot.held[module, name] = value
                if isinstance(value, type) and value.__module__ == module.__name__:
                    for attr, member in list(vars(value).items()):
                        snapshot.held[value, attr] = member
        return snapshot

    def changes(self) -> list[str]:
        """What was rebound or removed since the snapshot, as dotted names."""
        found = []
        for (owner, name), value in self.held.items():
            now = vars(owner).get(name, _MISSING)
            if now is not value:
                found.append(f"{_label(owner)}.{name}" + (" (removed)" if now is _MISSING else ""))
        return found

    def restore(self) -> None:
        for (owner, name), value in self.held.items():
            if vars(owner).get(name, _MISSING) is not value:
                setattr(owner, name, value)


_MISSING = object()


def _label(owner: Any) -> str:
    if isinstance(owner, ModuleType):
        return owner.__name__
    return f"{owner.__module__}.{owner.__qualname__}"


#: The snapshot of this process, taken once, before the first learner's module loads.
_SNAPSHOT: list[Snapshot] = []


def watch() -> None:
    """Take this process's snapshot, if not taken yet (call before importing a
    learner's module)."""
    if not _SNAPSHOT:
        _SNAPSHOT.append(Snapshot.take())


def verify(where: str) -> None:
    """Raise HarnessChanged, naming what changed since watch(), after undoing it; `where`
    says when the change was seen ("09_fusion: importing fusion.py")."""
    if not _SNAPSHOT:
        return
    changed = _SNAPSHOT[0].changes()
    if not changed:
        return
    _SNAPSHOT[0].restore()
    forgotten = module_cache.forget_stored()
    shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
    dropped = f", and the {forgotten} compiled references this run cached were dropped"
    raise HarnessChanged(
        f"{where}: your code changed the harness that judges it ({shown}). The tests would "
        "then judge themselves, not your code: remove what rebinds, patches or replaces "
        "anything in xtc_katas, secrets, random or os. The harness was put back as it was"
        + (dropped if forgotten else "")
        + "."
    )
