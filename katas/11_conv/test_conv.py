"""Tests of kata 11. Each test's name contains the function it checks; the scheduled
ones use the `task` fixture on ResNet18_02 (56x56x64 -> 56x56x64, 3x3, pad 1).

The graph is checked through XTC's API (shapes, nodes, wiring) and computed twice: on
small layers registered in XTC's catalogue, with XTC's reference execution (slow: a
Python loop per output), and on the real layer compiled as it is, against numpy. The
schedules are judged as in every kata: they compute the layer (numpy in float64 on
random, signed and edge inputs), their loop nest has the task's shape, and timed side by
side with the naive kernel, the reference and one sample of XTC's strategy, they reach
this run's bar (xtc_katas/checks/speed_rule.py).
"""

import numpy as np
import pytest

from xtc_katas.checks import loop_nests
from xtc_katas.checks.kinds import STRATEGY_SEED, Asked, recorded_calls
from xtc_katas.checks.schedule import replay
from xtc_katas.kata.failures import KataFailure, raise_mistakes
from xtc_katas.kata.problems import RESNET18_02, Conv2D, make_inputs
from xtc_katas.measure import numerics

KATA = "11_conv"

#: Small layers of the same kinds, registered in XTC's catalogue for the tests.
SMALL = {
    "xtc-katas-3x3": (Conv2D(1, 5, 6, 4, 3, 3, 3, stride=1, pad=1), {"SH": 1, "SW": 1}),
    "xtc-katas-3x3-stride2": (Conv2D(1, 3, 4, 8, 3, 3, 2, stride=2, pad=1), {"SH": 2, "SW": 2}),
    "xtc-katas-1x1": (Conv2D(1, 4, 4, 8, 1, 1, 5), {"SH": 1, "SW": 1}),
}


@pytest.fixture(scope="module", autouse=True)
def small_layers():
    register_small_layers()


def register_small_layers():
    """SMALL in XTC's catalogue, in the process that runs this (the harness, or the
    learner's worker: a fresh interpreter, which has not registered them yet)."""
    from xtc.artifacts import has_operation, register_operation

    for name, (layer, params) in SMALL.items():
        if not has_operation("conv2d", name):
            sizes = (layer.N, layer.H, layer.W, layer.F, layer.R, layer.S, layer.C)
            dims = dict(zip("nhwfrsc", sizes, strict=True))
            register_operation("conv2d", name, dims, params)


#: The nodes that pad the image: pad2d, or XTC's general pad over the rows and columns
#: (O.pad(I, padding={1: (p, p), 2: (p, p)})); both compile and compute the layer.
PADDING = ("pad2d", "pad")

#: XTC 0.3.2's conv2d checks its stride with a message about pad2d (operators.py,
#: XTCOperConv2D: "padding for pad2d of wrong type, expect int or tuple: [1, 1]").
CONV2D_STRIDE_CHECK = "of wrong type, expect int or tuple: "


class GraphMistake(KataFailure):
    """XTC rejected the learner's graph with a message that names another cause."""


#: XTC 0.3.2's conv2d's check that the image's channels match the weights' (operators.py,
#: XTCOperConv2D: "unexpected with shapes: inp_shape = ..., weight_shape = ...").
CONV2D_SHAPE_CHECK = "unexpected with shapes: "


def layer_graph(learner_module, name):
    """learner_module.conv_layer_graph(name); a stride or a weights' layout that XTC's conv2d
    rejects is named as such."""
    try:
        return learner_module.run(small_layer_graph, name, what=f"{KATA} › conv_layer_graph()")
    except AssertionError as exc:
        if CONV2D_SHAPE_CHECK in str(exc):
            layer = RESNET18_02 if name == "ResNet18_02" else SMALL[name][0]
            raise GraphMistake(
                f"{KATA} › conv_layer_graph({name!r}): XTC's conv2d found the image's channels "
                f"and the weights' disagree ({str(exc)!r}). XTC takes the image as (n, h, w, "
                f"c) and the weights as (r, s, c, f): for this layer, weights of shape "
                f"{layer.input_shapes[1]}"
            ) from exc
        if CONV2D_STRIDE_CHECK not in str(exc):
            raise
        raise GraphMistake(
            f"{KATA} › conv_layer_graph({name!r}): XTC rejected the conv2d's stride with "
            f"{str(exc)!r}. That is conv2d's own check of its stride, which names pad2d by "
            "mistake (xtc/graphs/xtc/operators.py, XTCOperConv2D): give a tuple, "
            "stride=(SH, SW)"
        ) from exc


