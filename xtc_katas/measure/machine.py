"""Which machine a figure comes from: every speed figure the harness prints names it, as
a schedule's speedup differs from one CPU to another.

py-cpuinfo's reading of the CPU, which XTC takes at every TVM compile and in
`xtc.utils.cpu.cpu_info()` (a Python subprocess, over a second a call, kept nowhere), is
taken once per CPU and kept in the user's cache directory (remember_cpu_reading).

`XTC_KATAS_ISA=avx2` compiles every harness kernel as for an AVX2 machine on an AVX-512
host and makes XTC's `cpu_info()` say so (`flakecheck --isa avx2`); numpy runs as there
under OPENBLAS_CORETYPE=Haswell, set on the command line: OpenBLAS reads it at import.
"""

from __future__ import annotations

import copy
import functools
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from xtc_katas.measure import module_cache

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
    """Make xtc.utils.cpu.cpu_info() report the emulated ISA's lanes (a no-op without one):
    XTC's strategies, the loop-nest checks and the solutions read the SIMD width there."""
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


def cpu_identity() -> str:
    """What identifies this CPU and py-cpuinfo's reading of it: a compiled module's CPU
    lines of /proc/cpuinfo, the stepping, the cores and py-cpuinfo's version."""
    version = f"py-cpuinfo {metadata.version('py-cpuinfo')}"
    lines = module_cache.cpuinfo_lines((*module_cache.CPU_FIELDS, "stepping"))
    return "\n".join([platform.machine(), version, str(os.cpu_count()), lines])


#: py-cpuinfo's own `get_cpu_info`, kept by remember_cpu_reading().
PY_CPUINFO: Any = None


@functools.cache
def _cpu_reading() -> dict[str, Any]:
    key = cpu_identity()
    info = module_cache.read_record("cpuinfo", key)
    if info is None:  # none yet, damaged or another CPU's: read the CPU again
        info = PY_CPUINFO()
        module_cache.write_record("cpuinfo", key, info)
    return info


def get_cpu_info() -> dict[str, Any]:
    """py-cpuinfo's `get_cpu_info()`, read once per CPU (a copy: callers may change it)."""
    return copy.deepcopy(_cpu_reading())


def remember_cpu_reading() -> None:
    """Make `cpuinfo.get_cpu_info` this module's, and `xtc.utils.cpu`'s name for it (bound
    by `from cpuinfo import get_cpu_info` when XTC is imported, before or after)."""
    global PY_CPUINFO
    import cpuinfo

    if cpuinfo.get_cpu_info is get_cpu_info:
        return
    PY_CPUINFO = cpuinfo.get_cpu_info
    cpuinfo.get_cpu_info = get_cpu_info
    xtc_cpu = sys.modules.get("xtc.utils.cpu")
    if xtc_cpu is not None:
        xtc_cpu.get_cpu_info = get_cpu_info


@functools.cache
def describe() -> str:
    """One line: model, family/model, SIMD, per-core L1d and L2, cores."""
    import cpuinfo

    info = cpuinfo.get_cpu_info()
    flags = set(info.get("flags", []))
    native = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    isa = emulated_isa()
    simd = f"compiled as AVX2 on an {native} host" if isa == "avx2" else native
    caches = [f"{name} {size}" for name, size in _caches()]
    brand = info.get("brand_raw", "unknown CPU")
    model = f"{brand} (family {info.get('family')} model {info.get('model')})"
    per_core = [f"{' '.join(caches)} per core"] if caches else []
    return ", ".join([model, simd, *per_core, f"{os.cpu_count()} cores"])


def calibration_line() -> str:
    """One line for the performance summary: which katas' pages of docs/calibration/ have
    figures of this CPU, named as the lessons' tables name it ("family F model M")."""
    import cpuinfo

    from xtc_katas import ROOT

    info = cpuinfo.get_cpu_info()
    key = f"family {info.get('family')} model {info.get('model')}"
    pages = sorted((ROOT / "docs" / "calibration").glob("*.md"))
    found = [page.stem for page in pages if key in page.read_text()]
    if not found:
        return (
            f"docs/calibration/ has no figures of this CPU ({key}) yet: "
            "python -m xtc_katas.tools.calibration prints them"
        )
    return f"docs/calibration/ has figures of this CPU ({key}) for {', '.join(found)}"


def _caches() -> list[tuple[str, str]]:
    """Core 0's data caches below L3, as Linux lists them: [("L1d", "48 KiB"), ...]."""
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
