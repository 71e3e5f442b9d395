"""Kata 11's judgements of conv_strategy and conv_layer_graph, as a learner meets them.

Each answer is a function body planted in a copy of the repository (repo_copy.py), the way
tests/test_learner_answers.py does it: one answer per function in a copy, one pytest run
of katas/11_conv judges them. A wrong answer's tests fail with words that name its
cause; a right answer that differs from the reference passes every test of its
function, on both backends. Some rounds run as on an AVX2 machine (XTC_KATAS_ISA=avx2:
8 float32 lanes, xtc_katas/measure/machine.py), where a vec_size of 16 is wrong.

The XTC facts the graph judgement rests on (a pad that pads nothing does not compile on
TVM, an int stride compiles on neither backend, conv2d's check of its stride talks about
pad2d) are checked here too, in this process: if XTC changes, these tests say which
judgement to revisit.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tools.flakecheck import load_answers
from xtc_katas import ROOT
from xtc_katas.kata.manifest import find
from xtc_katas.kata.problems import Conv2D, make_inputs

KATA = 11


catalogue = load_answers()  # tests/answers.py: one way to plant and judge an answer
Answer, failed_tests = catalogue.Answer, catalogue.failed_tests


def judge(tmp_path, answers: list[Answer], isa: str | None = None) -> tuple[int, str]:
    """One pytest run of kata 11's tests, not the races, in a copy holding `answers`."""
    return catalogue.judge(tmp_path, KATA, answers, "-m", "not perf", isa=isa or "")


# --- the answers --------------------------------------------------------------------------

LANES = '    from xtc.utils.cpu import cpu_info\n    lanes = cpu_info()["vsize"]["float32"]\n'


def strategy(cls: str, vec_size: str = "lanes", threads: int = 1, on: str = "graph") -> str:
    return (
        LANES
        + f"    from xtc.search.strategies import {cls}\n"
        + f"    return {cls}({on}, vec_size={vec_size}, max_unroll=64, threads={threads})\n"
    )


#: A stand-in with the two methods the harness calls: every sample generates nothing,
#: so the "sample" is the naive kernel, which computes the layer.
FAKE_STRATEGY = (
    "    class Strategy:\n"
    "        def sample(self, num, seed=0):\n"
    "            return iter([[1]] * num)\n"
    "        def generate(self, scheduler, sample):\n"
    "            pass\n"
    "    return Strategy()\n"
)
#: A real strategy class whose generate() schedules nothing.
IDLE_SUBCLASS = (
    LANES + "    from xtc.search.strategies import Strategy_PPRPRPvr\n"
    "    class Idle(Strategy_PPRPRPvr):\n"
    "        def generate(self, scheduler, sample):\n"
    "            pass\n"
    "    return Idle(graph, vec_size=lanes, max_unroll=64, threads=1)\n"
)
#: A real strategy class whose sample() repeats its best sample: no search space left.
LYING_SUBCLASS = (
    LANES + "    from xtc.search.strategies import Strategy_PPRPRPvr\n"
    "    class Lying(Strategy_PPRPRPvr):\n"
    "        def sample(self, num, seed=None):\n"
    "            best = next(iter(super().sample(1, 0)))\n"
    "            return iter([list(best) for _ in range(num)])\n"
    "    return Lying(graph, vec_size=lanes, max_unroll=64, threads=1)\n"
)
LAYER = (
    "import xtc.graphs.xtc.op as O",
    "from xtc.artifacts import get_operation",
    'op = get_operation("conv2d", name)',
    'd, sh, sw = op["dims"], op["params"]["SH"], op["params"]["SW"]',
    'pad = (d["r"] - 1) // 2',
    'rows = d["h"] * sh + d["r"] - 1 - 2 * pad',
    'columns = d["w"] * sw + d["s"] - 1 - 2 * pad',
)


def graph(padded: str, stride: str = "(sh, sw)", names: tuple[str, ...] = ()) -> str:
    """A conv_layer_graph body: `padded` is the expression of the conv's input from `i`."""
    image, weights, conv, name = names or ("I", "W", "O", "conv2d")
    lines = (
        *LAYER,
        f'i = O.tensor((d["n"], rows, columns, d["c"]), dtype, name="{image}")',
        f'w = O.tensor((d["r"], d["s"], d["c"], d["f"]), dtype, name="{weights}")',
        f'with O.graph(name="{name}") as gb:',
        f"    p = {padded}",
        f'    O.conv2d(p, w, stride={stride}, name="{conv}")',
    )
    return "".join(f"    {line}\n" for line in lines) + "    return gb.graph\n"