def small_layer_graph(module, name):
    """In your module's process: conv_layer_graph(name), SMALL registered there first."""
    register_small_layers()
    return module.conv_layer_graph(name)


def shapes(types):
    return [tuple(t.shape) for t in types]


def image_size_mistake(name, image, layer, low):
    """An image of the wrong size: too few or too many rows and columns, and whether they
    are the output's (the catalogue's h and w taken for the image's)."""
    output = tuple(layer.output_shape[1:3])
    short = image[1] < low[0] or image[2] < low[1]
    own = " (the output's own size)" if tuple(image[1:3]) == output else ""
    return (
        f"conv_layer_graph({name!r}): the image has {image[1]} rows and {image[2]} "
        f"columns{own}, too {'few' if short else 'many'} for a {output[0]}x{output[1]} "
        "output. The catalogue's h and w are the OUTPUT's size: which padded row does "
        "the last output row's window end on, and how many of those rows are padding? "
        "(the lesson's 'Output size' works one example)"
    )


def check_graph(graph, layer, name):
    got = shapes(graph.inputs_types)
    assert len(got) == 2, (
        f"conv_layer_graph({name!r}) has {len(got)} input(s) {got}, expected two: the "
        "unpadded image, then the weights. Create both tensors BEFORE the `with "
        "O.graph(...)` block (inside it they become constants)"
    )
    (image, weights), (want_image, want_weights) = got, layer.input_shapes
    # XTC's image size, down to the fewest rows and columns whose last window ends on
    # the last one: every size between gives the layer's output size. The messages name
    # the mistake, never the size: finding it is the task (hint 3 asks for it).
    high = want_image[1:3]
    low = [size - layer.stride + 1 for size in high]
    assert len(image) == 4 and image[0] == want_image[0] and image[3] == want_image[3], (
        f"conv_layer_graph({name!r}): the image is {image}: an NHWC image has four dims, "
        "the catalogue's n first and its c last (the lesson's 'The layer, from XTC's "
        "catalogue')"
    )
    assert low[0] <= image[1] <= high[0] and low[1] <= image[2] <= high[1], image_size_mistake(
        name, image, layer, low
    )
    assert weights == want_weights, (
        f"conv_layer_graph({name!r}): the weights are {weights}, expected (r, s, c, f) = "
        f"{want_weights}"
    )
    assert shapes(graph.outputs_types) == [layer.output_shape], (
        f"conv_layer_graph({name!r}) gives {shapes(graph.outputs_types)}, expected "
        f'{[layer.output_shape]}: how many rows does "same" padding add on each side of '
        "an r-row filter, and which stride does the catalogue give? (the lesson's "
        "'Output size')"
    )
    operators = [node.operator.name for node in graph.nodes.values()]
    pads = operators[:-1]
    expected = ["pad2d", "conv2d"] if layer.pad else ["conv2d"]
    assert operators[-1:] == ["conv2d"] and len(pads) <= 1 and set(pads) <= set(PADDING), (
        f"conv_layer_graph({name!r}): nodes {operators}, expected {expected}: the image "
        "padded when the layer pads (pad2d, or XTC's general pad over the rows and columns), "
        "then the conv2d"
    )
    for node in graph.nodes.values():
        attrs = node.operator.attrs
        stride = getattr(attrs, "stride", (1, 1))
        assert node.operator.name != "conv2d" or isinstance(stride, tuple), (
            f"conv_layer_graph({name!r}): the conv2d's stride is {stride!r}. XTC's graph "
            "takes an int, but XTC 0.3.2's backends both unpack it as a pair (`SH, SW = "
            'attrs["stride"]`, MlirOps.py and TVMOps.py): this graph does not compile, '
            "TypeError. Give the pair, stride=(SH, SW)"
        )
        assert node.operator.name not in PADDING or getattr(attrs, "padding", None) != {}, (
            f"conv_layer_graph({name!r}): the {node.operator.name} node {node.name!r} pads "
            "nothing (padding 0). It computes the same, but XTC 0.3.2's TVM backend cannot "
            "compile a pad with no padded axis (TVMOps.py, TVMOperatorPad: tvm.tirx.all() "
            'of no bounds, "Any must take at least 1 argument"): when pad is 0, give the '
            "image to the conv2d directly"
        )


def forwarded(graph, name, seed):
    """XTC's reference execution of the graph built for the layer `name` (crossed from
    your module's process as its description, built again here), on signed inputs of the
    image's shape as it sized it."""
    from xtc.graphs.xtc.data import XTCTensor

    inputs = make_inputs(shapes(graph.inputs_types), SMALL[name][0].dtype, "signed", seed=seed)
    return inputs, graph.forward([XTCTensor(x) for x in inputs])[0].numpy()


