"""Kata 11, reference solution: a ResNet18 convolution as a scheduled 7-deep loop nest.

XTC's conv2d takes an NHWC input and RSCF weights, gives an NHWF output, and pads
nothing itself: padding is a pad2d node before it. Its loop nest is

    for b, h, w, f:            output pixel (h, w), output channel f   (parallel axes)
      for r, s, c:             kernel row, kernel column, input channel (reductions)
        O[b, h, w, f] += P[b, h*stride + r, w*stride + s, c] * W[r, s, c, f]

    from xtc.artifacts import get_operation
    get_operation("conv2d", "ResNet18_02")  # {"dims": {"n", "h", "w", "f", "r", "s", "c"},
                                            #  "params": {"SH", "SW"}}; h, w: output size

Read README.md in this folder first, then run: pytest katas/11_conv
"""

from typing import Any

#: The register tile: 4 output columns (unrolled) x 16 output channels (vectorized).
#: 4 x 16 / lanes accumulators: 4 on AVX-512, 8 on AVX2, 16 on NEON (where 8 x 16 would
#: need 32 + 4 + 1 = 37 of the 32 vector registers). On XTC 0.3.2's MLIR it is the
#: fastest tile measured (see the lesson): 8 x 16 or 4 x 32 ran 13 to 17 times slower
#: (AMD EPYC family 26).
COLUMNS = 4
CHANNELS = 16


def lanes() -> int:
    """float32 lanes of this CPU's vectors, as XTC reads them (16 on AVX-512, 8 on AVX2, 4
    on NEON)."""
    from xtc.utils.cpu import cpu_info

    return int(cpu_info()["vsize"]["float32"])


def conv_layer_graph(name: str, dtype: str = "float32") -> Any:
    """The catalogue's conv2d layer `name` as an XTC graph: the unpadded input I, the
    weights W, a pad2d node P for "same" padding ((r - 1) // 2), and the conv2d O.

    h and w in the catalogue are the OUTPUT's size; XTC sizes the input h * SH + r - 1
    rows once padded (w * SW + s - 1 columns), so I has that less 2 * pad."""
    import xtc.graphs.xtc.op as O
    from xtc.artifacts import get_operation

    operation = get_operation("conv2d", name)
    d, stride = operation["dims"], (operation["params"]["SH"], operation["params"]["SW"])
    pad = (d["r"] - 1) // 2
    rows = d["h"] * stride[0] + d["r"] - 1 - 2 * pad
    columns = d["w"] * stride[1] + d["s"] - 1 - 2 * pad
    image = O.tensor((d["n"], rows, columns, d["c"]), dtype, name="I")
    weights = O.tensor((d["r"], d["s"], d["c"], d["f"]), dtype, name="W")
    with O.graph(name="conv2d") as gb:
        padded = O.pad2d(image, padding=pad, name="P") if pad else image
        O.conv2d(padded, weights, stride=stride, name="O")
    return gb.graph


def conv_strategy(graph: Any) -> Any:
    """An XTC strategy (xtc.search.strategies) over the conv's loop nest, for this machine."""
    from xtc.search.strategies import Strategy_PPRPRPvr

    return Strategy_PPRPRPvr(graph, vec_size=lanes(), max_unroll=64, threads=1)


def schedule_conv(sch: Any) -> None:
    """A register tile of the output, w by f (f vectorized, w unrolled), inside the
    reductions r, s, c."""
    sch.strip_mine("w", {"w1": COLUMNS})
    sch.strip_mine("f", {"f1": CHANNELS})
    sch.interchange(["h", "b", "w", "f", "r", "s", "c", "w1", "f1"])
    sch.unroll({"w1": COLUMNS})
    sch.vectorize(["f1"])


def schedule_conv_parallel(sch: Any) -> None:
    """schedule_conv, with the output rows h shared by the cores."""
    schedule_conv(sch)
    sch.parallelize(["h"])
