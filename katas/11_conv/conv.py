"""Kata 11: a ResNet18 convolution as a scheduled 7-deep loop nest.

XTC's conv2d takes an NHWC input and RSCF weights, gives an NHWF output, and pads
nothing itself: a layer's padding, when it has any, is a node of its own before it
(pad2d, or XTC's general pad). Its loop nest is

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
    """The catalogue's conv2d layer `name` as an XTC graph: the unpadded input image and
    the weights as its inputs, a pad node for "same" padding (the lesson's "The layer,
    from XTC's catalogue") when that is more than 0 (a pad of 0 is no node at all), then
    the conv2d, with its stride as a pair.

    h and w in the catalogue are the OUTPUT's size: the image is larger."""
    raise NotImplementedError


def conv_strategy(graph: Any) -> Any:
    """An XTC strategy (xtc.search.strategies) over the conv's loop nest, for this machine:
    built on `graph` with this machine's float32 lanes, on one thread, from a class whose
    vector tile of f stays at least one vector wide."""
    raise NotImplementedError


def schedule_conv(sch: Any) -> None:
    """A 4x16 register tile of the output, columns or rows by channels (the channels
    vectorized, the other unrolled), whose accumulators stay in registers across all
    three reductions r, s, c: kata 04's register tile, on the conv's loops."""
    raise NotImplementedError


def schedule_conv_parallel(sch: Any) -> None:
    """schedule_conv, with the output shared by the cores: each core computes its own
    share of the output (whole rows, columns or channels), and the threads start once
    per call."""
    raise NotImplementedError
