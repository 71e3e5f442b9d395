"""The kata plugin's collection rules, run through pytest's own `pytester`: a test file
in a temporary directory, the plugin loaded with -p, the outcomes read from the run."""

from __future__ import annotations

import pytest

from xtc_katas.kata.loader import SOLUTIONS_ENV

pytest_plugins = ["pytester"]
#: Each run is a pytest in a subprocess (the plugin sets process-wide state): seconds each.
pytestmark = pytest.mark.slow

TESTS = """
import pytest

@pytest.mark.perf
def test_races_kernels():
    pass

def test_times_nothing():
    pass

def test_runs_on_each_backend(backend):
    assert backend.name in ("mlir", "tvm")
"""


@pytest.fixture
def run(pytester: pytest.Pytester):
    pytester.makeini("[pytest]\nmarkers =\n    perf: times kernels side by side\n")
    pytester.makepyfile(test_rules=TESTS)
    return lambda *args: pytester.runpytest_subprocess("-p", "xtc_katas.plugin", *args)


def test_a_test_asking_for_a_backend_runs_once_per_backend(run):
    run().assert_outcomes(passed=4)
    chosen = run("--backend", "tvm", "-v")
    chosen.assert_outcomes(passed=3)
    chosen.stdout.fnmatch_lines(["*test_runs_on_each_backend?tvm? PASSED*"])


def test_perf_tests_are_left_out_under_pytest_xdist(run):
    # Beside another worker, side-by-side timings would measure the neighbour.
    parallel = run("-n", "2")
    parallel.assert_outcomes(passed=3)  # xdist's workers deselect: no count in the summary
    parallel.stdout.fnmatch_lines(["*perf tests do not run under pytest -n*"])
    run("-m", "perf").assert_outcomes(passed=1, deselected=3)


def test_a_learners_run_prints_no_header_of_pytests_plugins(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
):
    """Issue 50: pytest-timeout's and pytest-benchmark's lines are the instructor's: they
    show under -v, --solutions and in CI (CI=true), not in a learner's run."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv(SOLUTIONS_ENV, raising=False)  # set by tox's harness run
    pytester.makeini("[pytest]\ntimeout = 300\n")
    pytester.makepyfile(test_quiet="def test_nothing():\n    pass\n")
    args = ("-p", "xtc_katas.plugin")  # pytest-timeout: autoloaded here

    def header(*more: str) -> str:
        result = pytester.runpytest_subprocess(*args, *more)
        result.assert_outcomes(passed=1)
        return result.stdout.str()

    assert "timeout: 300" not in header() and "platform " not in header()
    assert "timeout: 300" in header("-v") and "timeout: 300" in header("--solutions")
    monkeypatch.setenv("CI", "true")
    assert "timeout: 300" in header()


class Reporter:
    """What summary.speed_lines reads and writes of pytest's terminal reporter."""

    def __init__(self, passed: list) -> None:
        self.stats, self.lines = {"passed": passed}, []

    def write_sep(self, sep: str, title: str, **markup) -> None:
        self.lines.append(title)

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def passed(tasks: tuple, backend: str, **figures) -> pytest.TestReport:
    bound = {"kata": "04_scheduling", "tasks": tasks, "backend": backend}
    return pytest.TestReport(
        f"k.py::test_x[{backend}]",
        ("k.py", 1, "x"),
        {},
        "passed",
        None,
        "call",
        [],
        1.0,
        user_properties=[("xtc-katas-bound", bound), ("perf", figures)],
    )


def test_a_learners_speed_summary_is_a_short_line_per_race_and_none_for_a_cost_model():
    """Issue 50: yours, the reference, the bar; the step that did not pay only where the
    verdict rests on it (yours below 1.15x the previous step), with this run's figures;
    kata 12's race against random search (a cost model, no bar) under no speed header."""
    from xtc_katas.plugin.summary import speed_lines

    step = "this step did not pay in this run: ...; TVM's LLVM (Intel Xeon family 6 model 207)"
    race = {"speedup": 27.7, "reference_speedup": 27.7, "bar": 19.4, "percent_of_peak": 25.4}
    reporter = Reporter(
        [
            passed(("schedule_vectorize",), "tvm", **race, previous_speedup=27.6, step=step),
            passed(("schedule_parallel",), "tvm", **race, previous_speedup=20.0, step=step),
        ]
    )
    speed_lines(reporter)
    assert reporter.lines[2:] == [
        "schedule_parallel [tvm]: yours 27.7x, reference 27.7x, bar 19.4x",
        "schedule_vectorize [tvm]: yours 27.7x, reference 27.7x, bar 19.4x\n    the step did "
        "not pay in this run (its reference 27.7x, the previous step's 27.6x): the bar "
        "follows the reference",
    ]
    cost_model = Reporter([passed(("make_optimizer",), "", median_best=1.2, wins="50/60")])
    speed_lines(cost_model)
    assert cost_model.lines == [
        "figures of this run",
        "make_optimizer: median_best 1.2, wins 50/60",
    ]


def test_a_learners_speed_line_says_when_its_race_was_noisy():
    """Issue 59: a parallel step read "did not pay" (its reference 19.6x, the previous
    step's 144x) on a busy machine, and nothing said the machine was busy."""
    from xtc_katas.plugin.summary import speed_lines

    noisy = "this run was noisy: over its 11 rounds the reference read 19.6-43x (load ...)"
    race = {"speedup": 19.6, "reference_speedup": 19.6, "bar": 13.7}
    reporter = Reporter([passed(("schedule_parallel",), "mlir", **race, noisy=noisy)])
    speed_lines(reporter)
    assert reporter.lines[2:] == [
        f"schedule_parallel [mlir]: yours 19.6x, reference 19.6x, bar 13.7x\n    {noisy}"
    ]


