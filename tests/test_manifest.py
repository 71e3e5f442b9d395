"""Lint: the manifest, the stubs, the solutions and the tests stay in step (as rustlings does)."""

import ast
import inspect

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import loader, stubs
from xtc_katas.kata.manifest import MANIFEST, ManifestError, _line, katas, parse

KATAS = katas()
IDS = [k.id for k in KATAS]


def line_of(kata, function: str = "", key: str = "") -> str:
    """Where a lint error points: "katas/manifest.toml:LINE" of a kata's id, of one of
    its tasks' function, or of a key of either."""
    index = IDS.index(kata.id)
    task = next((n for n, t in enumerate(kata.tasks) if t.function == function), -1)
    line = _line(MANIFEST.read_text(), index, task, key or ("function" if task >= 0 else "id"))
    return f"{MANIFEST.relative_to(ROOT)}:{line}"


def test_katas_are_numbered_in_order_from_01():
    assert [k.number for k in KATAS] == list(range(1, len(KATAS) + 1))


def test_every_folder_is_in_the_manifest():
    for side in ("katas", "solutions"):
        folders = sorted(
            p.name for p in (ROOT / side).iterdir() if p.is_dir() and p.name[0].isdigit()
        )
        assert folders == sorted(IDS), f"{side}/ folders and the manifest differ"


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_kata_has_lesson_stub_tests_and_solution(kata):
    folder = kata.folder()
    assert (folder / "README.md").is_file(), "every kata has a lesson"
    assert kata.stub_path().is_file()
    assert kata.solution_path().is_file()
    assert list(folder.glob("test_*.py")), "every kata has tests"
    for task in kata.tasks:
        assert task.hints, f"{task.function} needs at least one hint"


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_stubs_are_untouched_and_solutions_are_complete(kata):
    from xtc_katas.checks.learner import Loaded  # as the harness reads them

    stub, solution = loader.load(kata, solution=False), loader.load(kata, solution=True)
    untouched = Loaded.read(kata.stub_path()).untouched
    stubbed = Loaded.read(kata.solution_path()).untouched
    for task in kata.tasks:
        stub_fn, solution_fn = getattr(stub, task.function), getattr(solution, task.function)
        assert task.function in untouched, f"the stub of {task.function} must only raise"
        assert task.function not in stubbed, f"solution of {task.function} is a stub"
        assert inspect.signature(stub_fn) == inspect.signature(solution_fn), (
            f"{task.function}: stub and solution signatures differ"
        )


def _test_names(kata):
    names = []
    for path in kata.folder().glob("test_*.py"):
        tree = ast.parse(path.read_text())
        names += [
            n.name
            for n in tree.body
            if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")
        ]
    return names


def untested_tasks(kata, test_names):
    """The manifest's tasks of `kata` that no test's name contains, each with its line."""
    return [
        f"{line_of(kata, task.function)}: no test's name contains {task.function}"
        for task in kata.tasks
        if not any(task.function in name for name in test_names)
    ]


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_every_function_is_tested_and_every_test_names_its_function(kata):
    names = _test_names(kata)
    assert not untested_tasks(kata, names), untested_tasks(kata, names)
    for name in names:
        assert stubs.functions_checked_by(kata, name), f"{name} names no function of {kata.id}"


def test_a_task_without_a_test_is_named_with_its_line():
    kata = KATAS[3]
    names = [n for n in _test_names(kata) if "schedule_split" not in n]
    (mistake,) = untested_tasks(kata, names)
    assert mistake == f"{line_of(kata, 'schedule_split')}: no test's name contains schedule_split"
    assert mistake.startswith("katas/manifest.toml:") and int(mistake.split(":")[1]) > 1


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_caps_name_both_backends_and_are_positive(kata):
    from xtc_katas.measure.backends import BACKENDS

    for task in kata.tasks:
        if not task.caps:
            continue
        assert sorted(dict(task.caps)) == sorted(BACKENDS), f"{task.function}: one per backend"
        assert all(value > 0 for value in task.caps.values()), f"{task.function}: caps are > 0"


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_references_and_previous_tasks_name_solution_functions(kata):
    # A typo in `reference` or `previous` would only show when a perf test runs: check
    # here that each names a function the solutions define.
    for task in kata.tasks:
        for name in (task.reference, task.previous):
            if not name:
                continue
            owner, function = kata.solution_of(name)
            source = owner.solution_path().read_text()
            assert f"def {function}(" in source, f"{kata.id}.{task.function}: {name} not found"


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_every_task_with_a_cap_names_the_problem_it_races(kata):
    from xtc_katas.kata.problems import PROBLEMS

    for task in kata.tasks:
        if task.caps:
            assert task.problem in PROBLEMS, f"{task.function}: problem = one of {list(PROBLEMS)}"


def _task_markers(kata):
    """(test name, function) for each `@pytest.mark.task("function")` in the kata's tests."""
    found = []
    for path in kata.folder().glob("test_*.py"):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            for decorator in node.decorator_list:
                if (
                    isinstance(decorator, ast.Call)
                    and ast.unparse(decorator.func) == "pytest.mark.task"
                ):
                    found.append((node.name, ast.literal_eval(decorator.args[0])))
    return found


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_task_markers_name_tasks_of_the_kata_that_the_test_name_agrees_with(kata):
    for name, function in _task_markers(kata):
        assert kata.task(function), f"{name}: {kata.id} has no task {function!r}"
        assert stubs.functions_checked_by(kata, name) == [function], (
            f"{name} is marked {function!r}: its name must contain that function alone"
        )


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_every_kind_is_the_registrys_and_every_schedule_has_a_problem(kata):
    from xtc_katas.checks.kinds import KINDS, kind_of
    from xtc_katas.kata.problems import PROBLEMS

    for task in kata.tasks:
        assert task.kind in (*KINDS, ""), (
            f"{line_of(kata, task.function, 'kind')}: kind = {task.kind!r} is none of "
            f"{sorted(KINDS)} (xtc_katas/checks/kinds.py)"
        )
        if task.kind or task.caps:
            assert task.problem in PROBLEMS, f"{task.function}: name its problem"
        if kind_of(task).raced:
            assert task.caps, f"{task.function}: a schedule task races; give it a cap"


