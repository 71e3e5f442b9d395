"""Which machine a figure comes from, and its one description: every speed figure the
harness prints names the CPU, as a schedule's speedup differs from one CPU to another, and
every ISA fact the harness uses (lanes, vector registers, FMA units, caches, compiler
flags, what an FMA looks like in assembly) is read here, with an x86 and an ARM reading.

py-cpuinfo's reading of the CPU, which XTC takes at every TVM compile and in
`xtc.utils.cpu.cpu_info()` (a Python subprocess, over a second a call, kept nowhere), is
taken once per CPU and kept in the user's cache directory (remember_cpu_reading). On
aarch64 Linux py-cpuinfo reads /proc/cpuinfo's "Features"; where those say nothing (under
QEMU they are the host's x86 flags) the auxiliary vector (AT_HWCAP) tells: see arm_flags.

`XTC_KATAS_ISA=avx2` compiles every harness kernel as for an AVX2 machine on an AVX-512
host and makes XTC's `cpu_info()` say so (`flakecheck --isa avx2`); numpy runs as there
under OPENBLAS_CORETYPE=Haswell, set on the command line: OpenBLAS reads it at import.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from xtc_katas.measure import module_cache


@dataclass(frozen=True)
class Vectors:
    """One SIMD extension, as a schedule and the peak probe must fit it."""

    lanes: int  # float32 per vector
    registers: int  # vector registers a kernel can use
    isa: str  # as the lessons name it
    #: Vector FMA pipes per core: how many independent FMAs the peak probe keeps in flight.
    fma_units: int = 2

    @property
    def bits(self) -> int:
        return self.lanes * 32

    @property
    def described(self) -> str:
        return f"{self.isa}: {self.registers} registers of {self.lanes} float32 lanes"


#: x86-64, widest first, each with the py-cpuinfo flag that says the CPU has it: AVX-512
#: has 32 registers (zmm0-31), AVX2 16 (ymm0-15), SSE 16 (xmm0-15); 2 FMA pipes per core.
X86 = (
    ("avx512f", Vectors(lanes=16, registers=32, isa="AVX-512")),
    ("avx2", Vectors(lanes=8, registers=16, isa="AVX2")),
    ("sse", Vectors(lanes=4, registers=16, isa="SSE")),
)
#: AArch64: NEON (Advanced SIMD) is mandatory, 32 registers v0-v31 of 128 bits. An Apple
#: P-core and Neoverse V1/V2 have 4 vector FMA pipes, Neoverse N1 2: the probe fills 4.
#: (SVE's wider vectors are not used: XTC's cpu_info() reads NEON's 4 lanes on aarch64.)
NEON = Vectors(lanes=4, registers=32, isa="NEON", fma_units=4)
ARM_ARCHES = ("aarch64", "arm64")
#: Every extension an architecture's kernels may use (the peak probe compiles each).
ISAS = {"x86_64": [vectors for _, vectors in X86], "aarch64": [NEON]}

#: The C compiler's flags for this host: GCC and clang take -mcpu=native on AArch64.
NATIVE_CC_FLAGS = {"x86_64": ["-march=native"], "aarch64": ["-mcpu=native"]}

#: A vector FMA, a register's width and a scalar FMA in objdump's listing (cli/show.py):
#: x86 `vfmadd231ps %zmm1,%zmm2,%zmm0`; AArch64 `fmla v0.4s, v1.4s, v2.4s` (or v2.s[0]).
ASSEMBLY = {
    "x86_64": {
        "fma": r"\bv?fn?m(add|sub)\w*p[sd]\b",  # packed: ps, pd
        "scalar": r"\bv?fn?m(add|sub)\w*s[sd]\b",  # one element: ss, sd
        "register": r"%?\b([xyz]mm)\d+\b",  # zmm > ymm > xmm: the widest names the width
        "scalar_example": "vfmadd...ss",
    },
    "aarch64": {
        "fma": r"\bfml[as]\s+v\d+\.[24][sd]\b",
        "scalar": r"\bfn?m(add|sub)\s+[sd]\d+\b",
        "register": r"\bv\d+(\.[24][sd])\b",
        "scalar_example": "fmadd s0, ...",
    },
}

ISA_ENV = "XTC_KATAS_ISA"
#: What an emulated ISA compiles for: TVM's target options (XTC's TVMCompiler maps
#: arch "avx2" to mcpu core-avx2), MLIR's llc --mcpu (Haswell is the first AVX2 core) and
#: the peak probe's cc flags.
EMULATED = {
    "avx2": {
        "tvm": {"target": "x86_64", "arch": "avx2"},
        "mlir": {"cpu": "haswell"},
        "cc": ["-mavx2", "-mfma"],
        "vectors": dict(X86)["avx2"],
    },
}
#: OpenBLAS's kernel for an emulated ISA (kata 08 races numpy as that machine runs it).
OPENBLAS_KERNELS = {"avx2": "Haswell"}


def arch() -> str:
    """ "x86_64" or "aarch64" (macOS says "arm64"), as the tables above are keyed."""
    name = platform.machine().lower()
    return "aarch64" if name in ARM_ARCHES else "x86_64" if name in ("amd64", "x86_64") else name


def family(flags: list[str] | set[str] | None = None) -> list[Vectors]:
    """This CPU's SIMD extensions, widest first (the narrower ones run too)."""
    if arch() == "aarch64":
        return [NEON]
    if flags is None:
        import cpuinfo

        flags = cpuinfo.get_cpu_info().get("flags", [])
    have = [vectors for flag, vectors in X86 if flag in flags]
    return have or [Vectors(lanes=1, registers=16, isa="scalar")]


