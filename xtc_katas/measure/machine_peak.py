"""The machine's single-core float32 peak, from the harness's register FMA probe, measured
at most once per process (XTC_KATAS_PEAK_GFMAS, GFMA/s of ONE core, skips it).

The probe runs CHAINS[bits] independent chains `c = c * a + b` on registers, compiled
with the system `cc` for this host (or XTC_KATAS_ISA) and timed as the kernels are, the
best of short samples: a peak timed otherwise would put the kernels above 100%. Noise
only lowers a reading, so the best this CPU has shown is kept (best_kept). Why, and why
not XTC's `evaluate_flops` (`main` shows both): docs/timing.md#the-peak-probe.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any

from xtc_katas.measure import machine, machine_description, module_cache

#: Vector width (bits) -> (C guard, vector type, intrinsics' prefix, float32 lanes). The
#: 128-bit chains are GCC's and clang's vector extension: SSE on x86, NEON's fmla on ARM.
VECTORS = {
    512: ("defined(__AVX512F__)", "__m512", "_mm512", 16),
    256: ("defined(__AVX__) && defined(__FMA__)", "__m256", "_mm256", 8),
    128: ("1", "v4sf", "v4sf", 4),
}
LATENCY = 4  # cycles of a vector FMA, on every core the lessons name


def chains(simd: machine_description.Vectors) -> int:
    """Independent chains: twice the FMAs that fill every FMA pipe over its latency, within
    the registers (2 hold a and b, 2 spare). AVX-512 16, AVX2 and SSE 12, NEON 28."""
    return min(2 * simd.fma_units * LATENCY, simd.registers - 4)


#: Independent chains per width, for this machine's ISA family.
FAMILY = machine_description.ISAS.get(
    machine_description.arch(), machine_description.ISAS["x86_64"]
)
CHAINS = {simd.bits: chains(simd) for simd in FAMILY}
UNROLL = 4  # chain steps per loop iteration: the loop's own instructions stay negligible
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
#define v4sf_set1_ps(x) ((v4sf){(x), (x), (x), (x)})
#define v4sf_fmadd_ps(c, a, b) ((c) * (a) + (b)) /* an FMA under -ffp-contract=fast */
#define v4sf_storeu_ps(p, v) __builtin_memcpy((p), &(v), sizeof(v4sf))

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
"""


def function_source(bits: int) -> str:
    """`double fma_probe_<bits>(iterations, a, b, out)`: seconds for `iterations` loops of
    UNROLL x CHAINS[bits] FMAs; the chains' final values go to `out`."""
    guard, vec, prefix, lanes = VECTORS[bits]
    chains = range(CHAINS[bits])
    start = "\n    ".join(f"{vec} c{n} = {prefix}_set1_ps(a_ + b_);" for n in chains)
    step = "".join(f"        c{n} = {prefix}_fmadd_ps(c{n}, a, b);\n" for n in chains) * UNROLL
    keep = " ".join(f"KEEP(c{n});" for n in chains)
    stores = "\n    ".join(f"{prefix}_storeu_ps(out + {n * lanes}, c{n});" for n in chains)
    return f"""
#if {guard}
double fma_probe_{bits}(int64_t iterations, float a_, float b_, float *out) {{
    {vec} a = {prefix}_set1_ps(a_), b = {prefix}_set1_ps(b_);
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


@dataclass(frozen=True)
class Reading:
    """The probe's best rate, and how it was obtained (for the lesson and the reports)."""

    fmas_per_s: float
    bits: int
    chains: int
    flags: tuple[str, ...]
    by_width: dict[int, float]
    kept: bool = False  # the best reading kept for this CPU, higher than this process's

    def describe(self) -> str:
        return (
            f"register FMA probe: {self.chains} chains of {self.bits}-bit FMAs, "
            f"cc {' '.join(self.flags)}, best {SAMPLE_S * 1e3:g} ms sample of {ROUNDS * SAMPLES}"
            + (", the best reading kept for this CPU" if self.kept else "")
        )


@dataclass(frozen=True)
class Probe:
    """A loaded probe: the widths the compiler built for the flags it was given."""

    library: ctypes.CDLL
    flags: tuple[str, ...]
    widths: tuple[int, ...]