PAD2D = 'O.pad2d(i, padding=pad, name="P") if pad else i'

SAMPLES = "conv_strategy_samples"
STRATEGY_MISTAKE = "11_conv › conv_strategy(graph): not the strategy the task asks"

#: Learner review: weights laid out (f, r, s, c), as PyTorch does; ResNet18_02's test showed
#: only XTC's "unexpected with shapes" (the 3x3 layer's test named the layout).
WEIGHTS_FRSC = graph(PAD2D).replace(
    'O.tensor((d["r"], d["s"], d["c"], d["f"])', 'O.tensor((d["f"], d["r"], d["s"], d["c"])'
)

#: Wrong answers, in rounds of one answer per function, and the ISA each round runs as.
WRONG = [
    (
        None,
        [
            Answer(
                "conv_strategy",
                FAKE_STRATEGY,
                SAMPLES,
                (
                    "11_conv › conv_strategy(graph) returned a Strategy (defined in conv.py)",
                    "not an instance of a strategy class of xtc.search.strategies",
                ),
            ),
            # A learner who always pads: right in XTC's graph and on MLIR, not on TVM.
            Answer(
                "conv_layer_graph",
                graph('O.pad2d(i, padding=pad, name="P")'),
                "conv_layer_graph_computes_small and 1x1",
                ("the pad2d node 'P' pads nothing", "Any must take at least 1 argument"),
            ),
        ],
    ),
    (
        None,
        [
            Answer(
                "conv_strategy",
                strategy("Strategy_PPRPRPvr", vec_size="4"),
                SAMPLES,
                (
                    STRATEGY_MISTAKE,
                    "it is built with vec_size=4; this machine's vectors hold",
                    "that is not a multiple of this machine's",
                    "part empty: 4 element(s) in",
                ),
            ),
            Answer(
                "conv_layer_graph",
                graph(PAD2D, stride="sh"),
                "conv_layer_graph_builds or conv_layer_graph_compiles",
                ("the conv2d's stride is 1", "Give the pair, stride=(SH, SW)"),
            ),
        ],
    ),
    (
        None,
        [
            Answer(
                "conv_strategy",
                strategy("Strategy_PPRPRPvr", vec_size="1"),
                SAMPLES,
                (STRATEGY_MISTAKE, "it is built with vec_size=1", "vectorize nothing"),
            ),
            Answer(
                "conv_layer_graph",
                graph(PAD2D, stride="[sh, sw]"),
                "conv_layer_graph_builds",
                ("XTC rejected the conv2d's stride with", "give a tuple, stride=(SH, SW)"),
            ),
        ],
    ),
    (
        None,
        [
            Answer(
                "conv_strategy",
                strategy("Strategy_PPRPRP"),
                SAMPLES,
                (STRATEGY_MISTAKE, "that is not a multiple of this machine's", "1 element(s) in"),
            ),
        ],
    ),
    (
        None,
        [
            Answer(
                "conv_strategy",
                strategy("Strategy_PPRPRPvr", threads=2),
                SAMPLES,
                (
                    STRATEGY_MISTAKE,
                    "parallelize ['b', 'h', 'w', 'f']: the harness races its sample on one core",
                ),
            ),
        ],
    ),
    (
        None,
        [
            Answer(
                "conv_strategy",
                IDLE_SUBCLASS,
                SAMPLES,
                ("returned a Idle (defined in conv.py), a subclass of XTC's Strategy_PPRPRPvr",),
            )
        ],
    ),
    (
        None,
        [
            # Learner review: a subclass whose sample() repeats one good sample passed.
            Answer(
                "conv_strategy",
                LYING_SUBCLASS,
                "conv_strategy",
                ("a subclass of XTC's Strategy_PPRPRPvr that may change what it samples",),
            ),
            Answer(
                "conv_layer_graph",
                WEIGHTS_FRSC,
                "conv_layer_graph_builds",
                ("the weights as (r, s, c, f): for this layer, weights of shape (3, 3, 64, 64)",),
            ),
        ],
    ),
    (
        "avx2",
        [
            Answer(
                "conv_strategy",
                strategy("Strategy_PPRPRPvr", vec_size="16"),
                SAMPLES,
                (
                    STRATEGY_MISTAKE,
                    "it is built with vec_size=16; this machine's vectors hold 8 float32 lanes",
                ),
            ),
        ],
    ),
]