def vectors() -> Vectors:
    """The SIMD extension the kernels are compiled for: the widest, or the emulated ISA's."""
    isa = emulated_isa()
    return EMULATED[isa]["vectors"] if isa else family()[0]


def native_cc_flags() -> list[str]:
    """The peak probe's cc flags for this host, or for the emulated ISA."""
    isa = emulated_isa()
    return EMULATED[isa]["cc"] if isa else NATIVE_CC_FLAGS.get(arch(), [])


AT_HWCAP = 16
HWCAP_ASIMD = 1 << 1  # Linux arm64's asm/hwcap.h: Advanced SIMD (NEON)


def arm_flags(info: dict[str, Any]) -> dict[str, Any]:
    """py-cpuinfo's reading with "asimd" in its flags on AArch64 Linux when the kernel's
    AT_HWCAP says NEON is there (it always is: the architecture requires it). XTC's
    cpu_info() reads NEON's 4 lanes from that flag; under QEMU the flags read were the
    host's x86 ones, and XTC fell back to 1 lane. macOS's "arm64" needs no flag."""
    if info.get("arch_string_raw") != "aarch64" or "asimd" in info.get("flags", []):
        return info
    if hwcap() & HWCAP_ASIMD:
        info = {**info, "flags": [*info.get("flags", []), "asimd"]}
    return info


def hwcap() -> int:
    """The auxiliary vector's AT_HWCAP (Linux); NEON's bit where getauxval is missing."""
    try:
        getauxval = ctypes.CDLL(None).getauxval
    except (AttributeError, OSError):
        return HWCAP_ASIMD  # NEON is mandatory on AArch64 all the same
    getauxval.restype = ctypes.c_ulong
    return int(getauxval(ctypes.c_ulong(AT_HWCAP)))


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
        info = arm_flags(PY_CPUINFO())
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
    return info.get("brand_raw") or darwin().get("machdep.cpu.brand_string") or f"{arch()} CPU"


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
            "python -m xtc_katas.tools.calibration prints them"
        )
    return f"docs/calibration/ has figures of this CPU ({key}) for {', '.join(found)}"


def caches_below_l3() -> list[tuple[str, str]]:
    """Core 0's data caches below L3: [("L1d", "48 KiB"), ...], as Linux lists them, or
    as macOS's sysctl does (a performance core's, where it has two kinds of cores)."""
    if sys.platform == "darwin":
        return darwin_caches(darwin())
    found = []
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            kib = int((index / "size").read_text().strip().rstrip("K"))
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and level in ("1", "2"):
            found.append((f"L{level}{'d' if kind == 'Data' else ''}", _size(kib)))
    return found


def _size(kib: int) -> str:
    return f"{kib // 1024} MiB" if kib >= 1024 and kib % 1024 == 0 else f"{kib} KiB"


@functools.cache
def darwin() -> dict[str, str]:
    """macOS's `sysctl hw machdep.cpu` as a dict ({} elsewhere, or without sysctl)."""
    if sys.platform != "darwin":
        return {}
    try:
        done = subprocess.run(
            ["sysctl", "hw", "machdep.cpu"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return {}
    return parse_sysctl(done.stdout)


def parse_sysctl(text: str) -> dict[str, str]:
    """`sysctl`'s "name: value" lines as a dict."""
    pairs = (re.match(r"([\w.]+): (.*)", line) for line in text.splitlines())
    return {m.group(1): m.group(2).strip() for m in pairs if m}


def darwin_caches(values: dict[str, str]) -> list[tuple[str, str]]:
    """L1d and L2 of a performance core (hw.perflevel0.*, Apple Silicon), else hw.*."""
    found = []
    for name, key in (("L1d", "l1dcachesize"), ("L2", "l2cachesize")):
        size = values.get(f"hw.perflevel0.{key}") or values.get(f"hw.{key}")
        if size and size.isdigit() and int(size):
            found.append((name, _size(int(size) // 1024)))
    return found
