"""The harness's peak probe: independent FMA chains on registers, nothing loaded from memory.

Each FMA reads only registers: CHAINS[bits] chains `c = c * a + b` (at least the
8 = 4-cycle latency x 2 FMA units of current x86 cores), with a = b = 0.5 so that every
chain sits at 1.0 (no overflow, no denormal). The compiler cannot fold them: a and b
are arguments, and an empty `asm` takes each chain as input and output at every
iteration. The C is compiled for this host with the system `cc` (the one XTC's runtime
needs) in a temporary directory deleted right after loading, so nothing on disk can go
stale: AVX-512 and AVX2 widths with -march=native, AVX2 only under XTC_KATAS_ISA=avx2
(the harness then compiles every kernel for AVX2), 128-bit vectors elsewhere.

XTC's `evaluate_flops` loads a vector from L1 for every FMA and times each probe once,
so it reads below what the kernels reach. This probe is timed with the statistic the
kernels get (timing.py): the minimum over short samples of SAMPLE_S, in ROUNDS rounds
apart in time; a peak timed differently from the kernels would put them above 100%.
Why, with the measurements: docs/timing.md#the-peak-probe.
"""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from xtc_katas.measure.machine import emulated_isa

#: Vector width (bits) -> (C guard, vector type, splat, FMA, store, float32 lanes).
VECTORS = {
    512: (
        "defined(__AVX512F__)",
        "__m512",
        "_mm512_set1_ps",
        "_mm512_fmadd_ps",
        "_mm512_storeu_ps",
        16,
    ),
    256: (
        "defined(__AVX__) && defined(__FMA__)",
        "__m256",
        "_mm256_set1_ps",
        "_mm256_fmadd_ps",
        "_mm256_storeu_ps",
        8,
    ),
    128: ("1", "v4sf", "V4SF_SPLAT", "V4SF_FMA", "V4SF_STORE", 4),
}
#: Independent chains per width: 2 FMA units x 4 cycles of latency need 8 in flight;
#: 16 zmm on AVX-512 (32 registers), 12 ymm on AVX2 (16 registers, 2 hold a and b).
CHAINS = {512: 16, 256: 12, 128: 12}
UNROLL = 4  # chain steps per loop iteration: the loop's own instructions stay negligible
#: Compiler flags: for this host, or for the ISA the harness emulates (machine.py).
FLAGS = {None: ["-O2", "-march=native"], "avx2": ["-O2", "-mavx2", "-mfma"]}
#: The kernels' sample length (timing.SAMPLE_S, kept equal by tests/test_machine.py; not
#: imported, so that the plugin stays within the layers' depth, tests/test_structure.py).
SAMPLE_S = 2e-4
ROUNDS = 5
SAMPLES = 100  # per round: 500 samples of ~0.2 ms per width, ~0.2 s in all
PAUSE_S = 0.02  # between rounds: the probe sees several moments, as a race's rounds do

PRELUDE = """\
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
/* Keep a chain in a register and make its value unknown to the compiler: no folding. */
#if defined(__AVX512F__)
#define KEEP(v) __asm__ volatile("" : "+v"(v))
#elif defined(__SSE__)
#define KEEP(v) __asm__ volatile("" : "+x"(v))
#elif defined(__aarch64__)
#define KEEP(v) __asm__ volatile("" : "+w"(v))
#else
#define KEEP(v) ((void)0)
#endif
typedef float v4sf __attribute__((vector_size(16)));
#define V4SF_SPLAT(x) ((v4sf){(x), (x), (x), (x)})
#define V4SF_FMA(c, a, b) ((c) * (a) + (b)) /* an FMA under -ffp-contract=fast */
#define V4SF_STORE(p, v) __builtin_memcpy((p), &(v), sizeof(v4sf))

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
"""


def function_source(bits: int) -> str:
    """`double fma_probe_<bits>(iterations, a, b, out)`: seconds for `iterations` loops of
    UNROLL x CHAINS[bits] FMAs; the chains' final values go to `out`."""
    guard, vec, splat, fma, store, lanes = VECTORS[bits]
    chains = range(CHAINS[bits])
    start = "\n    ".join(f"{vec} c{n} = {splat}(a_ + b_);" for n in chains)
    step = "".join(f"        c{n} = {fma}(c{n}, a, b);\n" for n in chains) * UNROLL
    keep = " ".join(f"KEEP(c{n});" for n in chains)
    stores = "\n    ".join(f"{store}(out + {n * lanes}, c{n});" for n in chains)
    return f"""
#if {guard}
double fma_probe_{bits}(int64_t iterations, float a_, float b_, float *out) {{
    {vec} a = {splat}(a_), b = {splat}(b_);
    {start}
    double start = now();
    for (int64_t i = 0; i < iterations; i++) {{
{step}        {keep}
    }}
    double elapsed = now() - start;
    {stores}
    return elapsed;
}}
#endif
"""


