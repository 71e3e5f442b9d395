"""py-cpuinfo's reading of the CPU, taken once per CPU instead of at every call.

`cpuinfo.get_cpu_info()` starts a Python subprocess to run CPUID, which takes over a
second per call, and it keeps no result. XTC calls it at every TVM compile
(`TVMCompiler._get_tvm_native_target_options`) and in `xtc.utils.cpu.cpu_info()`, which
the strategies, the loop-nest checks, the solutions and the machine line of every report
read: a large share of a learner's one-task run (docs/timing.md#time-a-run-does-not-spend).

`remember()` replaces it, in this process, with one that reads the CPU once and keeps
the reading in the user's cache directory, under a key made of what identifies the CPU
in /proc/cpuinfo (vendor, family, model, name, stepping, flags) and py-cpuinfo's
version: another CPU, or a session on another machine, is a new key and a fresh
reading. Without /proc/cpuinfo the reading is kept for the process only.
"""

from __future__ import annotations

import copy
import functools
import os
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from xtc_katas.measure import module_cache

#: The lines of /proc/cpuinfo's first processor that identify the CPU: those a compiled
#: module's key holds, and the stepping, which py-cpuinfo reports too.
IDENTITY = (*module_cache.CPU_FIELDS, "stepping")


def identity() -> str | None:
    """What identifies this CPU and py-cpuinfo's reading of it; None without /proc/cpuinfo."""
    lines = module_cache.cpuinfo_lines(IDENTITY)
    if lines is None:
        return None
    try:
        version = metadata.version("py-cpuinfo")
    except metadata.PackageNotFoundError:
        version = "?"
    return "\n".join([platform.machine(), f"py-cpuinfo {version}", str(os.cpu_count()), lines])


def path_of(key: str) -> Path:
    return module_cache.record_path("cpuinfo", key)


#: py-cpuinfo's own function, kept by remember().
ORIGINAL: Any = None


@functools.cache
def _reading() -> dict[str, Any]:
    key = identity()
    if key is None:
        return ORIGINAL()
    path = path_of(key)
    info = module_cache.read_record(path, key)
    if info is None:  # none yet, damaged or another CPU's: read the CPU again
        info = ORIGINAL()
        module_cache.write_record(path, key, info)
    return info


def get_cpu_info() -> dict[str, Any]:
    """py-cpuinfo's `get_cpu_info()`, read once per CPU (a copy: callers may change it)."""
    return copy.deepcopy(_reading())


def remember() -> None:
    """Make `cpuinfo.get_cpu_info` this module's. Called before XTC is imported (the
    plugin's configure, the commands' start), so `xtc.utils.cpu`'s `from cpuinfo import
    get_cpu_info` binds it too; if XTC was imported first, its name is replaced as well."""
    global ORIGINAL
    import sys

    import cpuinfo

    if cpuinfo.get_cpu_info is get_cpu_info:
        return
    ORIGINAL = cpuinfo.get_cpu_info
    cpuinfo.get_cpu_info = get_cpu_info
    xtc_cpu = sys.modules.get("xtc.utils.cpu")
    if xtc_cpu is not None:
        xtc_cpu.get_cpu_info = get_cpu_info
