"""The machine's one description: every ISA fact the harness uses (float32 lanes, vector
registers, FMA units, caches, the C compiler's flags for this host, what an FMA looks like
in assembly), with an x86 reading and an ARM one. Nothing else in xtc_katas/ names an ISA.

- x86-64: py-cpuinfo's flags (AVX-512, AVX2, SSE), caches from Linux's sysfs.
- AArch64 Linux: NEON, which the architecture requires; py-cpuinfo reads /proc/cpuinfo's
  "Features", and where those say nothing (under QEMU they are the host's x86 flags) the
  auxiliary vector (AT_HWCAP) tells: arm_flags. Caches from sysfs.
- macOS (Apple Silicon): NEON; the CPU's name and caches from `sysctl hw machdep.cpu`.

`XTC_KATAS_ISA=avx2` makes the harness compile and judge as an AVX2 machine on an AVX-512
host (measure/machine.py says how).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


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

#: A vector FMA, a register's width and a scalar FMA in objdump's listing (cli/show.py),
#: and any float multiply in a listing (kata 03's test of generated_code):
#: x86 `vfmadd231ps %zmm1,%zmm2,%zmm0`; AArch64 `fmla v0.4s, v1.4s, v2.4s` (or v2.s[0]).
ASSEMBLY = {
    "x86_64": {
        "fma": r"\bv?fn?m(add|sub)\w*p[sd]\b",  # packed: ps, pd
        "scalar": r"\bv?fn?m(add|sub)\w*s[sd]\b",  # one element: ss, sd
        "register": r"%?\b([xyz]mm)\d+\b",  # zmm > ymm > xmm: the widest names the width
        "example": "vfmadd...ss",
        "arithmetic": r"\bv?(fmadd\w*|mul)[sp]s\b",  # a float multiply(-add), any width
    },
    "aarch64": {
        "fma": r"\bfml[as]\s+v\d+\.[24][sd]\b",
        "scalar": r"\bfn?m(add|sub)\s+[sd]\d+\b",
        "register": r"\bv\d+(\.[24][sd])\b",
        "example": "fmadd s0, ...",
        "arithmetic": r"\bf(n?madd|mul|mla)\b",
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


def assembly() -> dict[str, str]:
    """This architecture's ASSEMBLY patterns."""
    return ASSEMBLY.get(arch(), ASSEMBLY["x86_64"])


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


def emulated_by_qemu() -> bool:
    """True where an AArch64 process runs on an x86 kernel, as tools/arm64_emulated.sh runs
    the suite (QEMU's user mode). The kernel's CPU type in sysfs is x86's there (QEMU does
    not emulate sysfs), and QEMU 7.2's /proc/cpuinfo is the host's, with x86's "vendor_id"
    (later QEMUs emulate that file). A time measured there is QEMU's, not an ARM CPU's."""
    if arch() != "aarch64":
        return False
    seen = ""
    for path in ("/sys/devices/system/cpu/modalias", "/proc/cpuinfo"):
        try:
            seen += Path(path).read_text()
        except OSError:
            continue
    return "cpu:type:x86" in seen or "vendor_id" in seen


def emulated_isa() -> str | None:
    isa = os.environ.get(ISA_ENV, "").strip().lower() or None
    if isa is not None and isa not in EMULATED:
        raise ValueError(f"{ISA_ENV}={isa!r}: the harness can emulate {sorted(EMULATED)}")
    if isa is not None and arch() != "x86_64":  # every emulated ISA is an x86 one
        raise ValueError(f"{ISA_ENV}={isa!r} compiles for x86-64: unset it on {arch()}")
    return isa


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
