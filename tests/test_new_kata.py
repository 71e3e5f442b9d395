"""Adding a kata needs no harness change: CONTRIBUTING.md's recipe, followed in a copy.

A throw-away kata, 09_demo (one task: a matmul schedule), is written from files and a
manifest entry alone. Then, as CI does: the lint accepts it, its tests fail on the stub
with the stub's message, pass on its solution (the speed race included), and the
learner's status table lists it.
"""

import textwrap

import pytest

from xtc_katas.tools.repo_copy import copy_repository, run_pytest, run_python

MANIFEST_ENTRY = """
[[kata]]
id = "09_demo"
title = "Demo: a kata added from files alone"
module = "demo"

  [[kata.task]]
  function = "schedule_demo"
  hints = ["sch.interchange([\\"i\\", \\"k\\", \\"j\\"]): j innermost."]
  kind = "schedule"
  cap = { mlir = 1.2, tvm = 18 }
  problem = "tutorial"
"""

STUB = '''
"""Kata 09 (demo): put j innermost."""

from typing import Any


def schedule_demo(sch: Any) -> None:
    """Reorder the loops so that j is innermost."""
    raise NotImplementedError
'''

SOLUTION = '''
"""Kata 09 (demo), reference solution."""

from typing import Any


def schedule_demo(sch: Any) -> None:
    """Reorder the loops so that j is innermost."""
    sch.interchange(["i", "k", "j"])
'''

TESTS = '''
"""Tests of kata 09 (demo): numerics, shape, and the speed race every kata shares."""

import pytest

from xtc_katas.checks import loop_nests


@pytest.mark.task("schedule_demo")
def test_schedule_demo_computes_the_matmul(task):
    task.assert_computes()


@pytest.mark.task("schedule_demo")
def test_schedule_demo_puts_j_innermost(task):
    task.assert_shape(loop_nests.stride_one(task.loop_nest()))


@pytest.mark.perf
@pytest.mark.task("schedule_demo")
def test_schedule_demo_beats_naive(task):
    task.assert_speed()
'''


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repository(tmp_path_factory.mktemp("new-kata"))
    with (repo / "katas" / "manifest.toml").open("a") as manifest:
        manifest.write(MANIFEST_ENTRY)
    for side, source in (("katas", STUB), ("solutions", SOLUTION)):
        folder = repo / side / "09_demo"
        folder.mkdir()
        (folder / "demo.py").write_text(textwrap.dedent(source).lstrip())
    (repo / "katas" / "09_demo" / "README.md").write_text("# Kata 09 (demo)\n")
    (repo / "katas" / "09_demo" / "test_demo.py").write_text(textwrap.dedent(TESTS).lstrip())
    return repo


def test_the_lint_accepts_the_new_kata(repo):
    code, out = run_pytest(repo, "-q", "tests/test_manifest.py", "-k", "09_demo or order")
    assert code == 0, out


def test_the_new_kata_fails_on_its_stub_with_the_stubs_message(repo):
    code, out = run_pytest(repo, "katas/09_demo", "--backend", "mlir", "-m", "not perf")
    assert code == 1
    assert "09_demo › schedule_demo() is not implemented yet." in out
    code, out = run_pytest(repo, "katas/09_demo", "--check-stubs", "--backend", "mlir")
    assert code == 0, out


def test_the_new_kata_passes_on_its_solution_speed_race_included(repo):
    code, out = run_pytest(repo, "katas/09_demo", "--solutions", "--backend", "mlir")
    assert code == 0, out
    assert "3 passed" in out and "test_schedule_demo_beats_naive[mlir]: speedup" in out


def test_the_status_table_lists_the_new_kata(repo):
    code, out = run_python(repo, "-m", "xtc_katas", "status", "--no-run")
    assert code == 0, out
    assert "09_demo" in out and "Demo: a kata added from files alone" in out


def test_show_finds_the_new_kata_schedule_by_its_kind(repo):
    code, out = run_python(repo, "-m", "xtc_katas", "show", "9", "--reference", "--backend", "mlir")
    assert code == 0, out
    assert "09_demo schedule_demo on mlir" in out, out
