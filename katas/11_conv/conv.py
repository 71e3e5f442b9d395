"""Kata 11: a ResNet18 convolution as a scheduled 7-deep loop nest.

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


def conv_layer_graph(name: str, dtype: str = "float32") -> Any:
    """The catalogue's conv2d layer `name` as an XTC graph: the unpadded input I, the
    weights W, a pad2d node P for "same" padding ((r - 1) // 2), and the conv2d O.

    h and w in the catalogue are the OUTPUT's size; XTC sizes the input h * SH + r - 1
    rows once padded (w * SW + s - 1 columns), so I has that less 2 * pad."""
    raise NotImplementedError


def conv_strategy(graph: Any) -> Any:
    """An XTC strategy (xtc.search.strategies) over the conv's loop nest, for this machine."""
    raise NotImplementedError


def schedule_conv(sch: Any) -> None:
    """A register tile of the output, w by f (f vectorized, w unrolled), inside the
    reductions r, s, c."""
    raise NotImplementedError


def schedule_conv_parallel(sch: Any) -> None:
    """schedule_conv, with the output rows h shared by the cores."""
    raise NotImplementedError
