"""Which machine a figure comes from: every speed figure the harness prints names it.

The same schedule's speedup differs from one CPU to another (docs/xtc-0.3.2-field-notes.md,
"Figures differ by CPU"), so a figure without its machine means little. `describe()`
gives the CPU model (as the OS reports it: a virtual machine may show only the vendor's
product line), the family/model numbers that tell generations apart, the SIMD width the
kernels are compiled for, the per-core caches and the core count.

`XTC_KATAS_ISA=avx2` compiles every harness kernel as for an AVX2 machine (8 float32
lanes, 16 vector registers) on an AVX-512 host, and makes XTC's `cpu_info()` say so:
`python -m xtc_katas.tools.flakecheck --isa avx2` checks the judgements of an AVX2 machine
without one; it also runs numpy on OpenBLAS's AVX2 kernel (OPENBLAS_CORETYPE=Haswell,
OPENBLAS_KERNELS) unless that is set. OpenBLAS reads it when numpy loads, so for a plain
pytest run under XTC_KATAS_ISA set it in the same command line.
"""

from __future__ import annotations

import functools
import os
from typing import Any

ISA_ENV = "XTC_KATAS_ISA"
#: What an emulated ISA compiles for: TVM's target options (XTC's TVMCompiler maps
#: arch "avx2" to mcpu core-avx2) and MLIR's llc --mcpu (Haswell is the first AVX2 core).
EMULATED = {
    "avx2": {"tvm": {"target": "x86_64", "arch": "avx2"}, "mlir": {"cpu": "haswell"}},
}
LANES = {"avx2": 8}
#: OpenBLAS's kernel for an emulated ISA (kata 08 races numpy as that machine runs it).
OPENBLAS_KERNELS = {"avx2": "Haswell"}


def emulated_isa() -> str | None:
    isa = os.environ.get(ISA_ENV, "").strip().lower() or None
    if isa is not None and isa not in EMULATED:
        raise ValueError(f"{ISA_ENV}={isa!r}: the harness can emulate {sorted(EMULATED)}")
    return isa


def compiler_options(backend_class: type) -> dict[str, Any]:
    """Extra get_compiler() options of an XTC Backend class for the emulated ISA ({} when
    compiling natively). backends.py builds every Backend with them."""
    isa = emulated_isa()
    if isa is None:
        return {}
    name = "tvm" if "tvm" in backend_class.__module__ else "mlir"
    return dict(EMULATED[isa][name])


def emulate_cpu_info() -> None:
    """Make xtc.utils.cpu.cpu_info() report the emulated ISA's lanes (a no-op without one).

    XTC's strategies, the loop-nest checks and the solutions read the SIMD width there.
    """
    isa = emulated_isa()
    if isa is None:
        return
    import xtc.utils.cpu as cpu

    if getattr(cpu.cpu_info, "emulated", None) == isa:
        return
    native = cpu.cpu_info

    def cpu_info() -> dict[str, Any]:
        info = native()
        info["vsize"] = {"float32": LANES[isa], "float64": LANES[isa] // 2}
        return info

    cpu_info.emulated = isa  # type: ignore[attr-defined]
    cpu.cpu_info = cpu_info


@functools.cache
def describe() -> str:
    """One line: model, family/model, SIMD, per-core L1d and L2, cores."""
    from cpuinfo import get_cpu_info

    info = get_cpu_info()
    flags = set(info.get("flags", []))
    native = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    isa = emulated_isa()
    simd = f"compiled as AVX2 on an {native} host" if isa == "avx2" else native
    caches = [f"{name} {size}" for name, size in _caches()]
    brand = info.get("brand_raw", "unknown CPU")
    model = f"{brand} (family {info.get('family')} model {info.get('model')})"
    per_core = [f"{' '.join(caches)} per core"] if caches else []
    return ", ".join([model, simd, *per_core, f"{os.cpu_count()} cores"])


def cpu_id() -> str:
    """How the lessons' per-machine tables name a CPU: "family <F> model <M>", CPUID's."""
    from cpuinfo import get_cpu_info

    info = get_cpu_info()
    return f"family {info.get('family')} model {info.get('model')}"


def calibrated_here(root: Any = None) -> list[str]:
    """The katas whose calibration page (docs/calibration/NN_name.md) has figures measured
    on this CPU (its `cpu_id()`): which rows a learner can compare with."""
    from pathlib import Path

    from xtc_katas import ROOT

    key = cpu_id()
    pages = sorted(Path(root or ROOT).glob("docs/calibration/*.md"))
    return [page.stem for page in pages if key in page.read_text()]


def calibration_line() -> str:
    """One line for the performance summary: where this CPU's figures are, if anywhere."""
    found = calibrated_here()
    if not found:
        return (
            f"docs/calibration/ has no figures of this CPU ({cpu_id()}) yet: "
            "python -m xtc_katas.tools.calibration prints them"
        )
    return f"docs/calibration/ has figures of this CPU ({cpu_id()}) for {', '.join(found)}"


def _caches() -> list[tuple[str, str]]:
    """Core 0's data caches below L3, as Linux lists them: [("L1d", "48K"), ("L2", "1024K")]."""
    from pathlib import Path

    found = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            kib = int((index / "size").read_text().strip().rstrip("K"))
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and level in ("1", "2"):
            shown = f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib} KiB"
            found.append((f"L{level}{'d' if kind == 'Data' else ''}", shown))
    return found
