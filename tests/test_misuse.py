"""The misuse matrix: each common mistake gets a message that names the problem and the fix.

The mistakes come from the field notes (what XTC 0.3.2 accepts silently, rejects, or
miscompiles) and from what learners of katas 02-07 write. Each case feeds the mistake
through the same harness function the kata tests use, and checks the message a learner
would read.
"""

import pytest

from tools.copy_runs import edit_stub, run_pytest
from xtc_katas.checks import search as search_checks
from xtc_katas.checks.schedule import schedule_spec
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.grade.repo_copy import copy_repository
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import SPLIT, TUTORIAL
from xtc_katas.measure.backends import KataBackend

KATA_04 = find(4)


class Learner:
    """A learner's module with one schedule function."""

    def __init__(self, body):
        self.schedule_vectorize = body


def steps(*calls):
    """A learner's schedule function that makes these primitive calls and returns None."""

    def schedule(sch):
        for name, *args in calls:
            getattr(sch, name)(*args)

    return schedule


def returns_the_scheduler(sch):
    sch.interchange(["i", "k", "j"])
    return sch


SCHEDULE_MISTAKES = {
    "unknown axis name": (
        steps(("strip_mine", "x", {"x1": 16}), ("interchange", ["i", "k", "j"])),
        ["'x'", "the axes are i, j, k"],
    ),
    "unknown loop in the interchange": (
        steps(("interchange", ["i", "k", "jj"])),
        ["'jj', which is not a loop", "j defined but never used"],
    ),
    "interchange missing an axis": (
        steps(("interchange", ["i", "k"])),
        ["j defined but never used", "every axis must appear in the interchange"],
    ),
    "vectorizing a loop that is not innermost": (
        steps(
            ("strip_mine", "j", {"j1": 16}),
            ("interchange", ["i", "k", "j", "j1"]),
            ("vectorize", ["j"]),
        ),
        ["only the innermost loop, 'j1', can be vectorized", "put the vector tile last"],
    ),
    "parallelizing the reduction": (
        steps(("interchange", ["k", "i", "j"]), ("parallelize", ["k"])),
        ["reduction axis 'k'", "threads would race", "Parallelize a loop over i or j instead"],
    ),
    "a split without segment interchanges": (
        steps(("split", "j", {"j0": 0, "j1": 32})),
        ["split segment 'j0' has no interchange of its own", 'root="./j0"'],
    ),
    "returning the scheduler instead of mutating it": (
        returns_the_scheduler,
        ["returned a", "return None", "compiles `sch` itself"],
    ),
}


@pytest.mark.parametrize("mistake", list(SCHEDULE_MISTAKES))
def test_schedule_mistakes_name_the_loop_and_the_fix(mistake, backend):
    body, expected = SCHEDULE_MISTAKES[mistake]
    problem = SPLIT if "split" in mistake else TUTORIAL
    with pytest.raises(KataFailure) as info:
        TaskUnderTest.of_module(
            KATA_04, "schedule_vectorize", Learner(body), backend, problem=problem
        ).scheduled()
    message = str(info.value)
    assert message.startswith("04_scheduling › schedule_vectorize"), message
    # XTC's own words, beside the harness's, are the original error (pytest -v shows it)
    told = f"{message}\n{info.value.__cause__ or ''}"
    for fragment in expected:
        assert fragment in told, f"{fragment!r} missing from: {told}"


class LargeLearner:
    """A kata 08 learner whose schedule_large returns the scheduler it was given."""

    @staticmethod
    def schedule_large(sch, threads):
        sch.interchange(["i", "k", "j"])
        return sch


def test_a_schedule_large_that_returns_the_scheduler_is_named(backend):
    with pytest.raises(KataFailure) as info:
        TaskUnderTest.of_module(
            find(8), "schedule_large", LargeLearner, backend, problem=TUTORIAL, threads=1
        ).scheduled()
    message = str(info.value)
    assert message.startswith("08_large_matmul › schedule_large(sch, threads) returned a")
    assert "return None" in message