#: Right answers that differ from the reference, in rounds: every test of their
#: functions passes, on both backends.
RIGHT = [
    (
        None,
        [
            # Through XTC's registry, with its defaults (max_unroll=256, threads=1).
            Answer(
                "conv_strategy",
                LANES
                + "    from xtc.search.strategies import Strategies\n"
                + '    return Strategies.create("tile_pprprp_vr", graph, vec_size=lanes)\n',
                "conv_strategy",
            ),
            # Padding as a pair, other names for the tensors, the nodes and the graph.
            Answer(
                "conv_layer_graph",
                graph(
                    'O.pad2d(i, padding=(pad, pad), name="padded") if pad else i',
                    names=("image", "weights", "conv", "resnet_layer"),
                ),
                "conv_layer_graph",
            ),
        ],
    ),
    (
        None,
        [
            # Built on its own graph of the same layer, not the one it is given.
            Answer(
                "conv_strategy",
                strategy("Strategy_PPRPRPvr", on='conv_layer_graph("ResNet18_02")'),
                "conv_strategy",
            ),
            # XTC's general pad, over the rows and columns only.
            Answer(
                "conv_layer_graph",
                graph('O.pad(i, padding={1: (pad, pad), 2: (pad, pad)}, name="P") if pad else i'),
                "conv_layer_graph",
            ),
        ],
    ),
    (
        "avx2",
        [
            Answer("conv_strategy", strategy("Strategy_PPRPRPvr"), "conv_strategy"),
            Answer(
                "conv_layer_graph",
                graph('O.pad2d(i, padding=((pad, pad), (pad, pad)), name="P") if pad else i'),
                "conv_layer_graph",
            ),
        ],
    ),
]


def ids(rounds) -> list[str]:
    return [
        f"{n}-{isa or 'native'}-{'-'.join(a.function for a in answers)}"
        for n, (isa, answers) in enumerate(rounds)
    ]


@pytest.mark.slow
@pytest.mark.parametrize(("isa", "answers"), WRONG, ids=ids(WRONG))
def test_wrong_conv_answers_fail_naming_their_cause(tmp_path, isa, answers):
    code, out = judge(tmp_path, answers, isa)
    assert code == 1, out
    failed = failed_tests(out)
    for answer in answers:
        assert any(answer.function in name for name in failed), (answer.function, out)
        for words in answer.expected:
            assert words in out, (answer.function, words, out)


@pytest.mark.slow
@pytest.mark.parametrize(("isa", "answers"), RIGHT, ids=ids(RIGHT))
def test_right_conv_answers_that_differ_from_the_reference_pass(tmp_path, isa, answers):
    code, out = judge(tmp_path, answers, isa)
    assert code == 0, out
    assert "passed" in out and not failed_tests(out), out


# --- the XTC facts the graph judgement rests on -------------------------------------------


