"""The registry of task kinds: every kind one entry, every dispatch on a kind a lookup
there (checks/kinds.py), never a comparison of kind names elsewhere."""

import re

import pytest

from xtc_katas import ROOT
from xtc_katas.checks.kinds import KINDS, NO_KIND, kind_of, tasks_where
from xtc_katas.checks.learner import Learner
from xtc_katas.checks.task_under_test import TaskUnderTest
from xtc_katas.kata.manifest import find, katas
from xtc_katas.measure.backends import KataBackend

#: What reads a task's kind by name: only the registry and the manifest may.
DISPATCH = re.compile(r"\.kind\s*(==|!=|in\b|not in\b)|tasks_of_kind\(|SCHEDULE_KINDS|SHOWN_KINDS")
ALLOWED = {"xtc_katas/checks/kinds.py"}


def test_no_kind_dispatch_outside_the_registry():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted([*(ROOT / "xtc_katas").rglob("*.py"), *(ROOT / "tools").rglob("*.py")])
        if str(path.relative_to(ROOT)) not in ALLOWED
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if DISPATCH.search(line)
    ]
    assert not found, "\n".join(found)


def test_every_task_has_its_kind_of_the_registry():
    for kata in katas():
        for task in kata.tasks:
            kind = kind_of(task)
            assert kind is (KINDS[task.kind] if task.kind else NO_KIND)


def test_the_commands_flags_pick_the_tasks_they_served_by_name():
    # What show, report, explore and calibration served before the registry, by kind name.
    shown = {t.function for k in katas() for t in tasks_where(k, "probe")}
    assert {"compile_baseline", "schedule_split", "split_spec", "candidate_specs"} <= shown
    assert {"make_strategy", "schedule_large", "conv_strategy"} <= shown
    assert not {"explore", "explore_strategy", "make_optimizer", "matmul_graph"} & shown
    raced = {t.function for k in katas() for t in tasks_where(k, "raced")}
    assert raced == {t.function for k in katas() for t in k.tasks if t.kind in ("schedule", "spec")}
    assert [t.function for k in katas() for t in tasks_where(k, "numpy_race")] == ["schedule_large"]
    explored = {t.function: kind_of(t).explored for k in katas() for t in k.tasks}
    assert explored["explore"] == explored["explore_strategy"] == "search"
    assert explored["make_optimizer"] == "optimizer"


def test_a_task_whose_kind_builds_nothing_says_so(tmp_path):
    kata = find(6)
    learner = Learner.wrapping(kata, object())
    task = TaskUnderTest(kata, kata.task("explore"), learner, KataBackend("mlir"), None)
    with pytest.raises(LookupError, match=r"06_explore.explore is of kind 'search'"):
        task.schedules()


def test_a_spec_writer_is_told_in_spec_keys_not_scheduler_calls():
    # An outside learner's fused_spec with "i#4": {} was told to call unroll({'i0': 4}),
    # a loop name and a call its spec never has (issue 20): it is told its key, and the
    # annotation that unrolls.
    from types import SimpleNamespace

    nest = SimpleNamespace(root_node=SimpleNamespace(tiles={"i": {"i0": 4}, "j": {"j0": 16}}))
    told = "the row tile 'i0' is not unrolled: unroll it by its full size, so that"
    for kind in ("spec", "candidates"):  # kata 06's candidates are specs too
        (spec,) = KINDS[kind].in_own_terms([told], nest)
        assert spec == (
            'the row tile \'i0\' (your "i#4") is not unrolled: unroll it, "i#4": '
            '{"unroll": True}, so that'
        )
    assert KINDS["schedule"].in_own_terms([told], nest) == [told]


def test_a_strategy_class_returned_uninstantiated_is_not_told_the_keywords():
    # Teacher's report on a678371: the message printed "Strategy_X(graph, vec_size=...,
    # max_unroll=..., threads=1)", the keyword kata 11's hint 1 asks for.
    from types import SimpleNamespace

    from xtc.search.strategies import Strategy_PPRPRPvr

    from xtc_katas.checks.kinds import Asked, strategy_probe
    from xtc_katas.checks.schedule import ScheduleMistake
    from xtc_katas.kata.problems import STRATEGY

    module = SimpleNamespace(conv_strategy=lambda graph: Strategy_PPRPRPvr)
    asked = Asked("conv_strategy", "11_conv › conv_strategy", KataBackend("mlir"), STRATEGY)
    with pytest.raises(ScheduleMistake) as raised:
        strategy_probe(module, asked)
    message = str(raised.value)
    assert "returned the class Strategy_PPRPRPvr itself" in message, message
    assert "kata 07's 'The idea'" in message, message
    assert "threads=" not in message and "vec_size=" not in message, message
