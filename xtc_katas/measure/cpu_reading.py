"""py-cpuinfo's reading of the CPU, taken once per CPU instead of at every call.

`cpuinfo.get_cpu_info()` starts a Python subprocess to run CPUID and takes 1.3 s per
call (two calls in a row: 1.33 s and 1.32 s, AMD EPYC family 23 model 1), and it keeps no
result. XTC calls it at every TVM compile (`TVMCompiler._get_tvm_native_target_options`)
and in `xtc.utils.cpu.cpu_info()`, which the strategies, the loop-nest checks, the
solutions and the machine line of every report read: a learner's one-task run of kata 10
spent 3.9 s of its 13.9 s there.

`remember()` replaces it, in this process, with one that reads the CPU once and keeps
the reading in the user's cache directory, under a key made of what identifies the CPU
in /proc/cpuinfo (vendor, family, model, name, stepping, flags) and py-cpuinfo's
version: another CPU, or a session on another machine, is a new key and a fresh
reading. Without /proc/cpuinfo the reading is kept for the process only.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
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
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return module_cache.cache_root().parent / "cpuinfo" / f"{digest}.json"


#: py-cpuinfo's own function, kept by remember().
ORIGINAL: Any = None


@functools.cache
def _reading() -> dict[str, Any]:
    key = identity()
    path = path_of(key) if key else None
    if path is not None:
        try:
            stored = json.loads(path.read_text())
            if stored.get("identity") == key:
                return stored["info"]
        except (OSError, ValueError, KeyError):
            pass  # none yet, or damaged: read the CPU again
    info = ORIGINAL()
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps({"identity": key, "info": info}))
            partial.replace(path)  # atomic: two workers never leave half a file
        except OSError:
            pass  # a read-only home: read it again next time
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
