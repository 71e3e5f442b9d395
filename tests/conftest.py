"""The harness's own suite: each test compiles in its own directory, and a test that
copies the repository must say so.

TVM writes ./tmpXXXX/ in the working directory at every schedule it applies
(TVMOpsCompiler._exec_schedule, removed only on success). Run from the repository's
root, those appear and vanish while another worker copies the repository: CI's stop 28
failed on a copytree that listed such a directory and found it gone.

A repository copy (xtc_katas/grade/repo_copy.py) runs pytest or xtc-katas in a fresh
process (tools/copy_runs.py): seconds to a minute each. Those tests carry the `slow`
marker, and so do the few others that take 9 s or more alone (60 TVM compiles of
test_schedule_checks' property test, XTC's probes in test_machine, a gaming search in
test_optimizer_race), so that `pytest tests -m "not slow"` leaves them out: -n 2, 703 tests
in under a minute (53 s) on a 2-vCPU AMD EPYC family 23 model 1 (Zen 1). This guard fails
an unmarked test at its first copy, naming the marker to add.
"""

from __future__ import annotations

import os
import shutil
import sys
import types

import pytest

from xtc_katas import ROOT
from xtc_katas.grade import repo_copy

# The maintainers' tools (tools/: not installed, so not on sys.path; `python -m tools.X`
# finds them from the repository's root) that the tests import, as `tools`.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


@pytest.fixture(autouse=True)
def _compiles_in_its_own_directory(workdir) -> None:
    """The kata tests' own `workdir` (plugin/fixtures.py): a private directory, also the cwd."""


#: The test being set up, run or torn down: a module-scoped fixture that copies the
#: repository runs inside the setup of the first test that uses it.
_CURRENT: dict[str, pytest.Item] = {}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    _CURRENT["item"] = item
    try:
        return (yield)
    finally:
        _CURRENT.pop("item", None)


@pytest.fixture(scope="session", autouse=True)
def _repository_copies_are_marked_slow() -> None:
    """Fails a test that copies the repository without the `slow` marker, also when a
    module-scoped fixture makes the copy (test_new_kata's did, unmarked, unseen by a
    guard set up per test: module fixtures are made before it)."""
    original = repo_copy.shutil

    def copytree(*args, **kwargs):
        item = _CURRENT.get("item")
        if item is not None and not item.get_closest_marker("slow"):
            pytest.fail(
                f"{item.nodeid} copies the repository (repo_copy.copy_repository): "
                "mark it @pytest.mark.slow, so that `pytest tests -m 'not slow'` leaves it out"
            )
        return shutil.copytree(*args, **kwargs)

    repo_copy.shutil = types.SimpleNamespace(**{**vars(shutil), "copytree": copytree})
    try:
        yield
    finally:
        repo_copy.shutil = original


@pytest.fixture
def chromium() -> str:
    """Debian's chromium, for the tests that draw a page: skipped where it is missing,
    except in CI, which must run them (./run.sh test installs it)."""
    from tools import browser

    path = browser.chromium_path()
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the browser test: {browser.HOW_TO_GET}")
        pytest.skip(browser.HOW_TO_GET)
    return path
