"""The status a kata shows comes from its results against the current stub (progress.py)."""

from xtc_katas.kata import progress
from xtc_katas.kata.manifest import find
from xtc_katas.kata.progress import TestResult, kata_status

KATA = find(4)


def result(task: str, outcome: str = "passed", backend: str = "mlir") -> TestResult:
    return TestResult(KATA.id, (task,), backend, outcome, progress.module_hash(KATA))


def results(*items: TestResult) -> progress.Results:
    return {f"id{n}": r for n, r in enumerate(items)}


def test_a_partial_run_is_not_passing():
    # `pytest katas/04_scheduling -k split` on a changed stub once showed the kata
    # "passing", unlocking `solution` and moving `watch` on (AMD EPYC family 25).
    status = kata_status(KATA, results(result("schedule_split")))
    assert status.state == "partly run" and status.tasks_passed == 1


def test_every_task_passed_is_passing():
    status = kata_status(KATA, results(*(result(t.function) for t in KATA.tasks)))
    assert status.state == "passing" and status.tasks_passed == len(KATA.tasks)


def test_one_failure_is_failing_and_is_shown_first():
    items = [result(t.function) for t in KATA.tasks] + [result("schedule_split", "failed", "tvm")]
    status = kata_status(KATA, results(*items))
    assert status.state == "failing" and status.first_failure.tasks == ("schedule_split",)


def test_results_of_an_older_stub_do_not_count():
    stale = TestResult(KATA.id, ("schedule_split",), "mlir", "passed", "0" * 16)
    assert kata_status(KATA, results(stale)).state == "not run"


def test_the_best_figure_names_its_task_and_what_it_is_over():
    # Kata 09's "1.0x" was a fused/unfused ratio shown as a speedup, and the table's best
    # speedup and best % of peak came from two different tasks (issue 22).
    kata = find(9)
    fused = TestResult(
        kata.id,
        ("schedule_fused",),
        "tvm",
        "passed",
        progress.module_hash(kata),
        perf=[{"speedup": 0.98, "percent_of_peak": 30.0}],
    )
    best = kata_status(kata, {"a": fused}).best
    assert (best.task, best.over, best.speedup, best.percent_of_peak) == (
        "schedule_fused",
        "unfused",
        0.98,
        30.0,
    )
    from xtc_katas.cli.main import _best

    assert _best(best) == "schedule_fused (tvm): 0.98x its unfused self, 30% of peak"


def test_the_best_figure_is_over_what_its_race_recorded():
    # Kata 08's race is against numpy, kata 09's against the learner's own schedule
    # unfused: the table called them "x naive" where the race recorded no manifest
    # baseline of its own (issue 57).
    from xtc_katas.cli.main import _best

    for number, task, over, shown in (
        (8, "schedule_large", "numpy", "0.6x numpy"),
        (9, "schedule_fused", "your schedule unfused", "0.6x over your schedule unfused"),
    ):
        kata = find(number)
        figures = {"speedup": 0.6, "percent_of_peak": 30.0, "over": over}
        ran = TestResult(
            kata.id, (task,), "tvm", "passed", progress.module_hash(kata), perf=[figures]
        )
        best = kata_status(kata, {"a": ran}).best
        assert best.over == over and shown in _best(best), _best(best)
