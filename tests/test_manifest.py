"""Lint: the manifest, the stubs, the solutions and the tests stay in step (as rustlings does)."""

import ast
import inspect

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import loader, stubs
from xtc_katas.kata.manifest import katas

KATAS = katas()
IDS = [k.id for k in KATAS]


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
    stub, solution = loader.load(kata, solution=False), loader.load(kata, solution=True)
    for task in kata.tasks:
        stub_fn, solution_fn = getattr(stub, task.function), getattr(solution, task.function)
        assert stubs.is_untouched_stub(stub_fn), f"the stub of {task.function} must only raise"
        assert not stubs.is_untouched_stub(solution_fn), f"solution of {task.function} is a stub"
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


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_every_function_is_tested_and_every_test_names_its_function(kata):
    names = _test_names(kata)
    for task in kata.tasks:
        assert any(task.function in n for n in names), f"no test's name contains {task.function}"
    for name in names:
        assert stubs.functions_checked_by(kata, name), f"{name} names no function of {kata.id}"


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_caps_name_both_backends_and_are_positive(kata):
    from xtc_katas.measure.backends import BACKENDS

    for task in kata.tasks:
        if not task.caps:
            continue
        assert sorted(dict(task.caps)) == sorted(BACKENDS), f"{task.function}: one per backend"
        assert all(value > 0 for _, value in task.caps), f"{task.function}: caps are > 0"


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
def test_every_kind_is_known_and_every_schedule_has_a_problem(kata):
    from xtc_katas.kata.manifest import KINDS, SCHEDULE_KINDS
    from xtc_katas.kata.problems import PROBLEMS

    for task in kata.tasks:
        assert task.kind in (*KINDS, ""), f"{task.function}: unknown kind {task.kind!r}"
        if task.kind or task.caps:
            assert task.problem in PROBLEMS, f"{task.function}: name its problem"
        if task.kind in SCHEDULE_KINDS:
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


def _words(text):
    return " ".join(text.replace("*", "").split())


def test_the_readme_the_lessons_and_the_code_state_one_bar_rule():
    # A learner read "cap 17, bar 18.3" while the README said the bar never exceeds the
    # cap (issue 22): every text that states the rule quotes speed_rule.RULE.
    from xtc_katas.measure import speed_rule

    rule = _words(speed_rule.RULE)
    assert rule in _words(speed_rule.__doc__)
    texts = [ROOT / "README.md", *sorted((ROOT / "katas").glob("*/README.md"))]
    for path in texts:
        text = _words(path.read_text())
        if "1.15" in text:  # states the previous-step part of the rule
            assert rule in text, f"{path.relative_to(ROOT)}: quote speed_rule.RULE"


def test_a_typo_in_a_task_key_is_an_error_not_a_silent_default():
    from xtc_katas.kata.manifest import _task

    with pytest.raises(ValueError, match=r"unknown key\(s\) \['cpa'\]"):
        _task("04_scheduling", {"function": "f", "hints": [], "cpa": {"mlir": 1}})
    assert _task("04_scheduling", {"function": "f", "hints": ["h"]}).hints == ("h",)