SPEC_MISTAKES = {
    "an axis missing": ({"i": {}, "j": {}}, "k"),
    "a tile before its axis": ({"i": {}, "j#16": {}, "j": {}, "k": {}}, "j#16"),
    "segments that do not cover the axis": (
        {"i": {}, "k": {}, "j[0:16]": {"j#16": {"vectorize": True}}},
        "j",
    ),
    "an axis repeated inside its segment": (
        {"i": {}, "k": {}, "j[0:32]": {"j": {}, "j#16": {"vectorize": True}}, "j[32:]": {}},
        "j",
    ),
    "an unknown axis": ({"i": {}, "x": {}, "j": {}, "k": {}}, "x"),
}


@pytest.mark.parametrize("mistake", list(SPEC_MISTAKES))
def test_spec_mistakes_show_xtc_message_the_spec_and_the_syntax(mistake):
    spec, key = SPEC_MISTAKES[mistake]
    problem = SPLIT if "segment" in mistake else TUTORIAL
    with pytest.raises(KataFailure) as info:
        schedule_spec("05_descript", spec, "split_spec()", KataBackend("mlir"), problem)
    message = str(info.value)
    assert message.startswith("05_descript › split_spec():"), message
    assert repr(spec) in message or "the schedule has mistakes" in message, message
    assert key in message, f"the key at fault, {key!r}, is not named: {message}"


def run_search(items):
    counter = search_checks.CompileCounter(object)
    return search_checks.take_all(iter(items), counter, "06_explore › explore()")


@pytest.mark.parametrize(
    "items, expected",
    [
        ([(0, 2, "a", 1.0)], "yielded 1 items for 2 specs"),
        ([(0, 2, "a", 1.0), (1, 2, "b")], "yield a 4-tuple (index, total, spec, percent)"),
        ([(1, 2, "a", 1.0), (0, 2, "b", 1.0)], "count 0, 1, 2, ... in order"),
        ([(0, 2, "a", 1.0), (1, 3, "b", 1.0)], "every item carries 2"),
        ([(0, 2, "b", 1.0), (1, 2, "a", 1.0)], "as given, in the order given"),
        ([(0, 2, "a", "50%"), (1, 2, "b", 1.0)], "a float >= 0"),
    ],
    ids=["too few", "malformed", "order", "total", "names", "percent"],
)
def test_a_malformed_search_is_told_what_its_items_must_be(items, expected):
    run = run_search(items)
    mistakes = search_checks.contract_mistakes(run, ["a", "b"], "spec")
    assert any(expected in m for m in mistakes), mistakes


def test_a_search_that_raises_names_the_fix():
    def search():
        yield (0, 2, "a", 1.0)
        raise RuntimeError("the compiler failed on spec b")

    counter = search_checks.CompileCounter(object)
    with pytest.raises(search_checks.SearchMistake) as info:
        search_checks.take_all(search(), counter, "06_explore › explore()")
    message = str(info.value)
    assert "06_explore › explore()" in message and "the compiler failed on spec b" in message
    assert "yield 0.0" in message and "go on" in message


def test_a_list_instead_of_a_generator_is_named():
    counter = search_checks.CompileCounter(object)
    with pytest.raises(search_checks.SearchMistake, match="not a generator: use `yield`"):
        search_checks.take_all([(0, 1, "a", 1.0)], counter, "06_explore › explore()")


@pytest.mark.slow
def test_graph_inputs_created_inside_the_graph_block_are_named(tmp_path):
    repo = copy_repository(tmp_path)
    edit_stub(
        repo,
        2,
        '    """A graph named "matmul" computing C = A @ B.',
        "    with O.graph(name='matmul') as gb:\n"
        "        a = O.tensor((I, K), dtype, name='A')  # the mistake: inside the block\n"
        "        b = O.tensor((K, J), dtype, name='B')\n"
        "        O.matmul(a, b, name='C')\n"
        "    return gb.graph\n",
    )
    code, out = run_pytest(repo, "katas/02_graph", "-k", "matmul_graph_structure")
    assert code == 1
    assert "create the input tensors BEFORE the `with O.graph(...)` block" in out, out
