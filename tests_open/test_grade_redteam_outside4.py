"""The fourth outside red team's attacks that land (issue 55, item 6, round 4, on main at
6bf8a24), each a planted submission graded through the real LocalCluster in bubblewrap,
as `xtc-katas grade` runs it (MLIR), asserting the SAFE outcome: each fails while its door
is open (run on 6bf8a24, confined, as root, on a 2-vCPU AMD EPYC family 25 model 1 shared
with three other helpers' work)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xtc_katas import ROOT
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

GRAPH = find(2)

#: Kata 02's numerics are computed in the learner's process: the test's probe
#: (`built_and_run`) calls XTC's reference execution, `graph.forward`, there, and compares
#: what it returns in the harness; the graph that crossed (as a description, rebuilt) is
#: only checked for its structure, which says nothing of a relu's threshold. This module's
#: matmul_relu_graph is wrong (a relu of threshold 0.5), and at import it rebinds
#: XTCGraph.forward in its own process to return numpy's relu(A @ B) for that graph. On
#: main at 6bf8a24 (MLIR, confined, as root) kata 02 was graded "passed", 2/2 tasks, every
#: test "pass"; without the rebinding, test_matmul_relu_graph_computes_relu_of_a_at_b
#: fails. Kata 11's conv_layer_graph is judged the same way (`forwarded` and
#: `compiled_outputs` run in the learner's process): read in the code, not tried.
FORGED_FORWARD = """

def matmul_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    a = O.tensor((I, K), dtype, name="A")
    b = O.tensor((K, J), dtype, name="B")
    with O.graph(name="matmul") as gb:
        O.matmul(a, b, name="C")
    return gb.graph


def matmul_relu_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    a = O.tensor((I, K), dtype, name="A")
    b = O.tensor((K, J), dtype, name="B")
    with O.graph(name="matmul_relu") as gb:
        O.relu(O.matmul(a, b, name="C"), threshold=0.5, name="R")
    return gb.graph


import numpy as _np
from xtc.graphs.xtc.data import XTCTensor as _Tensor

_forward = XTCGraph.forward


def _claimed(self, inputs, *args, **kwargs):
    if self.name != "matmul_relu":
        return _forward(self, inputs, *args, **kwargs)
    a, b = (x.numpy() for x in inputs)
    return [_Tensor(_np.maximum(a @ b, 0).astype(a.dtype))]


XTCGraph.forward = _claimed
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_graph_whose_numerics_its_own_process_forges_does_not_pass(tmp_path: Path) -> None:
    stub = GRAPH.stub_path(ROOT).read_text()
    source = stub[: stub.index("def matmul_graph")] + FORGED_FORWARD
    sub = tmp_path / "subs" / "forward02"
    path = sub / "katas" / GRAPH.id / f"{GRAPH.module}.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [GRAPH], backend="mlir")
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "forward02" / "grading.json").read_text())
    print(doc["katas"])
    assert doc["katas"][0]["tasks"]["matmul_relu_graph"] == "failed", doc["katas"]
