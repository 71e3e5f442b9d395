"""The third outside red team's attacks whose doors are closed (issue 55, item 6, round 3,
on main at 422a1e7), each a planted submission graded through the real LocalCluster in
bubblewrap, as `xtc-katas grade` runs it (MLIR), asserting the SAFE outcome. Moved from
tests_open/test_grade_redteam_outside3.py when its door closed; the round's attacks still
open are there."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

COMPILE = find(3)


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


def _graded(tmp_path: Path, name: str, kata, source: str) -> dict:
    sub = tmp_path / "subs" / name
    planted.write(sub, {kata.id: source})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [kata], backend="mlir")
    assert not outcome.grader_errors, outcome
    return json.loads((out / name / "grading.json").read_text())


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
    doc = _graded(tmp_path, "nested03", COMPILE, source)
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
    doc = _graded(tmp_path, "forged03", COMPILE, source)
    tasks = doc["katas"][0]["tasks"]
    print(doc["katas"])
    assert doc["katas"][0]["verdict"] != "passed", doc["katas"]
    assert tasks["compile_baseline"] == "failed", tasks
