"""Adding a kata needs no harness change: CONTRIBUTING.md's recipe, followed in a copy.

A throw-away kata, NN_demo (the next free number; one task: a matmul schedule), is
written from files and a manifest entry alone. Then, as CI does: the lint accepts it,
its tests fail on the stub with the stub's message, pass on its solution (the speed race
included), the learner's status table lists it, and `xtc-katas show` finds its schedule.
"""

import textwrap

import pytest

from xtc_katas.kata.manifest import katas
from xtc_katas.tools.repo_copy import copy_repository, run_pytest, run_python

pytestmark = pytest.mark.slow  # every test reads the module's repository copy

NUMBER = len(katas()) + 1
DEMO = f"{NUMBER:02d}_demo"


def filled(text: str) -> str:
    return textwrap.dedent(text.replace("{id}", DEMO).replace("{number}", str(NUMBER))).lstrip()


MANIFEST_ENTRY = """
[[kata]]
id = "{id}"
title = "Demo: a kata added from files alone"
module = "demo"

  [[kata.task]]
  function = "schedule_demo"
  hints = ["sch.interchange([\\"i\\", \\"k\\", \\"j\\"]): j innermost."]
  kind = "schedule"
  shape = ["stride_one"]
  cap = { mlir = 1.2, tvm = 18 }
  problem = "tutorial"
"""

STUB = '''
"""Kata {number} (demo): put j innermost."""

from typing import Any


def schedule_demo(sch: Any) -> None:
    """Reorder the loops so that j is innermost."""
    raise NotImplementedError
'''

SOLUTION = '''
"""Kata {number} (demo), reference solution."""

from typing import Any


def schedule_demo(sch: Any) -> None:
    """Reorder the loops so that j is innermost."""
    sch.interchange(["i", "k", "j"])
'''

TESTS = '''
"""Tests of kata {number} (demo): numerics, shape, and the speed race every kata shares."""

import pytest


@pytest.mark.task("schedule_demo")
def test_schedule_demo_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("schedule_demo")
def test_schedule_demo_puts_j_innermost(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("schedule_demo")
def test_schedule_demo_keeps_up_with_its_reference(task):
    task.assert_speed()
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repository(tmp_path_factory.mktemp("new-kata"))
    with (repo / "katas" / "manifest.toml").open("a") as manifest:
        manifest.write(filled(MANIFEST_ENTRY))
    for side, source in (("katas", STUB), ("solutions", SOLUTION)):
        folder = repo / side / DEMO
        folder.mkdir()
        (folder / "demo.py").write_text(filled(source))
    (repo / "katas" / DEMO / "README.md").write_text(f"# Kata {NUMBER} (demo)\n")
    (repo / "katas" / DEMO / "test_demo.py").write_text(filled(TESTS))
    return repo


def test_the_lint_accepts_the_new_kata(repo):
    code, out = run_pytest(repo, "-q", "tests/test_manifest.py", "-k", f"{DEMO} or order")
    assert code == 0, out


def test_the_new_kata_fails_on_its_stub_with_the_stubs_message(repo):
    code, out = run_pytest(repo, f"katas/{DEMO}", "--backend", "mlir", "-m", "not perf")
    assert code == 1
    assert f"{DEMO} › schedule_demo() is not implemented yet." in out
    code, out = run_pytest(repo, f"katas/{DEMO}", "--check-stubs", "--backend", "mlir")
    assert code == 0, out


@pytest.mark.perf  # the new kata's speed race runs in the copy
def test_the_new_kata_passes_on_its_solution_speed_race_included(repo):
    code, out = run_pytest(repo, f"katas/{DEMO}", "--solutions", "--backend", "mlir")
    assert code == 0, out
    assert (
        "3 passed" in out and "test_schedule_demo_keeps_up_with_its_reference[mlir]: speedup" in out
    )


def test_the_status_table_lists_the_new_kata(repo):
    code, out = run_python(repo, "-m", "xtc_katas", "status", "--no-run")
    assert code == 0, out
    assert DEMO in out and "Demo: a kata added from files alone" in out


def test_show_finds_the_new_kata_schedule_by_its_kind(repo):
    code, out = run_python(
        repo, "-m", "xtc_katas", "show", str(NUMBER), "--reference", "--backend", "mlir"
    )
    assert code == 0, out
    assert f"{DEMO} schedule_demo on mlir" in out, out
