"""The fifth outside red team's attacks (issue 55, item 6, round 5, on main at 63309f0)
that landed, each a planted submission graded through the real LocalCluster in
bubblewrap, as `xtc-katas grade` runs it (MLIR), asserting the safe outcome: each FAILS
on 63309f0 (confined, as root, on a 2-vCPU AMD EPYC family 25 model 1 shared with a CI
run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import planted
from xtc_katas import ROOT
from xtc_katas.kata.manifest import find

PEAK = find(1)
OPTIMIZER = find(12)
COMPILING = find(3)


#: Kata 01's test_measure_peak_returns_the_best_reading_of_xtcs_benchmark runs its probe
#: `scripted_benchmark` in the learner's process: it scripts XTC's benchmark there, calls
#: measure_peak and returns (what it returned, the readings it took), and the harness
#: judges that pair. Both are the learner's process's claims: this measure_peak takes ONE
#: reading (the mistake the test is there to catch; without the three forging lines the
#: kata is graded "failed", measure_peak "failed": "called evaluate_flops once"), and
#: rewrites the probe's list of readings through its caller's frame. On main at 63309f0
#: (MLIR, confined, as root) kata 01 was graded "passed", 3/3 tasks, every test "pass".
ONE_READING = '''
"""Kata 01: measure_peak takes one reading and forges the probe's record of its calls."""

import sys as _sys


def matmul_fmas(I: int, J: int, K: int) -> int:  # noqa: E741
    if min(I, J, K) <= 0:
        raise ValueError("dimensions must be positive")
    return I * J * K


def percent_of_peak(fmas: int, seconds: float, peak_fmas_per_s: float, cores: int = 1) -> float:
    if seconds <= 0 or peak_fmas_per_s <= 0 or cores <= 0:
        raise ValueError("seconds, the peak and cores must be positive")
    return 100.0 * fmas / seconds / (peak_fmas_per_s * cores)


def measure_peak(dtype: str = "float32") -> float:
    from xtc.runtimes.host import HostRuntime

    if dtype != "float32":
        raise ValueError(f"XTC cannot measure {dtype}")
    reading = HostRuntime.get().evaluate_flops(dtype)  # one reading: noise decides it
    probe = _sys._getframe(1).f_locals
    if isinstance(probe.get("taken"), list) and isinstance(probe.get("readings"), list):
        probe["taken"][:] = probe["readings"]  # the harness's record of the calls, rewritten
        return max(probe["readings"])
    return float(reading)
'''


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_measure_peak_that_rewrites_the_probes_record_of_its_readings_does_not_pass(
    tmp_path: Path,
) -> None:
    doc = planted.graded_alone(tmp_path, PEAK, "onereading01", ONE_READING)
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["tasks"]["measure_peak"] == "failed", doc["katas"]
    assert tests["test_measure_peak_returns_the_best_reading_of_xtcs_benchmark"] != "pass", tests


#: Kata 12's task `search` is judged by two tests, both on its probe `searched`, which
#: runs in the learner's process: it hands search() a counting `evaluate` and a
#: `Recorder` of the optimizer, and returns what search() returned, the samples evaluated
#: and what the Recorder saw. This search() takes whole batches past the budget, never
#: calls observe() nor finished(); then it cuts the counting list (reached through
#: evaluate's closure) to the budget and writes the Recorder's fields as a right search
#: leaves them. On main at 63309f0 (MLIR, confined, as root) `search` was graded "passed",
#: its six tests "pass" (make_optimizer, the stub's, failed); without the forging lines
#: `search` is graded "failed".
NEVER_OBSERVED = '''

def search(
    optimizer: Optimizer, evaluate: Callable[[Sample], float], budget: int
) -> list[tuple[Sample, float]]:
    """Whole batches until the budget is passed: never observed, never finished."""
    results = []
    while len(results) < budget:
        for x in optimizer.suggest():
            results.append((list(x), evaluate(x)))
    # What the harness's probe reads of the run, made to say what a right search does.
    (calls,) = [c.cell_contents for c in evaluate.__closure__ if type(c.cell_contents) is list]
    del calls[budget:]
    results = results[:budget]
    seen = [s for s, _ in results]
    optimizer.observed = [
        (seen[n : n + 4], [v for _, v in results[n : n + 4]]) for n in range(0, len(seen), 4)
    ]
    optimizer.unobserved_at_suggest = [0] * (len(optimizer.suggested) - 1)
    optimizer.finished_calls = 1
    return results
'''


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_search_that_rewrites_the_probes_recorder_does_not_pass(tmp_path: Path) -> None:
    stub = OPTIMIZER.stub_path(ROOT).read_text()
    source = stub[: stub.index("def search(")] + NEVER_OBSERVED
    doc = planted.graded_alone(tmp_path, OPTIMIZER, "neverobserved12", source)
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["tasks"]["search"] == "failed", doc["katas"]
    assert tests["test_search_observes_each_batch_before_the_next_suggest"] != "pass", tests


#: Each call of a learner's function is stopped after 30 s, and one stopped is not called
#: again; nothing bounds how many calls just under that limit a test makes. This
#: matmul_fmas is right and sleeps 25 s per call (no CPU spent): kata 01's hypothesis
#: test calls it for each of its examples (100 by default), 40 minutes, so the kata's run
#: holds the node to its timeout (20 minutes by default, in every kata whose tests call
#: the learner's functions in a hypothesis loop: 01, 02, ...), as round 4's stopped
#: harness and endless compile did. On main at 63309f0 (MLIR, confined, as root, the
#: kata's timeout set to 100 s) kata 01 was "timed out" in
#: test_matmul_fmas_counts_one_per_ijk_triple.
SLOW_CALLS = '''
"""Kata 01: matmul_fmas is right, and takes 25 s per call."""

import time as _time


def matmul_fmas(I: int, J: int, K: int) -> int:  # noqa: E741
    _time.sleep(25)
    if min(I, J, K) <= 0:
        raise ValueError("dimensions must be positive")
    return I * J * K
'''


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_calls_just_under_the_call_limit_do_not_hold_the_kata_to_its_timeout(
    tmp_path: Path,
) -> None:
    source = PEAK.stub_path(ROOT).read_text() + SLOW_CALLS  # the last matmul_fmas is the one
    doc = planted.graded_alone(tmp_path, PEAK, "slowcalls01", source, timeout=100)
    print(doc["katas"])
    assert doc["katas"][0]["verdict"] != "timed out", doc["katas"]