def source() -> str:
    """The probe's C source: one function per width, each compiled if the flags allow."""
    return PRELUDE + "".join(function_source(bits) for bits in VECTORS)


@dataclass(frozen=True)
class Probe:
    """A loaded probe: the widths the compiler built for the flags it was given."""

    library: ctypes.CDLL
    flags: tuple[str, ...]
    widths: tuple[int, ...]


@dataclass(frozen=True)
class Reading:
    """The probe's best rate, and how it was obtained (for the lesson and the reports)."""

    fmas_per_s: float
    bits: int
    chains: int
    flags: tuple[str, ...]
    by_width: dict[int, float]
    #: the best reading kept for this CPU (peak_record.py), higher than this process's
    kept: bool = False

    def describe(self) -> str:
        return (
            f"register FMA probe: {self.chains} chains of {self.bits}-bit FMAs, "
            f"cc {' '.join(self.flags)}, best {SAMPLE_S * 1e3:g} ms sample of {ROUNDS * SAMPLES}"
            + (", the best reading kept for this CPU" if self.kept else "")
        )


def compile_probe() -> Probe:
    """Compile source() with `cc` for this host (or the emulated ISA) and load it.

    The shared library lives in a temporary directory removed before returning: Linux
    keeps a loaded library mapped after its file is gone, and nothing is left behind.
    """
    cc = shutil.which("cc")
    if cc is None:
        raise RuntimeError(
            "the peak probe needs a C compiler `cc` (XTC's runtime needs one too); "
            "install one, or set XTC_KATAS_PEAK_GFMAS to your single-core GFMA/s"
        )
    flags = (*FLAGS[emulated_isa()], "-ffp-contract=fast")
    with tempfile.TemporaryDirectory(prefix="xtc-katas-fma-probe-") as tmp:
        src, lib = Path(tmp) / "fma_probe.c", Path(tmp) / "fma_probe.so"
        src.write_text(source())
        done = subprocess.run(
            [cc, *flags, "-shared", "-fPIC", "-o", str(lib), str(src)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"cc {' '.join(flags)} failed on the peak probe:\n{done.stderr}")
        library = ctypes.CDLL(str(lib))
    widths = tuple(bits for bits in VECTORS if hasattr(library, f"fma_probe_{bits}"))
    for bits in widths:
        function = getattr(library, f"fma_probe_{bits}")
        function.restype = ctypes.c_double
        function.argtypes = [ctypes.c_int64, ctypes.c_float, ctypes.c_float, ctypes.c_void_p]
    return Probe(library, flags, widths)


def measure_width(probe: Probe, bits: int) -> float:
    """FMA/s of the `bits`-wide chains: the best sample of ROUNDS x SAMPLES."""
    function = getattr(probe.library, f"fma_probe_{bits}")
    lanes, chains = VECTORS[bits][-1], CHAINS[bits]
    out = (ctypes.c_float * (lanes * chains))()
    iterations = 64
    while function(iterations, 0.5, 0.5, out) < SAMPLE_S:  # also wakes the vector units up
        iterations *= 2
    best = math.inf
    for round_ in range(ROUNDS):
        if round_:
            time.sleep(PAUSE_S)
        best = min(best, *(function(iterations, 0.5, 0.5, out) for _ in range(SAMPLES)))
    if any(value != 1.0 for value in out):  # c = 0.5 c + 0.5 stays at 1.0
        raise RuntimeError(f"the {bits}-bit peak probe computed {list(out)[:4]}..., not 1.0")
    return iterations * UNROLL * chains * lanes / best


def measure() -> Reading:
    """The probe's single-core float32 FMA/s: the fastest width this compile allows.

    On an AVX-512 host both 512- and 256-bit chains run: where 512-bit code lowers the
    clock (or one core has a single 512-bit unit), 256-bit kernels run faster, and the
    peak must be the faster of the two.
    """
    probe = compile_probe()
    widest = [bits for bits in probe.widths if bits >= 256] or list(probe.widths)
    by_width = {bits: measure_width(probe, bits) for bits in widest}
    bits = max(by_width, key=by_width.__getitem__)
    return Reading(by_width[bits], bits, CHAINS[bits], probe.flags, by_width)
