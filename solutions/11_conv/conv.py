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

import subprocess
import sys
from pathlib import Path
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


def core_caches() -> tuple[int, int]:
    """One core's L1d and L2 in bytes (as kata 07's reference), where docs/cpus.md says
    to read them: Linux's /sys/devices/system/cpu/cpu0/cache (lscpu's lines are totals
    over the cores), or an Apple Silicon performance core's sysctl. XTC's defaults (32
    KiB, 1 MiB) elsewhere."""
    sizes = {"1": 32 * 1024, "2": 1024 * 1024}
    if sys.platform == "darwin":
        keys = ("hw.perflevel0.l1dcachesize", "hw.perflevel0.l2cachesize")
        done = subprocess.run(["sysctl", "-n", *keys], capture_output=True, text=True)
        read = [int(v) for v in done.stdout.split() if v.isdigit()]
        return (read[0], read[1]) if len(read) == 2 else (sizes["1"], sizes["2"])
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        level, kind, size = ((index / n).read_text().strip() for n in ("level", "type", "size"))
        if kind in ("Data", "Unified") and level in sizes and size.endswith("K"):
            sizes[level] = int(size[:-1]) * 1024
    return sizes["1"], sizes["2"]


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

    vectors = lanes()
    registers = 16 if vectors == 8 else 32  # ymm0-15 (AVX2), zmm0-31 (AVX-512), v0-v31 (NEON)
    l1, l2 = core_caches()
    # The filters' defaults are 32 registers, 32 KiB and 1 MiB, whatever the machine: with
    # AVX2's 16 they would keep even tiles whose accumulators alone spill (the filter
    # counts only accumulators: kata 07). On the lessons' CPUs
    # (docs/cpus.md) sample(1, 0) is the same as with the defaults.
    return Strategy_PPRPRPvr(
        graph,
        vec_size=vectors,
        max_unroll=64,
        threads=1,
        vreg_num=registers,
        l1_size=l1,
        l2_size=l2,
    )


def schedule_conv(sch: Any) -> None:
    """A register tile of the output, w by f (f vectorized, w unrolled), inside the
    reductions r, s, c."""
    sch.strip_mine("w", {"w1": COLUMNS})
    sch.strip_mine("f", {"f1": CHANNELS})
    sch.interchange(["h", "b", "w", "f", "r", "s", "c", "w1", "f1"])
    sch.unroll({"w1": COLUMNS})
    sch.vectorize(["f1"])


def schedule_conv_parallel(sch: Any) -> None:
    """schedule_conv, with the output shared by the cores: here its rows h."""
    schedule_conv(sch)
    sch.parallelize(["h"])
