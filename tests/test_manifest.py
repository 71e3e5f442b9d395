"""Lint: the manifest, the stubs, the solutions and the tests stay in step (as rustlings does)."""

import ast
import inspect

import pytest

from xtc_katas import ROOT
from xtc_katas.kata import loader, stubs
from xtc_katas.kata.manifest import ManifestError, katas, line_of, parse

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
    from xtc_katas.checks.learner_schedules import kind_of
    from xtc_katas.kata.manifest import KINDS
    from xtc_katas.kata.problems import PROBLEMS

    for task in kata.tasks:
        known = task.kind in (*KINDS, "") or task.kind_class  # the harness's, or the kata's
        assert known, f"{task.function}: unknown kind {task.kind!r}"
        if task.kind or task.caps:
            assert task.problem in PROBLEMS, f"{task.function}: name its problem"
        if kind_of(task).raced:
            assert task.caps, f"{task.function}: a schedule task races; give it a cap"


def test_every_kind_of_the_manifest_is_one_class_of_the_registry():
    from xtc_katas.checks.learner_schedules import KINDS as REGISTRY
    from xtc_katas.kata.manifest import KINDS

    assert sorted(REGISTRY) == sorted(KINDS)
    for name, kind in REGISTRY.items():
        assert kind.name == name
        assert kind.__doc__, f"{name}: say what the learner's function gives"


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
    from xtc_katas.checks import speed_rule

    rule = _words(speed_rule.RULE)
    assert rule in _words(speed_rule.__doc__)
    texts = [ROOT / "README.md", *sorted((ROOT / "katas").glob("*/README.md"))]
    for path in texts:
        text = _words(path.read_text())
        if "1.15" in text:  # states the previous-step part of the rule
            assert rule in text, f"{path.relative_to(ROOT)}: quote speed_rule.RULE"


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
    assert kata.tasks[0].caps == (("mlir", 1.2), ("tvm", 18))
    assert kata.tasks[0].shape == ("stride_one",)
    assert kata.tasks[0].kind_class == ""


#: The demo kata with a kind of its own, declared by the kata (tests/test_new_kata.py
#: adds such a kata and runs it).
OWN_KIND = GOOD.replace('module = "demo"', 'module = "demo"\nkinds = { sizes = "kind.SizesKind" }')


def test_a_kata_may_declare_a_kind_of_its_own():
    (kata,) = parse(OWN_KIND.replace('kind = "schedule"', 'kind = "sizes"'))
    assert kata.tasks[0].kind == "sizes"
    assert kata.tasks[0].kind_class == "katas/01_demo/kind.py:SizesKind"


@pytest.mark.parametrize(
    "kinds, expected",
    [
        ('{ schedule = "kind.SizesKind" }', r"kinds \['schedule'\] are the harness's own"),
        ('{ sizes = "kind" }', r'expected a table of "module.Class" per kind'),
        ('"kind.SizesKind"', r'expected a table of "module.Class" per kind'),
    ],
    ids=["shadows a kind", "no class", "not a table"],
)
def test_a_kata_declares_new_kinds_only_as_module_and_class(kinds, expected):
    text = GOOD.replace('module = "demo"', f'module = "demo"\nkinds = {kinds}')
    with pytest.raises(ManifestError, match=expected):
        parse(text, ROOT / "katas" / "manifest.toml")


def test_a_kind_neither_the_harness_nor_the_kata_declares_is_an_error():
    with pytest.raises(ManifestError, match=r"kind = 'size': expected one of the KINDS .* own"):
        parse(OWN_KIND.replace('kind = "schedule"', 'kind = "size"'))


