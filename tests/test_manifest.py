"""Lint: the manifest, the stubs, the solutions and the tests stay in step (as rustlings does)."""

import ast
import inspect
import re

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


# --- hints and stubs ask, never hand over the answer (issue 48) ---------------------------


class _Plain(ast.NodeTransformer):
    """d["r"] -> r, self.x -> x, 100.0 -> 100: a formula as a hint would write it."""

    def visit_Subscript(self, node):
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return ast.Name(node.slice.value)
        return self.generic_visit(node)

    def visit_Attribute(self, node):
        return ast.Name(node.attr)

    def visit_Constant(self, node):
        if isinstance(node.value, float) and node.value.is_integer():
            return ast.Constant(int(node.value))
        return node


def _operators(node) -> int:
    return sum(isinstance(n, ast.BinOp) for n in ast.walk(node))


def _squeezed(text: str) -> str:
    return "".join(text.replace("'", '"').split()).lower()


def _strong(value) -> bool:
    return isinstance(value, ast.List | ast.Tuple | ast.Dict | ast.Set | ast.BinOp)


def answers(source: str) -> tuple[dict[str, set[str]], set[str], list[list[str]]]:
    """What a solution's code hands over: for each function it calls, its arguments that
    are not a plain name ("name=value" for a keyword; "!" marks a container or a formula);
    its formulas (two operators or more); its loop orders (the loops an interchange lists,
    the keys of a spec's dict, three or more)."""
    tree = ast.parse(source)
    calls: dict[str, set[str]] = {}
    formulas, orders = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = (
                node.func.attr if isinstance(node.func, ast.Attribute) else ast.unparse(node.func)
            )
            calls.setdefault(name, set()).update(_arguments(node))
            order = node.args[0] if name == "interchange" and node.args else None
            if isinstance(order, ast.List) and len(order.elts) >= 3:
                orders.append([ast.literal_eval(e) for e in order.elts])
        elif isinstance(node, ast.BinOp) and _operators(node) >= 2:
            formulas.add(_squeezed(ast.unparse(_Plain().visit(ast.parse(ast.unparse(node))))))
        elif isinstance(node, ast.Dict) and len(node.keys) >= 3:
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if len(keys) == len(node.keys) and all(isinstance(v, ast.Dict) for v in node.values):
                orders.append(keys)
    return calls, formulas, orders


def _arguments(call: ast.Call) -> set[str]:
    """A call's arguments that are values, not placeholders (a name, `...`)."""
    found = set()
    for value in call.args:
        if not isinstance(value, ast.Name) and ast.unparse(value) != "...":
            found.add(("!" if _strong(value) else "") + _squeezed(ast.unparse(value)))
    for keyword in call.keywords:
        if not isinstance(keyword.value, ast.Name) and ast.unparse(keyword.value) != "...":
            found.add(f"!{keyword.arg}={_squeezed(ast.unparse(keyword.value))}")
    return found


CALL = re.compile(r"([A-Za-z_][\w.]*)\(((?:[^()]|\([^()]*\))*)\)")
CHAIN = re.compile(r"(\w+)\([^()]*\)\.(\w+)\(")


def handed_over(text: str, source: str) -> list[str]:
    """What of the solution `source` a hint or a stub's docstring writes out: a call of a
    function the solution calls with the solution's own arguments (a keyword's value, a
    container or a formula, or two values; a name or ... is a placeholder), a chain of two
    of its calls, a keyword with its number in one sentence, one of its formulas, or one of
    its loop orders in full."""
    calls, formulas, orders = answers(source)
    found = []
    for call in CALL.finditer(text):
        name = call.group(1).rsplit(".", 1)[-1]
        try:
            node = ast.parse(call.group(0), mode="eval").body
        except SyntaxError:
            continue
        same = _arguments(node) & calls.get(name, set())
        if any(v.startswith("!") for v in same) or len(same) >= 2:
            found.append(f"the call {call.group(0)!r}")
    for chain in CHAIN.finditer(text):  # module.get_evaluator().evaluate(): no argument
        if all(name in calls for name in chain.group(1, 2)):
            found.append(f"the call chain {chain.group(0)!r}")
    words = CALL.sub("", text)  # a call is judged above, by its function's arguments
    for value in {v for vs in calls.values() for v in vs if v.startswith("!")}:
        keyword, _, number = value[1:].partition("=")  # max_unroll ... (64 gives plenty)
        if number.isdigit() and re.search(rf"\b{keyword}\b[^.;]{{0,60}}\b{number}\b", words):
            found.append(f"the keyword {keyword}={number} in words")
    squeezed = _squeezed(text)
    found += [f"the formula {f!r}" for f in sorted(formulas) if f in squeezed]
    for order in orders:
        pattern = r"\W{1,6}".join(rf"\b{re.escape(n)}\b" for n in order)
        if re.search(pattern, text):
            found.append(f"the loop order {', '.join(order)}")
    return found