def compiled_outputs(graph, backend, dump_file):
    """The graph built for ResNet18_02 (built again here from your module's description of
    it), compiled unscheduled by the harness, and its outputs on the harness's signed
    inputs: nothing your process computes is read."""
    impl = backend.Backend(graph)
    compiler = impl.get_compiler(dump_file=dump_file, shared_lib=True)
    return numerics.outputs(
        compiler.compile(impl.get_scheduler().schedule()), RESNET18_02, ("signed",)
    )


# --- conv_layer_graph ---------------------------------------------------------------------


def test_conv_layer_graph_builds_resnet18_02(learner_module):
    check_graph(layer_graph(learner_module, "ResNet18_02"), RESNET18_02, "ResNet18_02")


def test_conv_layer_graph_builds_the_dtype_it_is_given(learner_module):
    # An outside learner's graph hard-coded "float32" and passed (issue 20).
    graph = learner_module.conv_layer_graph("ResNet18_02", "float64")
    dtypes = [str(t.dtype) for t in [*graph.inputs_types, *graph.outputs_types]]
    assert set(dtypes) == {"float64"}, (
        f"{KATA} › conv_layer_graph('ResNet18_02', 'float64'): the tensors are {dtypes}: "
        "build I and W with the `dtype` argument, O.tensor(shape, dtype, name=...)"
    )


@pytest.mark.parametrize("name", sorted(SMALL))
def test_conv_layer_graph_computes_small_layers_of_the_catalogue(learner_module, name):
    layer = SMALL[name][0]
    graph = layer_graph(learner_module, name)
    check_graph(graph, layer, name)
    # the image as the learner sized it: any size giving the layer's output is right
    inputs, got = forwarded(graph, name, 1)
    np.testing.assert_allclose(got, layer.reference(inputs), rtol=1e-4, atol=1e-4)


def test_conv_layer_graph_compiles_to_the_real_layer(learner_module, backend, workdir):
    graph = layer_graph(learner_module, "ResNet18_02")
    check_graph(graph, RESNET18_02, "ResNet18_02")
    outputs = compiled_outputs(graph, backend, workdir.dump_file("layer"))
    numerics.assert_outputs(outputs, RESNET18_02, backend.name)


# --- conv_strategy ------------------------------------------------------------------------


@pytest.mark.task("conv_strategy")
def test_conv_strategy_sample_computes_the_layer(task):
    task.assert_computes()


#: How many samples of the harness's seed the strategy test generates, besides the one
#: raced: what the task asks must hold of the strategy, not of one lucky sample.
STRATEGY_SAMPLES = 20


class StrategyMistake(KataFailure):
    """conv_strategy(graph) returned something other than what the task asks."""


def xtc_strategy_classes():
    """The strategy classes xtc.search.strategies defines (Strategy_PPRPRPvr, ...)."""
    import inspect

    import xtc.search.strategies as strategies
    from xtc.itf.search import Strategy

    return tuple(
        cls
        for cls in vars(strategies).values()
        if inspect.isclass(cls)
        and issubclass(cls, Strategy)
        and cls.__module__ == strategies.__name__
    )


def strategy_facts(module, problem, backend, label):
    """In your module's process: what conv_strategy(graph) returned, as plain facts, and
    the calls each of its samples of the harness's seed makes on the layer's scheduler
    (or why generating it failed)."""
    graph = problem.graph()
    strategy = module.conv_strategy(graph)
    cls = strategy if isinstance(strategy, type) else type(strategy)
    ours = xtc_strategy_classes()
    facts = {
        "xtc": type(strategy) in ours,
        "name": cls.__name__,
        "the class": cls is strategy,
        "origin": f"defined in {label}.py"
        if cls.__module__ == module.__name__
        else f"from {cls.__module__}",
        "xtc bases": [base.__name__ for base in cls.__mro__[1:] if base in ours],
    }
    if not facts["xtc"]:
        return facts
    built_on = strategy.graph.outputs_nodes[0].operation
    conv = graph.outputs_nodes[0].operation
    facts["built on"] = (built_on.name, dict(built_on.dims))
    facts["layer"] = (conv.name, dict(conv.dims))
    # XTC keeps a strategy's vec_size as _vec_size (BaseStrategy, xtc/search/strategies.py)
    facts["vec_size"] = getattr(strategy, "_vec_size", None)
    raced = next(iter(strategy.sample(1, STRATEGY_SEED)), None)
    drawn = list(strategy.sample(STRATEGY_SAMPLES, STRATEGY_SEED))
    facts["drawn"] = len(drawn)
    samples = ([("raced", raced)] if raced is not None else []) + list(enumerate(drawn))
    facts["samples"] = []
    for name, sample in samples:
        try:
            calls = recorded_calls(Asked("conv_strategy", name, backend, problem), strategy, sample)
        except Exception as exc:
            calls = f"{type(exc).__name__}: {exc}"
        facts["samples"].append((name, list(sample), calls))
    return facts


