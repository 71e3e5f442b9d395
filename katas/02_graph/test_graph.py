"""Tests of kata 02. Each test's name contains the function it checks.

Structure is checked through the graph's API (names, shapes, dtypes, ops, wiring), never
through uids or printed text: uids come from a process-wide counter and change run to run.
Numerics use XTC's reference execution of the graph against numpy.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

dims = st.integers(min_value=1, max_value=24)
dtypes = st.sampled_from(["float32", "float64"])


def ops(graph):
    return [(node.name, node.operator.name) for node in graph.nodes.values()]


def check_inputs(graph, I, J, K, dtype):  # noqa: E741
    assert len(graph.inputs) == 2, (
        f"the graph has {len(graph.inputs)} inputs, expected 2 (A and B): create the input "
        "tensors BEFORE the `with O.graph(...)` block, inside it they become constants"
    )
    shapes = [tuple(t.shape) for t in graph.inputs_types]
    assert shapes == [(I, K), (K, J)], f"input shapes {shapes}, expected A (I, K) then B (K, J)"
    assert [t.dtype for t in graph.inputs_types] == [dtype, dtype], (
        f"input dtypes {[t.dtype for t in graph.inputs_types]}, expected {dtype}: pass dtype "
        "to O.tensor"
    )
    outputs = [tuple(t.shape) for t in graph.outputs_types]
    assert len(outputs) == 1, (
        f"the graph has {len(outputs)} outputs, of shapes {outputs}, expected one of shape "
        f"{(I, J)}: a node's result that no other node reads becomes an output. Which "
        "node's result does each node read? (the lesson's 'Tensors and operators')"
    )
    assert outputs == [(I, J)], f"the output has shape {outputs[0]}, expected C's {(I, J)}"
    assert [t.dtype for t in graph.outputs_types] == [dtype], f"the output is not {dtype}"


def forward(learner_module, function, args, inputs):
    """The graph `function(*args)` builds, and its one output on `inputs` by XTC's
    reference execution, the graph's inputs checked first. The graph crosses from your
    module's process as its description and is built again here, where it runs: what your
    process says it computes is never read."""
    from xtc.graphs.xtc.data import XTCTensor

    graph = getattr(learner_module, function)(*args)
    check_inputs(graph, *args)
    try:
        outputs = graph.forward([XTCTensor(x) for x in inputs])
    except Exception as exc:
        raise AssertionError(f"XTC could not run the graph: {type(exc).__name__}: {exc}") from exc
    assert len(outputs) == 1, f"the graph has {len(outputs)} outputs, expected 1"
    return outputs[0].numpy()


def random_inputs(I, J, K, dtype, seed=0):  # noqa: E741
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, (I, K)).astype(dtype), rng.uniform(-1, 1, (K, J)).astype(dtype)]


def test_matmul_graph_structure(learner_module):
    graph = learner_module.matmul_graph(4, 32, 512)
    assert graph.name == "matmul"
    check_inputs(graph, 4, 32, 512, "float32")
    assert ops(graph) == [("C", "matmul")]
    (node,) = graph.nodes.values()
    assert list(node.inputs) == list(graph.inputs), "C must read the graph's inputs A then B"
    assert list(node.outputs) == list(graph.outputs)
    assert node.operation.dims == {"i": 4, "j": 32, "k": 512}
    assert list(node.operation.dims_kind("R")) == ["k"], "k is the reduction axis"


@settings(max_examples=25, deadline=None)
@given(I=dims, J=dims, K=dims, dtype=dtypes)
def test_matmul_graph_computes_a_at_b(learner_module, I, J, K, dtype):  # noqa: E741
    a, b = random_inputs(I, J, K, dtype)
    got = forward(learner_module, "matmul_graph", (I, J, K, dtype), [a, b])
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5)


def test_matmul_relu_graph_structure(learner_module):
    graph = learner_module.matmul_relu_graph(4, 32, 512)
    assert graph.name == "matmul_relu"
    check_inputs(graph, 4, 32, 512, "float32")
    assert ops(graph) == [("C", "matmul"), ("R", "relu")], "nodes in order: matmul C, relu R"
    c, r = graph.nodes.values()
    assert list(c.inputs) == list(graph.inputs)
    assert list(r.inputs) == list(c.outputs), "relu R must read the output of C"
    assert list(r.outputs) == list(graph.outputs), "R's output is the graph's output"


@settings(max_examples=25, deadline=None)
@given(I=dims, J=dims, K=dims, dtype=dtypes)
def test_matmul_relu_graph_computes_relu_of_a_at_b(learner_module, I, J, K, dtype):  # noqa: E741
    a, b = random_inputs(I, J, K, dtype, seed=1)
    got = forward(learner_module, "matmul_relu_graph", (I, J, K, dtype), [a, b])
    np.testing.assert_allclose(
        got, np.maximum(a @ b, 0), rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-5
    )
    assert (got >= 0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_graph_and_matmul_relu_graph_keep_the_dtype(learner_module, dtype):
    for build in (learner_module.matmul_graph, learner_module.matmul_relu_graph):
        graph = build(3, 5, 7, dtype)
        assert [t.dtype for t in graph.inputs_types + graph.outputs_types] == [dtype] * 3
