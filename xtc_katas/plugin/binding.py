"""Each kata test bound, once, at collection, to its kata and the tasks it checks (kept in
its stash), and the user property its reports carry them in (to pytest-xdist's
controller too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from xtc_katas.kata import stubs
from xtc_katas.kata.manifest import Kata, kata_of_path

#: The fixture of the module under test (fixtures.py): a test that asks for it is a test
#: of the learner's module, checked stub first (reports.py), found in its funcargs by
#: this name.
LEARNER_MODULE = "learner_module"
#: The user property a report carries its test's kata, tasks and backend in.
BOUND = "xtc-katas-bound"


def parallel_run(config: pytest.Config) -> bool:
    """Under pytest-xdist (-n N): in the controller and in every worker."""
    return bool(getattr(config.option, "numprocesses", None)) or hasattr(config, "workerinput")


TASKS = pytest.StashKey[tuple[str, ...]]()
#: The kata a test belongs to, found once at collection (None: not a kata test).
KATA = pytest.StashKey["Kata | None"]()


def kata_of(item: pytest.Item) -> Kata | None:
    """The kata whose folder holds the test (katas/NN_x/ or solutions/NN_x/), found once
    at collection and kept in the item's stash; None for any other test."""
    if KATA not in item.stash:
        item.stash[KATA] = kata_of_path(Path(item.path))
    return item.stash[KATA]


def bound_tasks(item: pytest.Item) -> tuple[str, ...]:
    """The kata functions a test checks, decided once at collection: the `task` marker's
    if it has one, else those its name contains (the contract tests/test_manifest.py
    keeps). The stub checks, the progress record and the status table read this."""
    return item.stash.get(TASKS, ())


def bind_tasks(item: pytest.Item) -> None:
    kata = kata_of(item)
    if kata is None:
        return
    marker = item.get_closest_marker("task")
    if marker is not None:
        item.stash[TASKS] = tuple(marker.args)
    else:
        name = getattr(item, "originalname", item.name)
        item.stash[TASKS] = tuple(stubs.functions_checked_by(kata, name))
