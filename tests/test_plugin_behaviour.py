"""The kata plugin's collection rules, run through pytest's own `pytester`: a test file
in a temporary directory, the plugin loaded with -p, the outcomes read from the run."""

from __future__ import annotations

import pytest

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
