"""Which machine a figure comes from: every speed figure the harness prints names it, as
a schedule's speedup differs from one CPU to another. What the machine's ISA is (lanes,
registers, FMA units, caches) is machine_description.py's.

py-cpuinfo's reading of the CPU, which XTC takes at every TVM compile and in
`xtc.utils.cpu.cpu_info()` (a Python subprocess, over a second a call, kept nowhere), is
taken once per CPU and kept in the user's cache directory (remember_cpu_reading), with
NEON's flag where an AArch64 kernel says it is there (machine_description.arm_flags).

XTC_KATAS_ISA (one of machine_description.EMULATED) compiles every harness kernel as for
that ISA and makes XTC's `cpu_info()` say so (`flakecheck --isa`); numpy runs as there
under OPENBLAS_CORETYPE (OPENBLAS_KERNELS), set on the command line: OpenBLAS reads it at
import.
"""

from __future__ import annotations

import copy
import functools
import os
import platform
import sys
from importlib import metadata
from typing import Any

from xtc_katas.measure import machine_description, module_cache
from xtc_katas.measure.machine_description import (
    EMULATED,
    ISA_ENV,  # noqa: F401 (the harness's name for it: tests and tools set it)
    OPENBLAS_KERNELS,  # noqa: F401 (flakecheck's)
    arch,
    arm_flags,
    caches_below_l3,
    emulated_isa,
    family,
    vectors,
)


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
        lanes = EMULATED[isa]["vectors"].lanes
        info["vsize"] = {"float32": lanes, "float64": lanes // 2}
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
    return arm_flags(info)  # a reading kept by an older harness lacks it too


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
    """One line: model, SIMD, per-core L1d and L2, cores."""
    import cpuinfo

    info = cpuinfo.get_cpu_info()
    native = family(info.get("flags", []))[0].isa
    simd = f"compiled as {vectors().isa} on an {native} host" if emulated_isa() else native
    caches = [f"{name} {size}" for name, size in caches_below_l3()]
    per_core = [f"{' '.join(caches)} per core"] if caches else []
    model = f"{brand(info)} ({cpu_key(info)})"
    return ", ".join([model, simd, *per_core, f"{os.cpu_count()} cores"])


def brand(info: dict[str, Any]) -> str:
    """The CPU's name: py-cpuinfo's, else macOS's sysctl (py-cpuinfo reads none on ARM)."""
    return (
        info.get("brand_raw")
        or machine_description.darwin().get("machdep.cpu.brand_string")
        or f"{arch()} CPU"
    )


def cpu_key(info: dict[str, Any]) -> str:
    """The CPU as the lessons' tables and docs/calibration/ name it: "family F model M" on
    x86, "implementer I part P" on ARM Linux (/proc/cpuinfo), the brand on macOS."""
    if info.get("family") is not None:
        return f"family {info.get('family')} model {info.get('model')}"
    if arch() == "aarch64" and sys.platform.startswith("linux"):
        lines = module_cache.cpuinfo_lines(("CPU implementer", "CPU part"))
        fields = dict(map(str.strip, line.split(":", 1)) for line in lines.splitlines())
        if len(fields) == 2:
            return f"implementer {fields['CPU implementer']} part {fields['CPU part']}"
    return brand(info)


def calibration_line() -> str:
    """One line for the performance summary: which katas' pages of docs/calibration/ have
    figures of this CPU, named as the lessons' tables name it ("family F model M")."""
    import cpuinfo

    from xtc_katas import ROOT

    key = cpu_key(cpuinfo.get_cpu_info())
    pages = sorted((ROOT / "docs" / "calibration").glob("*.md"))
    found = [page.stem for page in pages if key in page.read_text()]
    if not found:
        return (
            f"docs/calibration/ has no figures of this CPU ({key}) yet: "
            "python -m tools.calibration prints them"
        )
    return f"docs/calibration/ has figures of this CPU ({key}) for {', '.join(found)}"
