"""Adding a kata needs no harness change: CONTRIBUTING.md's recipe, followed in a copy.

A throw-away kata is written from files and a manifest entry alone. NN_demo (the next
free number) has two tasks of the harness's kinds: a matmul schedule and a register tile
of a convolution, each with its problem and shape checks named in the manifest. Then, as
CI does: the lint accepts it, its tests fail on the stub with the stub's message, pass on
the solution (the speed races included), the learner's status table lists it, and
`xtc-katas show` finds every schedule by its kind.
"""

import textwrap

import pytest

from tools.copy_runs import run_pytest, run_python
from xtc_katas.grade.repo_copy import copy_repository
from xtc_katas.kata.manifest import katas

pytestmark = pytest.mark.slow  # every test reads the module's repository copy

NUMBER = len(katas()) + 1
DEMO = f"{NUMBER:02d}_demo"


def filled(text: str, kata: str = DEMO) -> str:
    number = kata.split("_")[0].lstrip("0")
    return textwrap.dedent(text.replace("{id}", kata).replace("{number}", number)).lstrip()


MANIFEST_ENTRY = """
[[kata]]
id = "{id}"
title = "Demo: a kata added from files alone"
module = "demo"

  [[kata.task]]
  function = "schedule_demo"
  hints = ["Which loop order puts j innermost?"]
  kind = "schedule"
  shape = ["stride_one"]
  cap = { mlir = 1.2, tvm = 18 }
  problem = "tutorial"

  [[kata.task]]
  function = "tile_conv_demo"
  hints = ["A 4x16 register tile of the output, w by f, inside r, s, c."]
  kind = "schedule"
  shape = ["register_tile"]
  cap = { mlir = 35, tvm = 35 }
  problem = "resnet18_02_rows8"
"""

STUB = '''
"""Kata {number} (demo): put j innermost."""

from typing import Any


def schedule_demo(sch: Any) -> None:
    """Reorder the loops so that j is innermost."""
    raise NotImplementedError


def tile_conv_demo(sch: Any) -> None:
    """A register tile of the conv's output inside its reductions."""
    raise NotImplementedError
'''

SOLUTION = '''
"""Kata {number} (demo), reference solution."""

from typing import Any


def schedule_demo(sch: Any) -> None:
    """Reorder the loops so that j is innermost."""
    sch.interchange(["i", "k", "j"])


def tile_conv_demo(sch: Any) -> None:
    """A register tile of the conv's output inside its reductions."""
    sch.strip_mine("w", {"w1": 4})
    sch.strip_mine("f", {"f1": 16})
    sch.interchange(["h", "b", "w", "f", "r", "s", "c", "w1", "f1"])
    sch.unroll({"w1": 4})
    sch.vectorize(["f1"])
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


@pytest.mark.task("tile_conv_demo")
def test_tile_conv_demo_computes_the_layer(task):
    task.assert_computes()


@pytest.mark.task("tile_conv_demo")
def test_tile_conv_demo_has_a_register_tile(task):
    task.assert_shape()


@pytest.mark.perf
@pytest.mark.task("tile_conv_demo")
def test_tile_conv_demo_keeps_up_with_its_reference(task):
    task.assert_speed()
'''


def write_kata(repo, kata, module, entry, stub, solution, tests):
    """A kata from its manifest entry and files alone."""
    with (repo / "katas" / "manifest.toml").open("a") as manifest:
        manifest.write("\n" + filled(entry, kata))
    for side, source in (("katas", stub), ("solutions", solution)):
        folder = repo / side / kata
        folder.mkdir()
        (folder / f"{module}.py").write_text(filled(source, kata))
    folder = repo / "katas" / kata
    (folder / "README.md").write_text(f"# Kata {kata}\n")
    (folder / f"test_{module}.py").write_text(filled(tests, kata))


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    repo = copy_repository(tmp_path_factory.mktemp("new-kata"))
    write_kata(repo, DEMO, "demo", MANIFEST_ENTRY, STUB, SOLUTION, TESTS)
    return repo


def test_the_lint_accepts_the_new_kata(repo):
    selected = f"{DEMO} or order or registry"
    code, out = run_pytest(repo, "-q", "tests/test_manifest.py", "-k", selected)
    assert code == 0, out


def test_the_new_kata_fails_on_its_stub_with_the_stubs_message(repo):
    folder = f"katas/{DEMO}"
    code, out = run_pytest(repo, folder, "--backend", "mlir", "-m", "not perf")
    assert code == 1
    assert f"{DEMO} › schedule_demo() is not implemented yet." in out
    assert f"{DEMO} › tile_conv_demo() is not implemented yet." in out
    code, out = run_pytest(repo, folder, "--check-stubs", "--backend", "mlir")
    assert code == 0, out


@pytest.mark.perf  # the new kata's speed races run in the copy
def test_the_new_kata_passes_on_its_solution_speed_race_included(repo):
    code, out = run_pytest(repo, f"katas/{DEMO}", "--solutions", "--backend", "mlir")
    assert code == 0, out
    assert "6 passed" in out
    for function in ("schedule_demo", "tile_conv_demo"):
        assert f"test_{function}_keeps_up_with_its_reference[mlir]: speedup" in out, out


def test_the_status_table_lists_the_new_kata(repo):
    code, out = run_python(repo, "-m", "xtc_katas", "status")
    assert code == 0, out
    assert DEMO in out and "Demo: a kata added from files alone" in out


@pytest.mark.parametrize(
    "kata, function",
    [(DEMO, "schedule_demo"), (DEMO, "tile_conv_demo")],
)
def test_show_finds_the_new_katas_schedules_by_their_kind(repo, kata, function):
    number = kata.split("_")[0]
    code, out = run_python(
        repo,
        "-m",
        "xtc_katas",
        "show",
        number,
        function,
        "--reference",
        "--spoil",
        "--backend",
        "mlir",
    )
    assert code == 0, out
    assert f"{kata} {function} on mlir" in out, out
