"""An outside red team's attacks that landed (issue 55, item 6), each a planted submission
graded through the real LocalCluster in bubblewrap, as `xtc-katas grade` runs it, and
asserting the SAFE outcome: each test fails while its door is open.

The attacks through the sandbox's /tmp and the records (a library planted in /tmp, a
record written before its kata runs, records of ~342,000 tests, a kernel swapped) moved
to tests/test_grade_redteam_outside.py when their doors were closed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

EXPLORE = find(6)


#: Another door: a probe of the harness that runs in the learner's process returns a
#: harness record built there. Kata 06's tests drain the learner's search there
#: (`searched`, with `search_checks.take_all`) and judge the SearchRun that comes back:
#: its compile counts, the times its evaluators returned, whether each module ran. The
#: learner's module rebinds `xtc_katas.checks.search.take_all` in its own process at its
#: import, and its `explore` compiles and times nothing: each figure is made up from a
#: made-up time, which the forged SearchRun says its evaluator returned. On main at
#: f039541 (MLIR) kata 06 was graded "passed", explore's four tests too ("compiles one
#: candidate per item", "reports what the harness measures"); the same explore without
#: the rebinding failed them.
FORGED_SEARCH = '''

import xtc_katas.checks.search as _search

_TIMES = []


def _take_all(generator, counter, where):
    """The harness's drain, in my process: a SearchRun of my own making."""
    _TIMES.clear()
    items = list(generator)
    run = _search.SearchRun(compiles_before_first=0)
    run.items = items
    run.times = [[_TIMES[n]] if item[3] > 0 else [] for n, item in enumerate(items)]
    run.ran = [True] * len(items)
    run.compiles_after_first = 1
    run.compiles = len(items)
    run.dump_files = [f"/tmp/c{n}" for n in range(len(items))]
    return run


_search.take_all = _take_all


def explore(graph, Backend, specs, peak_fmas_per_s):
    """Measures nothing: a figure made up from a made-up time, 0.0 where descript refuses."""
    total, fmas = len(specs), graph.ops_count()
    for index, (name, spec) in enumerate(specs):
        try:
            sch = Backend(graph).get_scheduler()
            descript_scheduler(
                scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=spec
            )
            seconds = 1e-3 / (1 + index)
            percent = 100.0 * fmas / seconds / peak_fmas_per_s
        except Exception:
            seconds, percent = 0.0, 0.0
        _TIMES.append(seconds)
        yield index, total, name, percent
'''


@pytest.mark.slow
@pytest.mark.perf  # kata 06's race of the best candidate
@pytest.mark.timeout(900)
def test_a_search_that_measures_nothing_cannot_forge_the_record_of_its_run(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    solution = EXPLORE.solution_path(ROOT).read_text()
    source = solution[: solution.index("def explore(")] + FORGED_SEARCH
    sub = tmp_path / "subs" / "forge"
    planted.write(sub, {EXPLORE.id: source})
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [EXPLORE], backend="mlir", timeout=900
    )
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "forge" / "grading.json").read_text())
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["tasks"]["explore"] == "failed", doc["katas"]
    assert tests["test_explore_compiles_one_candidate_per_item[mlir]"] == "fail", tests