@pytest.mark.task("conv_strategy")
def test_conv_strategy_samples_vectorize_f_for_this_machine_on_one_thread(task):
    where = f"{task.kata.id} › conv_strategy(graph)"
    simd = loop_nests.machine()
    lanes = simd.lanes
    facts = task.learner.run(strategy_facts, task.problem, task.backend, task.kata.module)
    if not facts["xtc"]:
        name, xtc_bases = facts["name"], facts["xtc bases"]
        what = "the class" if facts["the class"] else "a"
        kind = (
            f"a subclass of XTC's {xtc_bases[0]} that may change what it samples"
            if xtc_bases and not facts["the class"]
            else "not an instance of a strategy class of xtc.search.strategies"
        )
        raise StrategyMistake(
            f"{where} returned {what} {name} ({facts['origin']}), {kind}: return an "
            "instance of XTC's class itself, built on `graph`. The task is "
            "XTC's own space of schedules of this conv, sampled as XTC samples it"
        )
    if facts["built on"] != facts["layer"]:
        (built, built_dims), (conv, conv_dims) = facts["built on"], facts["layer"]
        raise StrategyMistake(
            f"{where}: the {facts['name']} is built on a graph whose output is "
            f"{built} {built_dims}, not this layer's {conv} {conv_dims}: build it on the "
            "`graph` it is given"
        )
    mistakes = []
    vec_size = facts["vec_size"] if facts["vec_size"] is not None else lanes
    if vec_size != lanes:
        mistakes.append(
            f"it is built with vec_size={vec_size}; this machine's vectors hold {lanes} "
            f"float32 lanes ({simd.described}): read them on the machine that runs it "
            "(kata 04's hints say where). The strategy sizes the vector tile of f, and its "
            "register and unroll budgets, by vec_size"
        )
    samples = facts["samples"]
    if not samples:
        raise StrategyMistake(
            f"{where}: sample(1, {STRATEGY_SEED}) gave no sample: return a strategy whose "
            "space holds schedules of this layer (kata 07's table of classes)"
        )
    if facts["drawn"] < STRATEGY_SAMPLES:
        # An outside learner's max_unroll=1 passed: its space is one schedule, a tile of
        # one accumulator (issue 20).
        mistakes.append(
            f"its space is too small to search: sample({STRATEGY_SAMPLES}, {STRATEGY_SEED}) "
            f"drew {facts['drawn']} schedules of this layer. "
            "Its budgets (max_unroll: how many vector operations a register tile may "
            "unroll) leave no register tile with several accumulators: how large must "
            f"max_unroll be for {STRATEGY_SAMPLES} distinct samples?"
        )
    scalar, narrow, across, parallel = [], {}, {}, {}
    for label, sample, calls in samples:
        try:
            if isinstance(calls, str):
                raise RuntimeError(calls)
            nest = replay(calls, task.backend, task.problem)[1].get_loop_nest()
        except Exception as exc:
            failure = calls if isinstance(calls, str) else f"{type(exc).__name__}: {exc}"
            raise StrategyMistake(
                f"{where}: generating sample {label} ({sample}) on the layer's "
                f"scheduler failed in XTC with {failure}. Return a "
                "strategy built on this graph, whose output node is the conv"
            ) from exc
        axes = loop_nests.loop_axes(nest)
        for node in nest.nodes:
            if node.parallelize:
                parallel.setdefault(tuple(node.parallelize), []).append(label)
        root = nest.root_node
        innermost = loop_nests.loops(root, axes)[-1:]
        if not innermost or innermost[0].name not in root.vectorize:
            scalar.append(label)
        elif innermost[0].axis != "f":
            across.setdefault(innermost[0].name, []).append(label)
        elif innermost[0].size is None or innermost[0].size % lanes:
            narrow.setdefault(innermost[0].size, []).append(label)

    def which(labels, listed=True):
        if len(labels) == len(samples):
            return f"all {len(samples)} samples"
        named = f" ({', '.join(map(str, labels))})" if listed else ""
        return f"{len(labels)} of the {len(samples)} samples{named}"

    if scalar:
        mistakes.append(
            f"{which(scalar)} vectorize nothing: their innermost loop is scalar. XTC's "
            "strategies vectorize the innermost tile of f, the output channels, when built "
            f"with vec_size > 1: here vec_size={lanes}"
        )
    if narrow:
        widths = sorted(narrow.items(), key=lambda item: item[0] or 0)
        mistakes.append(
            f"{which([label for _, ls in widths for label in ls], listed=False)} vectorize a tile "
            f"of f that is not a multiple of this machine's {lanes} lanes, so a vector runs "
            "part empty: "
            + "; ".join(f"{size} element(s) in {', '.join(map(str, ls))}" for size, ls in widths)
            + ": which of kata 07's strategy variants filter their samples so that this "
            "tile is at least vec_size wide?"
        )
    for name, labels in across.items():
        mistakes.append(
            f"{which(labels)} vectorize {name!r}, a loop over {axes.get(name, name)!r}: the "
            "vector runs along f, the output channels (stride 1 in O and W)"
        )
    for loops, labels in parallel.items():
        mistakes.append(
            f"{which(labels)} parallelize {list(loops)}: the harness races its sample on "
            "one core, as the step before schedule_conv's single-threaded tile. Which "
            "keyword of the constructor sets the threads?"
        )
    raise_mistakes(
        StrategyMistake,
        f"{where}: not the strategy the task asks (judged on its samples of seed "
        f"{STRATEGY_SEED}: 'raced' is sample(1, {STRATEGY_SEED})'s, the one the harness "
        f"races; 0 to {STRATEGY_SAMPLES - 1} are sample({STRATEGY_SAMPLES}, {STRATEGY_SEED})'s)",
        mistakes,
    )