def kata_tests():
    """katas/11_conv/test_conv.py as a module: the words it keys on."""
    path = ROOT / "katas" / find(KATA).id / "test_conv.py"
    spec = importlib.util.spec_from_file_location("kata11_test_conv", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ONE_BY_ONE = Conv2D(1, 4, 4, 8, 1, 1, 5)  # test_conv.py's "xtc-katas-1x1"


def one_by_one(padding=None, stride=(1, 1)):
    """The 1x1 layer's graph; `padding`: a pad2d of it before the conv2d."""
    import xtc.graphs.xtc.op as O

    image = O.tensor(ONE_BY_ONE.input_shapes[0], "float32", name="I")
    weights = O.tensor(ONE_BY_ONE.input_shapes[1], "float32", name="W")
    with O.graph(name="conv2d") as gb:
        padded = image if padding is None else O.pad2d(image, padding=padding, name="P")
        O.conv2d(padded, weights, stride=stride, name="O")
    return gb.graph


def node(graph, name: str):
    return next(node for node in graph.nodes.values() if node.name == name)


def compile_and_run(backend: str, graph, tmp_path, monkeypatch) -> np.ndarray:
    from xtc_katas.measure import numerics
    from xtc_katas.measure.backends import KataBackend
    from xtc_katas.measure.workdir import Workdir

    monkeypatch.chdir(tmp_path)  # TVM writes ./tmpXXXX/
    impl = KataBackend(backend).Backend(graph)
    module = Workdir(tmp_path).compile(impl, impl.get_scheduler().schedule(), stem=backend)
    return numerics.run(module, ONE_BY_ONE, ONE_BY_ONE.inputs("signed", seed=1))


def test_a_pad2d_of_zero_computes_the_layer_and_compiles_on_mlir_not_on_tvm(tmp_path, monkeypatch):
    from xtc.graphs.xtc.data import XTCTensor

    graph = one_by_one(padding=0)
    assert node(graph, "P").operator.attrs.padding == {}  # what check_graph keys on
    inputs = make_inputs(ONE_BY_ONE.input_shapes, "float32", "signed", seed=1)
    forward = graph.forward([XTCTensor(x) for x in inputs])[0].numpy()
    np.testing.assert_allclose(forward, ONE_BY_ONE.reference(inputs), rtol=1e-4, atol=1e-4)
    want = ONE_BY_ONE.reference(ONE_BY_ONE.inputs("signed", seed=1))
    got = compile_and_run("mlir", graph, tmp_path, monkeypatch)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    with pytest.raises(Exception) as raised:
        compile_and_run("tvm", one_by_one(padding=0), tmp_path, monkeypatch)
    assert "Any must take at least 1 argument" in str(raised.value.__cause__), raised.value


def test_an_int_stride_builds_a_graph_that_neither_backend_compiles(tmp_path, monkeypatch, backend):
    # `backend`: the plugin's fixture, MLIR and TVM (or --backend's)
    graph = one_by_one(stride=1)
    assert node(graph, "O").operator.attrs.stride == 1  # what check_graph keys on
    with pytest.raises(Exception) as raised:
        compile_and_run(backend.name, graph, tmp_path, monkeypatch)
    error = raised.value.__cause__ or raised.value
    assert isinstance(error, TypeError) and "cannot unpack" in str(error), raised.value


def test_conv2d_rejects_a_list_stride_with_the_words_the_kata_keys_on():
    with pytest.raises(AssertionError) as raised:
        one_by_one(stride=[1, 1])
    assert kata_tests().CONV2D_STRIDE_CHECK in str(raised.value)
    with pytest.raises(AssertionError) as pad2d:  # pad2d's own message is not conv2d's
        one_by_one(padding=[1, 1])
    assert kata_tests().CONV2D_STRIDE_CHECK not in str(pad2d.value)


def graph_of_image(shape: tuple[int, ...]):
    """The 1x1 layer's conv2d on an image of `shape`: a learner's wrong image."""
    import xtc.graphs.xtc.op as O

    image = O.tensor(shape, "float32", name="I")
    weights = O.tensor(ONE_BY_ONE.input_shapes[1], "float32", name="W")
    with O.graph(name="conv2d") as gb:
        O.conv2d(image, weights, stride=(1, 1), name="O")
    return gb.graph


@pytest.mark.parametrize(
    ("shape", "words"),
    [
        # two images for the catalogue's one: the layout is named, not the image's size
        ((2, 4, 4, 5), "an NHWC image has four dims, the catalogue's n first and its c last"),
        # a row short: the mistake is named (too few), not the rows the layer takes
        ((1, 3, 4, 5), "the image has 3 rows and 4 columns, too few for a 4x4 output"),
    ],
)
def test_a_wrong_image_is_told_its_mistake_not_the_answer(shape, words):
    # Teacher's report on a678371: the messages printed "expected (n, rows, columns, c) =
    # (1, 56, 56, 64)" and "this layer takes 56 rows", the answer hint 3 asks for.
    graph = graph_of_image(shape)
    with pytest.raises(AssertionError) as raised:
        kata_tests().check_graph(graph, ONE_BY_ONE, "xtc-katas-1x1")
    message = str(raised.value).split("\nassert ")[0]
    assert words in message, message
    assert str(ONE_BY_ONE.input_shapes[0]) not in message, message
    assert "this layer takes" not in message, message
