"""The third outside red team's attacks that still land (issue 55, item 6, round 3, on main
at 422a1e7), each a planted submission graded through the real LocalCluster in bubblewrap,
as `xtc-katas grade` runs it (MLIR), asserting the SAFE outcome: each fails while its door
is open (on 422a1e7: kata 03's in 33 s with kata 06's, kata 07's in 51 s, on a 2-vCPU AMD
EPYC shared with other work). Two of the round's attacks (a forged compile record, a
figure of millions of nested lists) moved to tests/test_grade_redteam_outside3.py when
their doors closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

COMPILE = find(3)
EXPLORE = find(6)
STRATEGIES = find(7)

#: kata 03's generated_code compiles nothing either: canned text holding each backend's
#: markers for each stage (the test reads only the text the learner's process returns).
#: On main at 422a1e7 its three tests passed.
CANNED_CODE = r"""
def generated_code(graph: XTCGraph, Backend: Any, dump_file: str, what: str) -> str:
    '''Compiles nothing: canned text holding each backend's markers.'''
    canned = {
        "source_ir": "linalg.matmul T.prim_func",
        "transformed_ir": "scf.for\nfor i in range(512):",
        "assembly": "vfmadd231ps %ymm0, %ymm1, %ymm2\nvmulps %ymm0, %ymm1, %ymm2\n  ret\n",
    }
    if what not in canned:
        raise ValueError(what)
    return canned[what]
"""

#: kata 06's explore never compiles a spec: it applies each to a scratch scheduler (a
#: broken one raises, and scores 0.0), then compiles and times XTC's default schedule in
#: its place. The harness compiles and times what it is asked (checks/compiles.py), and
#: judges each figure by the times of the module compiled for that item, never whether
#: that module is the candidate's schedule: every explore test passed on main at 422a1e7.
NAIVE_EXPLORE = """
def explore(
    graph: Any, Backend: Any, specs: list[tuple[str, dict]], peak_fmas_per_s: float
) -> Iterator[tuple[int, int, str, float]]:
    '''Never compiles a spec: each spec is only tried on a scratch scheduler (so a broken
    one scores 0.0), and the naive default schedule is compiled and timed in its place.'''
    total = len(specs)
    fmas = graph.ops_count()
    with tempfile.TemporaryDirectory(prefix="xtc-explore-") as scratch:
        for index, (name, spec) in enumerate(specs):
            try:
                descript_scheduler(
                    scheduler=Backend(graph).get_scheduler(),
                    node_name="C",
                    abstract_dims=["i", "j", "k"],
                    spec=spec,
                )
                backend = Backend(graph)
                naive = backend.get_scheduler().schedule()
                compiler = backend.get_compiler(dump_file=f"{scratch}/c{index}", shared_lib=True)
                module = compiler.compile(naive)
                times, code, message = module.get_evaluator(repeat=5, min_repeat_ms=20).evaluate()
                if code != 0 or not times:
                    raise RuntimeError(message)
                percent = 100.0 * fmas / min(times) / peak_fmas_per_s
            except Exception:
                percent = 0.0
            yield index, total, name, percent
"""


def _graded(tmp_path: Path, name: str, kata, source: str) -> dict:
    sub = tmp_path / "subs" / name
    planted.write(sub, {kata.id: source})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [kata], backend="mlir")
    assert not outcome.grader_errors, outcome
    return json.loads((out / name / "grading.json").read_text())


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(900)
def test_a_generated_code_that_returns_canned_text_does_not_pass(tmp_path: Path) -> None:
    source = planted.partly_solved(COMPILE)
    source = planted.with_function(source, "generated_code", CANNED_CODE)
    doc = _graded(tmp_path, "canned03", COMPILE, source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert tasks["generated_code"] == "failed", tasks


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(1800)
def test_a_search_that_times_the_naive_schedule_for_every_spec_does_not_pass(
    tmp_path: Path,
) -> None:
    source = planted.with_function(planted.partly_solved(EXPLORE), "explore", NAIVE_EXPLORE)
    doc = _graded(tmp_path, "naive06", EXPLORE, source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert tasks["explore"] == "failed", tasks


#: kata 07's explore_strategy, the same door as kata 06's: each sample is only generated
#: on a scratch scheduler (an invalid one scores 0.0), and XTC's default schedule is
#: compiled and timed in its place. On main at 422a1e7 (MLIR, confined) kata 07 was
#: graded "passed", 2/2, every explore_strategy test "pass".
NAIVE_STRATEGY_SEARCH = """
def explore_strategy(
    graph: Any, Backend: Any, strategy: Any, num: int, seed: int, peak_fmas_per_s: float
) -> Iterator[tuple[int, int, list[int], float]]:
    '''Never compiles a sample: each is only generated on a scratch scheduler (an invalid
    one raises, and scores 0.0), and the naive default schedule is compiled and timed in
    its place.'''
    samples = list(strategy.sample(num, seed))
    total = len(samples)
    fmas = graph.ops_count()
    with tempfile.TemporaryDirectory(prefix="xtc-strategy-") as scratch:
        for index, sample in enumerate(samples):
            try:
                strategy.generate(Backend(graph).get_scheduler(), sample)
                backend = Backend(graph)
                naive = backend.get_scheduler().schedule()
                compiler = backend.get_compiler(dump_file=f"{scratch}/s{index}", shared_lib=True)
                module = compiler.compile(naive)
                times, code, message = module.get_evaluator(repeat=5, min_repeat_ms=20).evaluate()
                if code != 0 or not times:
                    raise RuntimeError(message)
                percent = 100.0 * fmas / min(times) / peak_fmas_per_s
            except Exception:
                percent = 0.0
            yield index, total, list(sample), percent
"""


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(1800)
def test_a_strategy_search_that_times_the_naive_schedule_for_every_sample_does_not_pass(
    tmp_path: Path,
) -> None:
    source = planted.with_function(
        planted.partly_solved(STRATEGIES), "explore_strategy", NAIVE_STRATEGY_SEARCH
    )
    doc = _graded(tmp_path, "naive07", STRATEGIES, source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert tasks["explore_strategy"] == "failed", tasks