# --- schedule_conv ------------------------------------------------------------------------


@pytest.mark.task("schedule_conv")
def test_schedule_conv_computes_the_layer(task):
    task.assert_computes()


#: The task's register tile: 4 output columns or rows (unrolled) by 16 output channels.
TILE_ROWS, TILE_CHANNELS = 4, 16


def tile_size_mistakes(nest) -> list[str]:
    """What differs from the task's 4x16 tile, in a nest that has a register tile (its
    shape checks passed): the tiles inside the reductions, the last one vectorized."""
    nest_loops = loop_nests.loops(nest.root_node, loop_nests.loop_axes(nest))
    reductions = [n for n, loop in enumerate(nest_loops) if loop.axis in ("r", "s", "c")]
    inside = nest_loops[max(reductions, default=-1) + 1 :]
    if not inside:
        return []
    rows = 1
    for loop in inside[:-1]:
        rows *= loop.size or 1
    channels = inside[-1].size
    if (rows, channels) == (TILE_ROWS, TILE_CHANNELS):
        return []
    return [
        f"the register tile is {rows}x{channels} (output columns or rows by channels): "
        f"the task asks for {TILE_ROWS}x{TILE_CHANNELS}, the tile the lesson's table "
        "measured"
    ]


def assert_the_tasks_tile(task) -> None:
    task.assert_shape()
    loop_nests.require(tile_size_mistakes(task.loop_nest()), KATA, task.function)


@pytest.mark.task("schedule_conv")
def test_schedule_conv_has_a_register_tile_inside_the_reductions(task):
    assert_the_tasks_tile(task)


@pytest.mark.perf
@pytest.mark.task("schedule_conv")
def test_schedule_conv_keeps_up_and_beats_a_strategy_sample_where_it_pays(task):
    # A tile of another size than the task's (a 4x8 tile was told only to read --asm,
    # issue 57) is told by the shape test above: a slow one points there, once.
    task.assert_speed(shape_told=tile_size_mistakes(task.loop_nest()))


# --- schedule_conv_parallel ---------------------------------------------------------------


@pytest.mark.task("schedule_conv_parallel")
def test_schedule_conv_parallel_computes_the_layer(task):
    task.assert_computes()


@pytest.mark.task("schedule_conv_parallel")
def test_schedule_conv_parallel_shares_the_output_around_the_register_tile(task):
    assert_the_tasks_tile(task)


@pytest.mark.perf
@pytest.mark.task("schedule_conv_parallel")
def test_schedule_conv_parallel_keeps_up_and_beats_the_sequential_tile_where_it_pays(task):
    task.assert_speed()
