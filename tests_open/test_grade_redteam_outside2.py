"""The second outside red team's attacks that landed (issue 55, item 6, round 2, on main at
d796d9a), each a planted submission graded through the real LocalCluster in bubblewrap,
as `xtc-katas grade` runs it, and asserting the SAFE outcome: each test fails while its
door is open."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

COMPILE = find(3)
SCHEDULING = find(4)
DESCRIPT = find(5)


#: A kernel's outputs computed in the learner's process. Kata 03's tests call
#: compile_baseline in the learner's worker (`baseline_outputs`) and run the module it
#: returns there too (numerics.outputs: a child of that worker), then compare the outputs
#: that come back with numpy in the harness. The harness never sees the module: only
#: its file name and those outputs. So a compile_baseline that compiles nothing, and
#: returns an object whose evaluator fills the output with numpy's product, is judged a
#: kernel that computes the matmul; it asks the Backend for a scheduler and transforms
#: nothing, so the baseline's loop-nest checks (replayed by the harness) pass too. On main
#: at d796d9a (MLIR, confined) compile_baseline was graded "passed", its four tests too.
NUMPY_BASELINE = '''
class _Numpy:
    """Compiles nothing: a 'module' whose evaluator computes the graph with numpy."""

    def __init__(self, graph, dump_file):
        self.graph = graph
        self.file_name = dump_file + ".so"

    def get_evaluator(self, parameters=None, **kwargs):
        return _Evaluator(self.graph, parameters)


class _Evaluator:
    def __init__(self, graph, parameters):
        self.graph, self.parameters = graph, parameters

    def evaluate(self):
        import numpy as np

        (a, b), (out,) = self.parameters
        c = a.astype(np.float64) @ b.astype(np.float64)
        if "relu" in self.graph.name:
            c = np.maximum(c, 0)
        out[...] = c
        return [1e-3], 0, ""


def compile_baseline(graph, Backend, dump_file):
    """Compiles nothing: asks for a scheduler (the harness records its calls), then numpy."""
    Backend(graph).get_scheduler()
    return _Numpy(graph, dump_file)


'''


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_baseline_that_compiles_nothing_is_not_judged_by_outputs_it_computed_itself(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    solution = COMPILE.solution_path(ROOT).read_text()
    start, end = solution.index("def compile_baseline("), solution.index("def percent_of_peak_of(")
    source = solution[:start] + NUMPY_BASELINE + solution[end:]
    sub = tmp_path / "subs" / "numpy"
    planted.write(sub, {COMPILE.id: source})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [COMPILE], backend="mlir")
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "numpy" / "grading.json").read_text())
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["tasks"]["compile_baseline"] == "failed", doc["katas"]
    assert tests["test_compile_baseline_computes_the_matmul[mlir]"] == "fail", tests