def _perf_tests(kata):
    """Names of the kata's tests marked `@pytest.mark.perf`."""
    found = []
    for path in kata.folder().glob("test_*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and any(
                ast.unparse(d) == "pytest.mark.perf" for d in node.decorator_list
            ):
                found.append(node.name)
    return found


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_no_speed_test_name_claims_a_gain_the_run_may_not_show(kata):
    # A speed test passes at 0.7x its reference, and where the previous step's reference
    # is as fast, without any gain over it (speed_rule.step_note says so): its name must
    # not promise more. "beats X" only with "where_it_pays", on a task that races X.
    for name in _perf_tests(kata):
        if "beats" not in name:
            continue
        assert name.endswith("where_it_pays"), f"{name}: say 'beats ... where_it_pays'"
        for function in stubs.functions_checked_by(kata, name):
            task = kata.task(function)
            assert task and task.previous, f"{name}: {function} races no previous step"


#: A manifest of one kata, each typo test below changes one line of it.
GOOD = """
[[kata]]
id = "01_demo"
title = "Demo"
module = "demo"

  [[kata.task]]
  function = "schedule_demo"
  kind = "schedule"
  shape = ["stride_one"]
  hints = ["h"]
  cap = { mlir = 1.2, tvm = 18 }
  problem = "tutorial"
  baseline = "naive"
"""


def test_the_demo_manifest_parses():
    (kata,) = parse(GOOD)
    assert kata.tasks[0].caps == {"mlir": 1.2, "tvm": 18}
    assert kata.tasks[0].shape == ("stride_one",)


@pytest.mark.parametrize(
    "line, typo, expected",
    [
        (
            "  cap = { mlir = 1.2, tvm = 18 }",
            "  cpa = { mlir = 1.2, tvm = 18 }",
            r"task 'schedule_demo' of 01_demo: Object contains unknown field `cpa`",
        ),
        (
            'module = "demo"',
            'module = "demo"\nmodul = "demo"',
            r"kata 01_demo: Object contains unknown field `modul`",
        ),
        (
            '  baseline = "naive"',
            '  baseline = "unfuzed"',
            r"baseline: Invalid enum value 'unfuzed'",
        ),
        (
            "  cap = { mlir = 1.2, tvm = 18 }",
            '  cap = { mlir = "1.2", tvm = 18 }',
            r"cap: Expected `int \| float`, got `str`",
        ),
        ('  hints = ["h"]', '  hints = "h"', r"hints: Expected `array`, got `str`"),
        ('  hints = ["h"]', "  hints = []", r"hints: Expected `array` of length >= 1"),
        (
            '  shape = ["stride_one"]',
            '  shape = "stride_one"',
            r"shape: Expected `array`, got `str`",
        ),
        (
            '  problem = "tutorial"',
            '  problem = "tutorial"\n  parallel = "yes"',
            r"parallel: Expected `bool`, got `str`",
        ),
    ],
    ids=[
        "task key",
        "kata key",
        "baseline",
        "cap value",
        "hints",
        "no hint",
        "shape",
        "parallel",
    ],
)
def test_a_typo_in_the_manifest_is_an_error_naming_its_line(line, typo, expected):
    assert line in GOOD
    text = GOOD.replace(line, typo)
    with pytest.raises(ManifestError, match=expected) as error:
        parse(text, ROOT / "katas" / "manifest.toml")
    # the message points at the line of the typo
    where = str(error.value).split(": ", 1)[0]
    number = int(where.rsplit(":", 1)[1])
    assert where.endswith(f"manifest.toml:{number}")
    assert text.splitlines()[number - 1].strip().split(" ")[0] == typo.split("\n")[-1].split()[0]


def test_the_manifest_loads_with_every_key_checked():
    assert katas() == parse((ROOT / "katas" / "manifest.toml").read_text())


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_shape_checks_named_in_the_manifest_exist(kata):
    from xtc_katas.checks.loop_nests import SHAPES

    for task in kata.tasks:
        unknown = [name for name in task.shape if name not in SHAPES]
        assert not unknown, (
            f"{line_of(kata, task.function, 'shape')}: {task.function}: no shape check "
            f"{unknown}; the checks are {sorted(SHAPES)} (xtc_katas/checks/loop_nests.py)"
        )


def _calls_assert_shape_without_mistakes(kata):
    """Names of the functions whose tests call `task.assert_shape()` with no argument."""
    found = []
    for path in kata.folder().glob("test_*.py"):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.FunctionDef):
                continue
            calls = [
                call
                for call in ast.walk(node)
                if isinstance(call, ast.Call)
                and ast.unparse(call.func) == "task.assert_shape"
                and not call.args
            ]
            if calls:
                found += stubs.functions_checked_by(kata, node.name)
    return found


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_a_test_that_asserts_the_manifests_shape_has_one_to_assert(kata):
    for function in _calls_assert_shape_without_mistakes(kata):
        assert kata.task(function).shape, (
            f"{line_of(kata, function)}: a test calls task.assert_shape() for {function}, "
            "which names no shape checks: add shape = [...] to its task"
        )
