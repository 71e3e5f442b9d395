"""The schedule checks catch, on MLIR, the mistakes MLIR accepts silently."""

import pytest

from xtc_katas.backends import KataBackend
from xtc_katas.problems import Matmul
from xtc_katas.schedule_checks import ScheduleMistake, check_schedule, schedule_mistakes

PROBLEM = Matmul(4, 36, 512)


@pytest.fixture(scope="module")
def graph():
    return PROBLEM.graph()


@pytest.fixture
def sch(graph):
    return KataBackend("mlir").Backend(graph).get_scheduler()


def test_a_good_register_tile_has_no_mistakes(sch):
    sch.strip_mine("i", {"i1": 4})
    sch.strip_mine("j", {"j1": 16})
    sch.interchange(["i", "j", "k", "i1", "j1"])
    sch.unroll({"i1": 4})
    sch.vectorize(["j1"])
    assert schedule_mistakes(sch) == []


def test_a_good_split_has_no_mistakes(sch):
    sch.split("j", {"j0": 0, "j1": 32})
    sch.interchange(["i", "k", "j0", "j1"])
    sch.strip_mine("j", {"jv": 16}, root="./j0")
    sch.interchange(["j", "jv"], root="./j0")
    sch.vectorize(["jv"], root="./j0")
    sch.interchange(["j"], root="./j1")
    assert schedule_mistakes(sch) == []


@pytest.mark.parametrize(
    "mistake, expected",
    [
        (lambda s: s.strip_mine("x", {"x1": 4}), "no such axis"),
        (lambda s: s.interchange(["i", "k"]), "j defined but never used"),
        (lambda s: (s.interchange(["i", "j", "k"]), s.vectorize(["j1"])), "not a loop"),
        (
            lambda s: (
                s.strip_mine("j", {"j1": 16}),
                s.interchange(["i", "k", "j", "j1"]),
                s.vectorize(["j"]),
            ),
            "only the innermost loop",
        ),
        (lambda s: (s.interchange(["k", "i", "j"]), s.parallelize(["k"])), "threads would race"),
        (
            lambda s: (
                s.strip_mine("k", {"k1": 8}),
                s.interchange(["i", "j", "k", "k1"]),
                s.parallelize(["k1"]),
            ),
            "reduction axis 'k'",
        ),
    ],
)
def test_mistakes_mlir_accepts_silently_are_named(sch, mistake, expected):
    mistake(sch)
    with pytest.raises(ScheduleMistake, match=expected) as info:
        check_schedule(sch, "04_scheduling", "schedule_vectorize")
    assert str(info.value).startswith("04_scheduling › schedule_vectorize(): ")
