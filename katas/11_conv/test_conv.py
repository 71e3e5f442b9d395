"""Tests of kata 11. Each test's name contains the function it checks; the scheduled
ones use the `task` fixture on ResNet18_02 (56x56x64 -> 56x56x64, 3x3, pad 1).

The graph is checked through XTC's API (shapes, nodes, wiring) and computed twice: on
small layers registered in XTC's catalogue, with XTC's reference execution (slow: a
Python loop per output), and on the real layer compiled as it is, against numpy. The
schedules are judged as in every kata: they compute the layer (numpy in float64 on
random, signed and edge inputs), their loop nest has the task's shape, and timed side by
side with the naive kernel, the reference and one sample of XTC's strategy, they reach
this run's bar (xtc_katas/measure/speed_rule.py).
"""

import numpy as np
import pytest

from xtc_katas.checks import loop_nests
from xtc_katas.kata.problems import RESNET18_02, Conv2D, make_inputs
from xtc_katas.measure import numerics

#: Small layers of the same kinds, registered in XTC's catalogue for the tests.
SMALL = {
    "xtc-katas-3x3": (Conv2D(1, 5, 6, 4, 3, 3, 3, stride=1, pad=1), {"SH": 1, "SW": 1}),
    "xtc-katas-3x3-stride2": (Conv2D(1, 3, 4, 8, 3, 3, 2, stride=2, pad=1), {"SH": 2, "SW": 2}),
    "xtc-katas-1x1": (Conv2D(1, 4, 4, 8, 1, 1, 5), {"SH": 1, "SW": 1}),
}


@pytest.fixture(scope="module", autouse=True)
def small_layers():
    from xtc.artifacts import has_operation, register_operation

    for name, (layer, params) in SMALL.items():
        if not has_operation("conv2d", name):
            sizes = (layer.N, layer.H, layer.W, layer.F, layer.R, layer.S, layer.C)
            dims = dict(zip("nhwfrsc", sizes, strict=True))
            register_operation("conv2d", name, dims, params)


def shapes(types):
    return [tuple(t.shape) for t in types]


def check_graph(graph, layer, name):
    got = shapes(graph.inputs_types)
    assert len(got) == 2, (
        f"conv_layer_graph({name!r}) has {len(got)} input(s) {got}, expected two: the "
        "unpadded image, then the weights. Create both tensors BEFORE the `with "
        "O.graph(...)` block (inside it they become constants)"
    )
    (image, weights), (want_image, want_weights) = got, layer.input_shapes
    low, high = layer.smallest_input_size, layer.input_size
    rows = f"{low[0]}" if low[0] == high[0] else f"{low[0]} to {high[0]}"
    columns = f"{low[1]}" if low[1] == high[1] else f"{low[1]} to {high[1]}"
    assert len(image) == 4 and image[0] == want_image[0] and image[3] == want_image[3], (
        f"conv_layer_graph({name!r}): the image is {image}, expected (n, rows, columns, c) "
        f"= ({want_image[0]}, {rows}, {columns}, {want_image[3]}): NHWC, from the "
        "catalogue's n and c"
    )
    assert layer.accepts_input_size(image[1], image[2]), (
        f"conv_layer_graph({name!r}): the image has {image[1]} rows and {image[2]} columns; "
        f"this layer takes {rows} rows and {columns} columns before padding. The "
        "catalogue's h and w are the OUTPUT's size: XTC's input is h * SH + r - 1 rows "
        "once padded (the same for w), less 2 * pad"
    )
    assert weights == want_weights, (
        f"conv_layer_graph({name!r}): the weights are {weights}, expected (r, s, c, f) = "
        f"{want_weights}"
    )
    assert shapes(graph.outputs_types) == [layer.output_shape], (
        f"conv_layer_graph({name!r}) gives {shapes(graph.outputs_types)}, expected "
        f"{[layer.output_shape]}: pad by (r - 1) // 2 and use the catalogue's stride"
    )
    operators = [node.operator.name for node in graph.nodes.values()]
    expected = ["pad2d", "conv2d"] if layer.pad else ["conv2d"]
    assert operators == expected, f"nodes {operators}, expected {expected}"


def forward(graph, inputs):
    from xtc.graphs.xtc.data import XTCTensor

    return graph.forward([XTCTensor(x) for x in inputs])[0].numpy()


# --- conv_layer_graph ---------------------------------------------------------------------


def test_conv_layer_graph_builds_resnet18_02(kata):
    check_graph(kata.conv_layer_graph("ResNet18_02"), RESNET18_02, "ResNet18_02")


@pytest.mark.parametrize("name", sorted(SMALL))
def test_conv_layer_graph_computes_small_layers_of_the_catalogue(kata, name):
    layer = SMALL[name][0]
    graph = kata.conv_layer_graph(name)
    check_graph(graph, layer, name)
    # the image as the learner sized it: any size giving the layer's output is right
    inputs = make_inputs(shapes(graph.inputs_types), layer.dtype, "signed", seed=1)
    np.testing.assert_allclose(
        forward(graph, inputs), layer.reference(inputs), rtol=1e-4, atol=1e-4
    )


def test_conv_layer_graph_compiles_to_the_real_layer(kata, backend, workdir):
    graph = kata.conv_layer_graph("ResNet18_02")
    check_graph(graph, RESNET18_02, "ResNet18_02")
    impl = backend.Backend(graph)
    module = workdir.compile(impl, impl.get_scheduler().schedule(), stem="layer")
    numerics.assert_computes(module, RESNET18_02, backend.name, kinds=("signed",))


# --- conv_strategy ------------------------------------------------------------------------


@pytest.mark.task("conv_strategy")
def test_conv_strategy_sample_computes_the_layer(task):
    task.assert_computes()


# --- schedule_conv ------------------------------------------------------------------------


@pytest.mark.task("schedule_conv")
def test_schedule_conv_computes_the_layer(task):
    task.assert_computes()


@pytest.mark.task("schedule_conv")
def test_schedule_conv_has_a_register_tile_inside_the_reductions(task):
    task.assert_shape(
        loop_nests.register_tile(task.loop_nest(), i=("w", "h"), j="f", k=("r", "s", "c"))
    )


@pytest.mark.perf
@pytest.mark.task("schedule_conv")
def test_schedule_conv_keeps_up_and_beats_a_strategy_sample_where_it_pays(task):
    task.assert_speed()


# --- schedule_conv_parallel ---------------------------------------------------------------


@pytest.mark.task("schedule_conv_parallel")
def test_schedule_conv_parallel_computes_the_layer(task):
    task.assert_computes()


@pytest.mark.task("schedule_conv_parallel")
def test_schedule_conv_parallel_shares_the_rows_around_the_register_tile(task):
    nest = task.loop_nest()
    task.assert_shape(
        loop_nests.register_tile(nest, i=("w", "h"), j="f", k=("r", "s", "c"))
        + loop_nests.parallel_rows(nest)
    )


@pytest.mark.perf
@pytest.mark.task("schedule_conv_parallel")
def test_schedule_conv_parallel_keeps_up_and_beats_the_sequential_tile_where_it_pays(task):
    task.assert_speed()