def probe_flags() -> tuple[str, ...]:
    """The probe's `cc` flags: this host's ISA, or XTC_KATAS_ISA's."""
    return ("-O2", *machine_description.native_cc_flags(), "-ffp-contract=fast")


def compile_probe() -> Probe:
    """Compile one function per width (those the flags allow) with `cc`, once per machine
    (module_cache.built_copy: kept by its source, flags, compiler, CPU and XTC's
    version; 0.5 s a run otherwise), and load it from a fresh copy in a temporary
    directory (a loaded library stays mapped)."""
    cc = shutil.which("cc")
    if cc is None:
        raise RuntimeError(
            "the peak probe needs a C compiler `cc` (XTC's runtime needs one too); "
            "install one, or set XTC_KATAS_PEAK_GFMAS to your single-core GFMA/s"
        )
    flags = probe_flags()
    source = PRELUDE + "".join(function_source(bits) for bits in VECTORS if bits in CHAINS)

    def build(lib: Path) -> None:
        src = lib.with_suffix(".c")
        src.write_text(source)
        done = subprocess.run(
            [cc, *flags, "-shared", "-fPIC", "-o", str(lib), str(src)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            raise RuntimeError(f"cc {' '.join(flags)} failed on the peak probe:\n{done.stderr}")

    key = {"probe": source, "flags": flags, "compiler": module_cache.compiler_version()}
    with tempfile.TemporaryDirectory(prefix="xtc-katas-fma-probe-") as tmp:
        lib = Path(tmp) / "fma_probe.so"
        module_cache.built_copy("fma-probe", key, lib, build)
        library = ctypes.CDLL(str(lib))
    widths = tuple(bits for bits in VECTORS if hasattr(library, f"fma_probe_{bits}"))
    for bits in widths:
        function = getattr(library, f"fma_probe_{bits}")
        function.restype = ctypes.c_double
        function.argtypes = [ctypes.c_int64, ctypes.c_float, ctypes.c_float, ctypes.c_void_p]
    return Probe(library, flags, widths)


def measure_width(library: ctypes.CDLL, bits: int) -> float:
    """FMA/s of the `bits`-wide chains: the best sample of ROUNDS x SAMPLES."""
    function = getattr(library, f"fma_probe_{bits}")
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
    """The probe's single-core float32 FMA/s: the fastest width this compile allows. On an
    AVX-512 host the 256-bit chains run too: where 512-bit code lowers the clock, or a
    core runs a 512-bit FMA as two halves, 256-bit kernels run faster."""
    probe = compile_probe()
    widest = [bits for bits in probe.widths if bits >= 256] or list(probe.widths)
    by_width = {bits: measure_width(probe.library, bits) for bits in widest}
    bits = max(by_width, key=by_width.__getitem__)
    return Reading(by_width[bits], bits, CHAINS[bits], probe.flags, by_width)


PEAK_ENV = "XTC_KATAS_PEAK_GFMAS"


def override() -> float | None:
    """XTC_KATAS_PEAK_GFMAS in FMA/s, or None when unset."""
    value = os.environ.get(PEAK_ENV)
    if not value:
        return None
    peak = float(value) * 1e9
    if peak <= 0:
        raise ValueError(f"{PEAK_ENV}={value!r} must be a positive number of GFMA/s")
    return peak


def key_of(reading: Reading) -> str:
    """What a kept reading must match: this CPU and this probe (its width, chains and
    flags: an emulated ISA is another probe)."""
    cpu = machine.cpu_identity()
    return "\n".join([cpu, f"probe {reading.bits}-bit x {reading.chains}", *reading.flags])


def best_kept(reading: Reading) -> Reading:
    """`reading`, or the best kept for this CPU and probe if that is higher; a higher
    `reading` is kept for the next processes."""
    key = key_of(reading)
    kept = module_cache.read_record("peak", key)
    if not isinstance(kept, (int, float)):
        kept = 0.0  # none yet, damaged or another CPU's: this reading stands
    if kept > reading.fmas_per_s:
        by_width = {**reading.by_width, reading.bits: kept}
        return replace(reading, fmas_per_s=kept, by_width=by_width, kept=True)
    module_cache.write_record("peak", key, reading.fmas_per_s)
    return reading


#: Readings in a row that did not beat the kept peak, after which a process takes it
#: without probing (0.2 s of a run quiet, 0.3-0.8 s under a load of 6-12 on a 2-vCPU AMD
#: EPYC family 25 model 1): noise only lowers a reading, and a kernel that runs faster
#: than the peak still probes again (reprobe).
STOOD = 3


def _settled_key() -> str:
    """What the settled reading is kept under: this CPU and the probe, both known before
    it runs (key_of needs the width a reading found fastest)."""
    return "\n".join([machine.cpu_identity(), f"chains {CHAINS}", *probe_flags()])


def _settled(kept: Any) -> tuple[Reading, int] | None:
    """The reading kept as settled and how many readings in a row it stood against; None
    when there is none, or it is damaged (a file of the user's cache: any JSON)."""
    try:
        reading = Reading(
            float(kept["fmas_per_s"]),
            int(kept["bits"]),
            int(kept["chains"]),
            tuple(str(flag) for flag in kept["flags"]),
            {int(bits): float(rate) for bits, rate in kept["by_width"].items()},
            kept=True,
        )
        stood = int(kept["stood"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    return (reading, stood) if reading.fmas_per_s > 0 else None


@cache
def probe_reading() -> Reading:
    """The register probe's reading, measured once per process, or the best kept; the kept
    one alone once it stood against STOOD readings in a row, until a process probes
    again (reprobe)."""
    key = _settled_key()
    settled = _settled(module_cache.read_record("peak-settled", key))
    if settled is not None and settled[1] >= STOOD and not _reprobed:
        return settled[0]
    reading = best_kept(measure())
    stood = 0
    if settled is not None and reading.kept and reading.fmas_per_s == settled[0].fmas_per_s:
        stood = settled[1] + 1
    kept = {**dataclasses.asdict(reading), "stood": stood}
    module_cache.write_record("peak-settled", key, kept)
    return reading


#: How many times a process may probe again because a kernel ran faster than the peak.
REPROBES = 2
_reprobed = 0


def reprobe() -> bool:
    """Probe the peak again, when a kernel ran faster than it, at most REPROBES times per
    process; True if it rose. Never with XTC_KATAS_PEAK_GFMAS: the user's figure stands."""
    global _reprobed
    if override() is not None or _reprobed >= REPROBES:
        return False
    _reprobed += 1
    before = peak_fmas_per_s()
    probe_reading.cache_clear()
    peak_fmas_per_s.cache_clear()
    return peak_fmas_per_s() > before


@cache
def peak_fmas_per_s() -> float:
    """Single-core float32 FMA/s: XTC_KATAS_PEAK_GFMAS, else the register probe."""
    given = override()
    return given if given is not None else probe_reading().fmas_per_s


def peak_source() -> str:
    """Where peak_fmas_per_s() comes from, for a report's header."""
    given = override()
    if given is not None:
        return f"{given / 1e9:.1f} GFMA/s per core, from {PEAK_ENV}"
    reading = probe_reading()
    return f"{reading.fmas_per_s / 1e9:.1f} GFMA/s per core, {reading.describe()}"


def summary_lines() -> list[str]:
    """For a summary that showed % of peak: where the peak came from (nothing when this
    process measured none)."""
    if not peak_fmas_per_s.cache_info().currsize:
        return []
    return [f"peak: {peak_source()}"]


def main(argv: list[str] | None = None) -> int:
    """Both peaks side by side, `--calls` times each, on this machine."""
    from xtc.runtimes.host import HostRuntime

    parser = argparse.ArgumentParser(prog="python -m xtc_katas.measure.machine_peak")
    parser.add_argument("--calls", type=int, default=5, help="readings of each probe")
    args = parser.parse_args(argv)
    print(machine.describe())
    probe = [measure() for _ in range(args.calls)]
    runtime = HostRuntime.get()
    xtc = [runtime.evaluate_flops("float32") / 1e9 for _ in range(args.calls)]
    for bits in probe[0].by_width:
        show(f"register probe, {bits}-bit", [r.by_width[bits] / 1e9 for r in probe])
    show("XTC evaluate_flops", xtc)
    print(probe[0].describe())
    return 0


def show(name: str, values: list[float]) -> None:
    print(
        f"{name:>26}: {min(values):5.1f}-{max(values):5.1f} GFMA/s, "
        f"median {statistics.median(values):5.1f} ({len(values)} calls)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