def test_a_hint_that_writes_out_the_solution_is_named():
    source = (
        'pad = (d["r"] - 1) // 2\nsch.unroll({"k1": 4})\nsch.interchange(["i", "j", "k", "k1"])\n'
    )
    assert handed_over("How many rows does a 3x3 filter need around the image?", source) == []
    assert handed_over("unroll takes a dict: {loop: factor}", source) == []
    assert handed_over("pad = (r - 1) // 2 rows", source) == ["the formula '(r-1)//2'"]
    assert handed_over('then sch.unroll({"k1": 4})', source) == [
        """the call 'sch.unroll({"k1": 4})'"""
    ]
    assert handed_over("the loops i, j, k, k1 in that order", source) == [
        "the loop order i, j, k, k1"
    ]
    source = "t = m.get_evaluator().evaluate()\ns = Strategy(graph, max_unroll=64, threads=1)\n"
    assert handed_over("m.get_evaluator().evaluate() returns times", source) == [
        "the call chain 'get_evaluator().evaluate('"
    ]
    assert handed_over("a small max_unroll leaves few samples (64 is plenty)", source) == [
        "the keyword max_unroll=64 in words"
    ]
    assert handed_over("how large must max_unroll be? Which keyword sets threads?", source) == []


def spelled_together(text: str, source: str) -> list[str]:
    """A class the solution builds with two keywords or more, named in `text` with every
    one of those keywords: a task's hints that, read together, spell the constructor call
    (kata 07's named Strategy_PPRPRPvr in one hint and vec_size, max_unroll and vreg_num
    in the next, issue 57), whatever values they leave out."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ast.unparse(node.func)
        keywords = [k.arg for k in node.keywords if k.arg]
        if not name[:1].isupper() or len(keywords) < 2:
            continue
        if all(re.search(rf"\b{re.escape(word)}\b", text) for word in (name, *keywords)):
            found.append(f"the class {name} with all its keywords ({', '.join(keywords)})")
    return found


def test_hints_that_spell_a_constructor_together_are_named():
    source = "s = Strategy_PPRPRPvr(graph, vec_size=lanes, max_unroll=64, vreg_num=registers)"
    old = (  # kata 07's hints 2 and 3 at 46a9953, abridged
        "The classes: Strategy_OO, Strategy_PPRPRPvr... the vr ones also fit the registers. "
        "Every strategy takes (graph, vec_size=..., max_unroll=..., threads=1): the vr "
        "filters also read vreg_num, l1_size and l2_size."
    )
    assert spelled_together(old, source) == [
        "the class Strategy_PPRPRPvr with all its keywords (vec_size, max_unroll, vreg_num)"
    ]
    assert spelled_together(old.replace("vreg_num, ", ""), source) == []


def _docstrings(path) -> str:
    tree = ast.parse(path.read_text())
    nodes = [tree, *(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))]
    return "\n".join(ast.get_docstring(n) or "" for n in nodes)


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_hints_and_stubs_ask_rather_than_hand_over_the_solution(kata):
    # Kata 11's hints gave `pad = (r - 1) // 2` and the O.pad2d call, kata 10's every
    # loop in order: a hint asks the question that leads there, or names the concept and
    # the lesson's section; `xtc-katas solution N` is where answers live.
    source = kata.solution_path().read_text()
    mistakes = [
        f"{line_of(kata, task.function, 'hints')}: a hint of {task.function} writes out {what}"
        for task in kata.tasks
        for hint in task.hints
        for what in handed_over(hint, source)
    ]
    mistakes += [
        f"{line_of(kata, task.function, 'hints')}: the hints of {task.function} together "
        f"write out {what}"
        for task in kata.tasks
        for what in spelled_together(" ".join(task.hints), source)
    ]
    mistakes += [
        f"{kata.stub_path().relative_to(ROOT)}: a docstring writes out {what}"
        for what in handed_over(_docstrings(kata.stub_path()), source)
    ]
    assert not mistakes, "\n".join(mistakes)


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_a_lessons_prose_asks_rather_than_hands_over_the_solution(kata):
    # Kata 04's lesson printed the vectorize answer's order (i, k, j, j1), kata 09's the
    # register tile's (i, j, k, i1, j1), kata 11's the "same" padding formula: the hints'
    # rule holds for the lesson's prose too. Its code blocks (API examples on other axes,
    # generated nests) are left out, and so is a chain of two calls (get_evaluator().
    # evaluate()): the lesson's primitives section teaches how XTC's calls chain.
    lesson = kata.stub_path().parent / "README.md"
    prose = re.sub(r"```.*?```", "", lesson.read_text(), flags=re.S)
    found = handed_over(prose, kata.solution_path().read_text())
    mistakes = [
        f"{lesson.relative_to(ROOT)}: writes out {what}"
        for what in found
        if not what.startswith("the call chain")
    ]
    assert not mistakes, "\n".join(mistakes)
