"""The third outside red team's attacks whose doors are closed (issue 55, item 6, round 3,
on main at 422a1e7), each a planted submission graded through the real LocalCluster in
bubblewrap, as `xtc-katas grade` runs it (MLIR), asserting the SAFE outcome. Moved from
tests_open/test_grade_redteam_outside3.py when its door closed: the round's last two,
kata 03's canned code and katas 06 and 07's naive schedule timed for every candidate
(branch doors4)."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.kata.manifest import find

COMPILE = find(3)
EXPLORE = find(6)
STRATEGIES = find(7)


#: kata 03's compile_baseline compiles nothing. The harness reads the compile it is to
#: build again from the learner's process (`handed.compiles[-1]` in the test's
#: baseline_compile), whose code can put any record there: a forged `Compile` of no
#: calls. The harness then compiles the default schedule itself and its outputs are
#: right; the module returned is a fake whose file_name starts with dump_file. On main
#: at 422a1e7 its two tests passed. The harness now keeps the record of each compile
#: it was asked for, on its side (katas/03_compile/test_compile.py, compiled_baseline).
FORGED_BASELINE = """
def compile_baseline(graph: XTCGraph, Backend: Any, dump_file: str) -> Any:
    '''Compiles nothing: makes a scheduler (the no-transformation probe wants one), puts a
    forged compile record in the caller's RecordingBackend, returns a fake module.'''
    import sys

    from xtc_katas.checks.compiles import Compile

    Backend(graph).get_scheduler()
    caller = sys._getframe(1).f_locals
    handed = caller.get("handed")
    if handed is not None:
        handed.compiles.append(Compile([], None, dump_file, True))

    class Fake:
        file_name = dump_file + ".so"

    return Fake()
"""


#: kata 03's generated_code compiles nothing either: canned text holding each backend's
#: markers for each stage (the test read only the text the learner's process returns).
#: On main at 422a1e7 its three tests passed. The harness now makes generated_code's
#: compiles and keeps what its XTC printed; the text returned is judged against that
#: (katas/03_compile/test_compile.py, generated).
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
#: judged each figure by the times of the modules compiled since the previous item, never
#: whether one was the candidate's schedule: every explore test passed on main at 422a1e7.
#: An item's modules are now those compiled from its own schedule, which the harness
#: builds (checks/search.py, spec_schedule and sample_schedule).
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


#: kata 03's percent_of_peak_of returns, for the harness's module, 290,000 lists nested
#: 25 deep (a wire value: lists of at most 2**20 items, 32 deep). The test records it as
#: its `percent_of_peak` figure (record_perf, before any assertion): one record line of
#: ~15 MB, under the grader's 16 MiB, read back as 7.25 million lists, and written into
#: grading.json and results.json with indent=1. On main at 422a1e7 (MLIR, confined, this
#: 2-vCPU AMD EPYC loaded ~5 by other work): the kata took 8 min 19 s, the grader
#: (`xtc-katas grade`) peaked at 2.25 GB RSS, the Dask worker at 1.17 GB, and the
#: learner's grading.json and results.json were 281 MB each.
NESTED_FIGURE = """
def percent_of_peak_of(module: Any, fmas: int, peak_fmas_per_s: float) -> float:
    '''Evaluates the module, then returns, for the harness's own module, a figure that is
    290,000 lists each nested 25 deep: the harness records it as the test's
    `percent_of_peak` (record_perf, before any assertion), ~15 MB of JSON in one record
    line, under the grader's 16 MiB; 7.25 million lists once the grader reads it back.'''
    times, code, message = module.get_evaluator(repeat=5, min_repeat_ms=20).evaluate()
    if code != 0 or not times:
        raise RuntimeError(f"evaluation failed with code {code}: {message}")
    if type(module).__name__ == "HarnessModule" and fmas != 10**6:
        leaf = []
        for _ in range(24):
            leaf = [leaf]
        return [leaf] * 290_000
    return 100.0 * fmas / min(times) / peak_fmas_per_s
"""


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(1800)
def test_a_figure_of_millions_of_nested_lists_stays_small_in_the_grader(tmp_path: Path) -> None:
    source = planted.with_function(
        planted.partly_solved(COMPILE), "percent_of_peak_of", NESTED_FIGURE
    )
    doc = planted.graded_alone(tmp_path, COMPILE, "nested03", source)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = (tmp_path / "out" / "nested03" / "grading.json").stat().st_size
    print(doc["katas"], peak_kib, size)
    assert size < 16 << 20, f"grading.json is {size:,} bytes"
    assert peak_kib < 1 << 20, f"the grader (this process) peaked at {peak_kib:,} KiB"


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(900)
def test_a_baseline_that_forges_its_compile_record_does_not_pass(tmp_path: Path) -> None:
    source = planted.with_function(
        planted.partly_solved(COMPILE), "compile_baseline", FORGED_BASELINE
    )
    doc = planted.graded_alone(tmp_path, COMPILE, "forged03", source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert doc["katas"][0]["verdict"] != "passed", doc["katas"]
    assert tasks["compile_baseline"] == "failed", tasks


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(900)
def test_a_generated_code_that_returns_canned_text_does_not_pass(tmp_path: Path) -> None:
    source = planted.partly_solved(COMPILE)
    source = planted.with_function(source, "generated_code", CANNED_CODE)
    doc = planted.graded_alone(tmp_path, COMPILE, "canned03", source)
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
    doc = planted.graded_alone(tmp_path, EXPLORE, "naive06", source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert tasks["explore"] == "failed", tasks


#: kata 07's explore_strategy, the same door as kata 06's: each sample is only generated
#: on a scratch scheduler (an invalid one scores 0.0), and XTC's default schedule is
#: compiled and timed in its place. On main at 422a1e7 (MLIR, confined) kata 07 was
#: graded "passed", 2/2, every explore_strategy test "pass". Closed as kata 06's: each
#: sample's figure is judged by the modules compiled from the calls its generate makes.
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
    doc = planted.graded_alone(tmp_path, STRATEGIES, "naive07", source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert tasks["explore_strategy"] == "failed", tasks
