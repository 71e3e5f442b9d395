"""The katas' problems (matmul, matmul + relu, conv), behind one interface, `Problem`: the
harness's own graphs, inputs and answers (numpy in float64), never the learner's.
"""

from __future__ import annotations

import functools
import math
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from threadpoolctl import ThreadpoolController

if TYPE_CHECKING:
    from xtc.graphs.xtc.graph import XTCGraph


class Problem(Protocol):
    """What every generic path of the harness reads of a problem, never a matmul's names.
    A new problem shape is any class that implements it (CONTRIBUTING.md)."""

    #: The graph's name (a C identifier: the kernel's symbol) and a label for messages.
    name: str
    label: str
    #: The node a scheduler schedules, and the axes of its loop nest with their sizes.
    scheduled_node: str
    axis_sizes: dict[str, int]
    #: The loops that sum into one output element: never parallel, never vectorized.
    reduction_axes: tuple[str, ...]
    #: The output's axis that is contiguous in memory (a vector tile's), and its other
    #: axes, one of which a register tile unrolls.
    vector_axis: str
    tile_axes: tuple[str, ...]
    #: What a register tile's unrolled steps hold, in the problem's words ("several rows
    #: of C"): the register tile check's messages say it.
    tile_words: str
    #: The graph's inputs, in order (their tensors' names): messages name them.
    input_names: tuple[str, ...]
    input_shapes: list[tuple[int, ...]]
    dtype: str

    @property
    def dims(self) -> list[str]:
        """The scheduled node's axes, outermost first (its abstract dims)."""
        return list(self.axis_sizes)

    @property
    def fmas(self) -> int:
        """The multiply-adds of one call: the work every % of peak is measured against."""
        return math.prod(self.axis_sizes.values())

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The sizes of the scheduled node's axes that are not reductions."""
        return tuple(n for axis, n in self.axis_sizes.items() if axis not in self.reduction_axes)

    def backend_options(self, backend: str) -> dict[str, bool]:
        """Options for XTC's Backend."""
        return {}

    def graph(self) -> XTCGraph: ...

    def inputs(self, kind: str = "random", seed: int = 0) -> list[np.ndarray]:
        """One input set (make_inputs)."""
        return make_inputs(self.input_shapes, self.dtype, kind, seed)

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The exact-ish answer: numpy in float64."""

    def error_bound(self, inputs: list[np.ndarray]) -> np.ndarray:
        """Per-element bound on a correct kernel's rounding error: a dot product of length
        n summed in any order in a dtype of unit roundoff u is within gamma_n = n u /
        (1 - n u) times |inputs|' answer (Higham, Accuracy and Stability, 3.1). Twice that,
        plus the smallest normal number; relu is 1-Lipschitz and keeps the bound."""
        n = self.fmas // math.prod(self.output_shape)
        u = np.finfo(self.dtype).eps / 2
        magnitude = self.reference([np.abs(x) for x in inputs])
        return 2 * n * u / (1 - n * u) * magnitude + np.finfo(self.dtype).tiny

    def numpy_call(self, inputs: list[np.ndarray], out: np.ndarray) -> None:
        """The problem in numpy, in its own dtype, into `out`, on the BLAS threads the
        caller allows: the yardstick of a race against numpy (kata 08's kind)."""
        raise NotImplementedError(f"no task races {self.label} against numpy")


@dataclass(frozen=True)
class Matmul(Problem):
    """C = A @ B (then R = relu(C) when `relu`), A of shape (I, K), B of shape (K, J)."""

    I: int  # noqa: E741 - the tutorial's names
    J: int
    K: int
    dtype: str = "float32"
    relu: bool = False

    @property
    def name(self) -> str:
        return "matmul_relu" if self.relu else "matmul"

    @property
    def label(self) -> str:
        return f"{self.I}x{self.J}x{self.K} {self.dtype} {self.name}"

    #: The matmul, also when a relu follows it (kata 09 fuses the relu into its nest).
    scheduled_node = "C"
    reduction_axes = ("k",)
    vector_axis = "j"  # C and B are contiguous along it
    tile_axes = ("i",)
    tile_words = "several rows of C"
    input_names = ("A", "B")

    @property
    def axis_sizes(self) -> dict[str, int]:
        return {"i": self.I, "j": self.J, "k": self.K}

    def backend_options(self, backend: str) -> dict[str, bool]:
        """XTC 0.3.2's MLIR backend fuses a consumer only on the tensor dialect, so a
        matmul + relu is built on it, fused or not, for a like-for-like race."""
        return {"use_tensor_dialect": True} if self.relu and backend == "mlir" else {}

    @property
    def input_shapes(self) -> list[tuple[int, int]]:
        return [(self.I, self.K), (self.K, self.J)]

    def graph(self) -> XTCGraph:
        """The problem as an XTC graph, built the tutorial's way (inputs outside the block)."""
        import xtc.graphs.xtc.op as O

        a, b = (
            O.tensor(shape, self.dtype, name=name)
            for shape, name in zip(self.input_shapes, self.input_names, strict=True)
        )
        with O.graph(name=self.name) as gb:
            c = O.matmul(a, b, name=self.scheduled_node)
            if self.relu:
                O.relu(c, name="R")
        return gb.graph

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        a, b = (x.astype(np.float64) for x in inputs)
        with single_threaded_blas():
            c = a @ b
        return np.maximum(c, 0.0) if self.relu else c

    def numpy_call(self, inputs: list[np.ndarray], out: np.ndarray) -> None:
        np.matmul(*inputs, out=out)
        if self.relu:
            np.maximum(out, 0, out=out)


@dataclass(frozen=True)
class Conv2D(Problem):
    """O = conv2d(pad(I), W): NHWC input I, RSCF weights W, NHWF output (XTC's layouts);
    H and W are the output's rows and columns, as in XTC's catalogue (`xtc.artifacts`)."""

    N: int
    H: int
    W: int
    F: int
    R: int
    S: int
    C: int
    stride: int = 1
    pad: int = 0
    dtype: str = "float32"
    layer: str = ""  # the catalogue's name, e.g. "ResNet18_02"

    name = "conv2d"
    scheduled_node = "O"  # the convolution (the pad runs as it is)
    reduction_axes = ("r", "s", "c")
    vector_axis = "f"  # the output channels: contiguous in the output and the weights
    #: Each step of a register tile reads its own pixel of the image and shares the
    #: weights' vector with the others.
    tile_axes = ("w", "h")
    tile_words = "several w or h positions of the output (by 'f')"
    input_names = ("I", "W")

    @property
    def axis_sizes(self) -> dict[str, int]:
        sizes = (self.N, self.H, self.W, self.F, self.R, self.S, self.C)
        return dict(zip("bhwfrsc", sizes, strict=True))

    @property
    def label(self) -> str:
        where = f"{self.layer} " if self.layer else ""
        return (
            f"{where}{self.N}x{self.H}x{self.W}x{self.F} conv {self.R}x{self.S}x{self.C} "
            f"stride {self.stride} pad {self.pad} {self.dtype}"
        )

    @property
    def input_shapes(self) -> list[tuple[int, ...]]:
        """The image has XTC's size (`Exploration.xtc_conv2d_graph`: H * stride + R - 1
        rows once padded), less the padding."""
        rows = self.stride * self.H + self.R - 1 - 2 * self.pad
        columns = self.stride * self.W + self.S - 1 - 2 * self.pad
        return [(self.N, rows, columns, self.C), (self.R, self.S, self.C, self.F)]

    def graph(self) -> XTCGraph:
        """The layer as an XTC graph: pad2d (when pad > 0), then conv2d, named I, W, P, O."""
        import xtc.graphs.xtc.op as O

        image, weights = (
            O.tensor(shape, self.dtype, name=name)
            for shape, name in zip(self.input_shapes, self.input_names, strict=True)
        )
        with O.graph(name=self.name) as gb:
            padded = O.pad2d(image, padding=self.pad, name="P") if self.pad else image
            O.conv2d(padded, weights, stride=(self.stride, self.stride), name=self.scheduled_node)
        return gb.graph

    def reference(self, inputs: list[np.ndarray]) -> np.ndarray:
        """The convolution with numpy: windows of the padded input, then einsum."""
        image, weights = (x.astype(np.float64) for x in inputs)
        p = self.pad
        padded = np.pad(image, ((0, 0), (p, p), (p, p), (0, 0)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, (self.R, self.S), (1, 2))
        # (N, H, W, C, R, S): one window per output element, whatever the image's size
        windows = windows[:, :: self.stride, :: self.stride][:, : self.H, : self.W]
        with single_threaded_blas():
            return np.einsum("nhwcrs,rscf->nhwf", windows, weights, optimize=True)


def make_inputs(
    shapes: list[tuple[int, ...]], dtype: str, kind: str = "random", seed: int = 0
) -> list[np.ndarray]:
    """One input set. Kinds: random (positive, the tutorial's rand), signed, and edge,
    whose zeros, ones, signs and large values show a skipped remainder or a lost sign."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape in shapes:
        if kind == "random":
            x = rng.random(shape)
        elif kind == "signed":
            x = rng.uniform(-1.0, 1.0, shape)
        elif kind == "edge":
            x = rng.choice([0.0, 1.0, -1.0, 0.5, -2.0, 64.0, -64.0], size=shape)
            x.flat[0], x.flat[-1] = 0.0, -64.0
        else:
            raise ValueError(f"unknown input kind {kind!r}")
        arrays.append(np.ascontiguousarray(x, dtype=dtype))
    return arrays


def single_threaded_blas() -> AbstractContextManager[Any]:
    """The harness's own numpy products run on one BLAS thread: OpenBLAS's workers
    busy-wait after a call, and would steal a core from the kernel timed next. One
    controller, made once: a new one scans every loaded library (~1-14 ms a call)."""
    return _blas_controller().limit(limits=1, user_api="blas")


@functools.cache
def _blas_controller() -> ThreadpoolController:
    return ThreadpoolController()


#: The tutorial's problem: a 4x32x512 float32 matmul.
TUTORIAL = Matmul(4, 32, 512)
#: J = 36 is not a multiple of the vector width: two 16-lane vectors and 4 columns left.
SPLIT = Matmul(4, 36, 512)
#: Enough work per call (~17 M FMAs, ~0.15 ms tuned) for two threads to pay for themselves.
LARGE = Matmul(128, 256, 512)
#: The tutorial's strategy problem (section 7): 2 M FMAs, a space worth searching.
STRATEGY = Matmul(64, 128, 256)
#: The tutorial's final challenge: 1 G FMAs, where numpy/OpenBLAS is the yardstick.
CHALLENGE = Matmul(1024, 1024, 1024)

#: Kata 09: a large output (1 MiB) and a short reduction (K = 16): the relu's own pass
#: over C costs about as much as the matmul, the case where fusing could pay.
FUSION = Matmul(512, 512, 16, relu=True)
#: Kata 10, TVM's "How to optimize GEMM" on 512^3: B (1 MiB) and C leave L1 and L2.
GEMM = Matmul(512, 512, 512)

#: Kata 11: ResNet18's first 3x3 stage (conv2_x), from XTC's catalogue
#: (`xtc.artifacts.get_operation("conv2d", "ResNet18_02")`), with its padding of 1.
RESNET18_02 = Conv2D(1, 56, 56, 64, 3, 3, 64, stride=1, pad=1, layer="ResNet18_02")
#: Kata 11's parallel task: the same layer on an 8-row image, so that a parallel call is
#: short enough for the race's short samples to find both cores free on a busy machine,
#: which the whole layer's call is not (docs/timing.md#short-samples).
RESNET18_02_ROWS8 = Conv2D(1, 8, 56, 64, 3, 3, 64, stride=1, pad=1, layer="ResNet18_02 8 rows")
#: The problems by the names the manifest's `problem` keys use.
PROBLEMS: dict[str, Problem] = {
    "tutorial": TUTORIAL,
    "split": SPLIT,
    "large": LARGE,
    "strategy": STRATEGY,
    "challenge": CHALLENGE,
    "fusion": FUSION,
    "gemm": GEMM,
    "resnet18_02": RESNET18_02,
    "resnet18_02_rows8": RESNET18_02_ROWS8,
}