@pytest.mark.parametrize(
    "line, typo, expected",
    [
        (
            "  cap = { mlir = 1.2, tvm = 18 }",
            "  cpa = { mlir = 1.2, tvm = 18 }",
            r"unknown key\(s\) \['cpa'\]",
        ),
        (
            'module = "demo"',
            'module = "demo"\nmodul = "demo"',
            r"kata 01_demo: unknown key\(s\) \['modul'\]",
        ),
        (
            '  kind = "schedule"',
            '  kind = "schedul"',
            r"kind = 'schedul': expected one of the KINDS",
        ),
        (
            '  baseline = "naive"',
            '  baseline = "unfuzed"',
            r"baseline = 'unfuzed': expected one of",
        ),
        (
            "  cap = { mlir = 1.2, tvm = 18 }",
            '  cap = { mlir = "1.2", tvm = 18 }',
            r"expected a table of numbers per backend",
        ),
        ('  hints = ["h"]', '  hints = "h"', r"hints = 'h': expected a non-empty list of strings"),
        ('  shape = ["stride_one"]', '  shape = "stride_one"', r"expected a list of shape checks"),
        (
            '  problem = "tutorial"',
            '  problem = "tutorial"\n  parallel = "yes"',
            r"expected true or false",
        ),
    ],
    ids=["task key", "kata key", "kind", "baseline", "cap value", "hints", "shape", "parallel"],
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


#: A lesson's table of caps: a header cell that says "cap", and which backends it quotes.
def lesson_cap_mistakes(kata, text, where="README.md"):
    """Caps quoted in a lesson's tables that differ from the manifest's, each with its
    line: a column whose header says "cap (MLIR / TVM)" holds "a / b"; one whose header
    says "TVM (cap)" holds "... (cap)". A row names its task, or its step's number (kata
    10's "1 blocking")."""
    import re

    mistakes = []
    header = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        column = next((n for n, h in enumerate(header) if "cap" in h.lower()), None)
        if column is None or column >= len(cells):
            continue
        label = cells[0].strip("`* ")
        step = re.match(r"(\d+)\b", label)
        task = kata.task(label) or (
            kata.tasks[int(step.group(1)) - 1]
            if step and 0 < int(step.group(1)) <= len(kata.tasks)
            else None
        )
        if task is None:
            mistakes.append(f"{where}:{number}: the row {label!r} names no task of {kata.id}")
            continue
        title = header[column].lower()
        backends = [b for b in ("mlir", "tvm") if b in title]
        cell = cells[column]
        if "(cap)" in title:
            found = re.search(r"\(([^)]*)\)\s*$", cell)
            cell = found.group(1) if found else ""
        values = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", cell)]
        caps = dict(task.caps)
        expected = [caps.get(b) for b in backends]
        if values != expected:
            mistakes.append(
                f"{where}:{number}: {task.function}'s cap is quoted as {cells[column]!r}; the "
                f"manifest ({line_of(kata, task.function, 'cap')}) has "
                + ", ".join(f"{b} = {c}" for b, c in zip(backends, expected, strict=True))
            )
    return mistakes


#: Caps quoted in a lesson's prose: "the caps 32× (MLIR) / 38× (TVM)", "the cap (TVM
#: 0.65×, MLIR 0.34×)", "the cap of 0.75" (the same on both backends).
NUMBER = r"(\d+(?:\.\d+)?)"
PROSE_CAPS = (
    (rf"\bcap\w*[^.]*?{NUMBER}×\s+\(MLIR\)\s*/\s*{NUMBER}×\s+\(TVM\)", ("mlir", "tvm")),
    (rf"\bcap\w*[^.]*?\(TVM\s+{NUMBER}×,\s+MLIR\s+{NUMBER}×\)", ("tvm", "mlir")),
    (rf"\bcap of {NUMBER}\b", ("mlir", "tvm")),
)


def lesson_prose_cap_mistakes(kata, text, where="README.md"):
    """Caps a lesson's sentences quote that are no task's of the kata, each with its line."""
    import re

    caps = [dict(task.caps) for task in kata.tasks if task.caps]
    mistakes = []
    for pattern, backends in PROSE_CAPS:
        for found in re.finditer(pattern, text):
            values = [float(v) for v in found.groups()]
            values += values * (len(backends) - len(values))  # "cap of X": both backends
            quoted = dict(zip(backends, values, strict=True))
            if not any(all(c.get(b) == v for b, v in quoted.items()) for c in caps):
                line = text.count("\n", 0, found.start()) + 1
                mistakes.append(
                    f"{where}:{line}: {' '.join(found.group(0).split())!r} quotes caps "
                    f"{quoted} that no task of {kata.id} has (katas/manifest.toml)"
                )
    return mistakes


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_caps_quoted_in_a_lesson_are_the_manifests(kata):
    path = kata.folder() / "README.md"
    text, where = path.read_text(), str(path.relative_to(ROOT))
    mistakes = lesson_cap_mistakes(kata, text, where) + lesson_prose_cap_mistakes(kata, text, where)
    assert not mistakes, "\n".join(mistakes)


@pytest.mark.parametrize(
    "number, quoted, typo",
    [
        (6, "the caps 32× (MLIR) / 38× (TVM)", "the caps 32× (MLIR) / 39× (TVM)"),
        (7, "capped at 29×", "capped at 28×"),
        (8, "(TVM\n  0.65×, MLIR 0.34×)", "(TVM\n  0.65×, MLIR 0.35×)"),
        (9, "the cap of 0.75", "the cap of 0.8"),
    ],
    ids=["06", "07", "08", "09"],
)
def test_a_cap_quoted_in_a_lessons_prose_that_differs_is_named(number, quoted, typo):
    kata = KATAS[number - 1]
    text = (kata.folder() / "README.md").read_text()
    assert quoted in text
    assert not lesson_prose_cap_mistakes(kata, text)
    (mistake,) = lesson_prose_cap_mistakes(kata, text.replace(quoted, typo, 1))
    line = text[: text.index(quoted)].count("\n") + 1
    assert mistake.startswith(f"README.md:{line}: ") and "no task of" in mistake


def test_a_lesson_cap_that_differs_from_the_manifest_is_named_with_its_line():
    kata = KATAS[3]
    text = (kata.folder() / "README.md").read_text()
    assert "| schedule_split | 15 / 17 |" in text
    lines = text.replace("| schedule_split | 15 / 17 |", "| schedule_split | 15 / 18 |")
    (mistake,) = lesson_cap_mistakes(kata, lines)
    number = 1 + text.splitlines().index(
        next(line for line in text.splitlines() if line.startswith("| schedule_split | 15"))
    )
    assert mistake.startswith(f"README.md:{number}: schedule_split's cap is quoted as '15 / 18'")
    assert "mlir = 15, tvm = 17" in mistake
    gemm = KATAS[9]
    text = (gemm.folder() / "README.md").read_text()
    assert "| 1.8 (1.8) |" in text
    assert lesson_cap_mistakes(gemm, text.replace("| 1.8 (1.8) |", "| 1.8 (1.9) |"))