def failed(test: str, task: str, said: str) -> pytest.TestReport:
    bound = {"kata": "01_peak", "tasks": (task,), "backend": ""}
    properties = [("xtc-katas-bound", bound), ("xtc-katas-said", said)]
    return pytest.TestReport(
        f"k.py::{test}",
        ("k.py", 1, test),
        {},
        "failed",
        said,
        "call",
        [],
        1.0,
        user_properties=properties,
    )


def test_a_failing_tasks_block_folds_one_cause_and_keeps_each_tasks_own():
    """Issue 50: kata 01's percent_of_peak with cores inverted failed two tests with one
    assertion, told twice ("for another cause") because hypothesis's notes, with each
    test's name and the harness's objects, were in the words compared; and pytest's "DID
    NOT RAISE", which names no function, folded measure_peak's failure into
    matmul_fmas's block ("fails for the same cause as 01_peak › matmul_fmas()")."""
    from xtc_katas.kata.failures import describe
    from xtc_katas.kata.manifest import find
    from xtc_katas.plugin.summary import tell_failing_tasks

    assertion = AssertionError("assert 0.0002 == 5e-05 ± 1.0e-12")
    assertion.add_note("Falsifying example: test_x(learner_module=<Learner at 0x7f12>)")
    told = describe(find(1), assertion, None)
    assert told.said == "assert 0.0002 == 5e-05 ± 1.0e-12" and told.keep_traceback
    raised = "Failed: DID NOT RAISE <class 'ValueError'>"
    reporter = Reporter([])
    tell_failing_tasks(
        reporter,
        [
            failed("test_rate", "percent_of_peak", told.said + " <object at 0x7f12>"),
            failed("test_halves", "percent_of_peak", told.said + " <object at 0x7a03>"),
            failed("test_dims", "matmul_fmas", raised),
            failed("test_dtype", "measure_peak", raised),
        ],
    )
    out = "\n".join(reporter.lines)
    assert out.count("assert 0.0002") == 1, out
    assert "  1 more test of this task fails for the same cause" in reporter.lines, out
    assert out.count(raised) == 2 and "same cause as" not in out, out


def test_a_speed_summary_says_what_each_figure_is_over():
    """Issue 57: the header called kata 08's figures (over numpy) and kata 09's (over the
    learner's own schedule unfused) "x naive"."""
    from xtc_katas.plugin.summary import speed_lines

    race = {"speedup": 0.6, "reference_speedup": 0.7, "bar": 0.5}
    reporter = Reporter(
        [
            passed(("schedule_large",), "tvm", **race, over="numpy"),
            passed(("schedule_fused",), "tvm", **race, over="your schedule unfused"),
        ]
    )
    speed_lines(reporter)
    assert "x naive" not in reporter.lines[0], reporter.lines[0]
    assert reporter.lines[2:] == [
        "schedule_fused [tvm]: yours 0.6x, reference 0.7x, bar 0.5x "
        "(each over your schedule unfused)",
        "schedule_large [tvm]: yours 0.6x, reference 0.7x, bar 0.5x (each over numpy)",
    ]


def test_a_speed_summary_has_no_figure_for_a_task_that_failed_on_that_backend():
    """Issue 57: kata 09 on MLIR printed 1.16x for a kernel whose numerics failed (75% of
    its outputs NaN): a race's line needs every test of its task on its backend passed."""
    from xtc_katas.plugin.summary import speed_lines

    race = {"speedup": 1.16, "reference_speedup": 0.97, "bar": 0.75}
    wrong = passed(("schedule_vectorize",), "mlir", **race)
    numerics = pytest.TestReport(
        "k.py::test_computes[mlir]",
        ("k.py", 1, "x"),
        {},
        "failed",
        "75% NaN",
        "call",
        [],
        1.0,
        user_properties=[("xtc-katas-bound", dict(wrong.user_properties)["xtc-katas-bound"])],
    )
    reporter = Reporter([wrong, passed(("schedule_vectorize",), "tvm", **race)])
    reporter.stats["failed"] = [numerics]
    speed_lines(reporter)
    assert reporter.lines[2:] == [
        "schedule_vectorize [tvm]: yours 1.16x, reference 0.97x, bar 0.75x"
    ]


def test_one_test_failing_on_both_backends_with_one_first_line_is_one_cause():
    """Issue 57: "and test_...[tvm], for another cause:" told the same cause again when
    only a backend's note after the first line differed."""
    from xtc_katas.plugin.summary import tell_failing_tasks

    first = "01_peak › percent_of_peak(): 0.5x, below the bar of 0.7x"
    mlir = failed("test_speed[mlir]", "percent_of_peak", first)
    tvm = failed("test_speed[tvm]", "percent_of_peak", first + "\n  note: the step did not pay")
    for report, backend in ((mlir, "mlir"), (tvm, "tvm")):
        dict(report.user_properties)["xtc-katas-bound"]["backend"] = backend
    reporter = Reporter([])
    tell_failing_tasks(reporter, [mlir, tvm])
    out = "\n".join(reporter.lines)
    assert "for another cause" not in out and out.count(first) == 1, out
