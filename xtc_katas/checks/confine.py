"""In a confined grading, the learner's worker gives up what the harness beside it keeps.

`xtc-katas grade` runs each kata's pytest inside bubblewrap (grade/sandbox.py): the
harness there must read the reference solutions (they race beside the learner's kernel)
and write the run's record and its compiles. The learner's module runs in a worker forked
from a forkserver that pytest started (checks/learner.py); before it is imported, the
worker (`confine_learner`, only where the grader set CONFINE_ENV) takes a mount namespace
of its own in which:

- the suite's solutions/ is an empty read-only folder, and so is each of the harness's
  multiprocessing folders (/tmp/pymp-*): the forkserver the worker came from listens
  there, and forks anything asked, outside this confinement;
- the sandbox's writable folders (the copy of the suite, the record, the module cache)
  are read-only, and /tmp and /dev/shm are tmpfs of its own. The harness compiles every
  kernel it races into pytest's folders in the sandbox's /tmp, and loads them later from
  their path: a /tmp the learner shared would let its code swap them for its own (a
  library whose constructor runs as the harness). A folder a test hands the learner's
  functions to compile into (a dump_file's) is made by the probe in this private /tmp,
  where nothing the harness loads lives; the worker's working folder is entered again
  there (the one it was forked in is the harness's);
- a second user namespace locks these mounts: the learner's code cannot undo them;
- no folder, and no file it opened for writing there (the record), is left open, and
  no pipe to the harness's other children but its own (each made /dev/null);
- the reference's functions already loaded by the harness are made to raise.

The harness side (`guard_harness`, in the graded pytest) makes its process non-dumpable,
so that the worker cannot reach its files through /proc/<pid>/root, its memory or ptrace.
"""

from __future__ import annotations

import ctypes
import gc
import glob
import json
import linecache
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Set by the grader in a confined graded run: JSON {"hide": [...], "read_only": [...]}.
CONFINE_ENV = "XTC_KATAS_GRADE_CONFINE"
#: The learner's worker's /tmp and /dev/shm, each (a tmpfs: memory, bounded).
TMP_BYTES = 256 << 20

#: os.CLONE_NEWNS and os.CLONE_NEWUSER from Python 3.12 only.
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
#: mount(2)'s flags that the stdlib lacks. Its statvfs flags os.ST_RDONLY, ST_NOSUID,
#: ST_NODEV, ST_NOEXEC, ST_NOATIME and ST_NODIRATIME are mount's of the same name and value
#: (Linux's statfs.h), and serve for both; ST_RELATIME is not MS_RELATIME.
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_RELATIME = 32, 4096, 16384, 1 << 21
_PR_SET_DUMPABLE = 4


def _libc() -> Any:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"confining the learner's worker: {what}: {os.strerror(errno)}")


def _new_user_namespace(libc: Any) -> None:
    """A user and mount namespace of this process's own, mapping its ids to themselves."""
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "unshare")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _mount(libc: Any, source: str, target: str, kind: str, flags: int, data: str = "") -> None:
    result = libc.mount(source.encode(), target.encode(), kind.encode() or None, flags,
                        data.encode() or None)  # fmt: skip
    _check(result, f"mount {target}")


def _kept_flags(path: str) -> int:
    """The mount's nosuid, nodev, noexec and atime flags: a remount in a user namespace
    must keep those the parent namespace set (the kernel locks them)."""
    flags = os.statvfs(path).f_flag
    kept = flags & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC | os.ST_NOATIME | os.ST_NODIRATIME)
    return kept | (_MS_RELATIME if flags & os.ST_RELATIME else 0)


def _close_harness_files(folders: list[str]) -> None:
    """Closes each inherited folder, and each file open for writing in `folders` (the
    record): not pytest's captures of the output (in /tmp), which the learner's prints go
    to."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            mode = os.fstat(fd).st_mode
            flags = int(Path(f"/proc/self/fdinfo/{fd}").read_text().split()[3], 8)
            path = os.readlink(f"/proc/self/fd/{fd}")
        except (OSError, ValueError, IndexError):
            continue
        writable = flags & os.O_ACCMODE != os.O_RDONLY
        inside = any(path == f or path.startswith(f + "/") for f in folders)
        if fd > 2 and (stat.S_ISDIR(mode) or (inside and writable)):
            os.close(fd)


def _mute_harness_pipes() -> None:
    """Each socket inherited from the harness but this worker's own pipe to it (the pipes
    to the harness's other children: its kernels' and references' workers) made
    /dev/null: a message the learner's code sends there is read by no one, where it was
    read as a request by a child of the harness. Not closed: the Connection objects that
    hold them close them when collected, which would close a later file of that number."""
    isolation = sys.modules.get("xtc_katas.measure.isolation")  # the worker's, loaded
    own = {each.fileno() for each in getattr(isolation, "_PARENT", []) if not each.closed}
    null = os.open(os.devnull, os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and fd not in own and fd != null and stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.dup2(null, fd)
        except OSError:
            continue
    os.close(null)


def _forget_references() -> None:
    """The reference's modules and functions the harness loaded before this fork: out of
    sys.modules, and each function made to raise."""

    def hidden(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("the reference solution is hidden from your code while grading")

    names = [name for name in sys.modules if name.startswith("xtc_katas_solution_")]
    for name in names:
        del sys.modules[name]
    for each in gc.get_objects():
        if type(each).__name__ == "function" and str(each.__module__).startswith(
            "xtc_katas_solution_"
        ):
            each.__code__ = hidden.__code__ if not each.__closure__ else each.__code__
            each.__defaults__ = each.__kwdefaults__ = None
    linecache.clearcache()


def _multiprocessing_folders() -> list[str]:
    """The harness's multiprocessing folders (/tmp/pymp-*): the forkserver's socket, from
    which the learner's worker was forked, is there; a process it forks on request is
    outside these namespaces, so the worker must not reach it."""
    return glob.glob(os.path.join(tempfile.gettempdir(), "pymp-*"))


def confine_learner() -> None:
    """In the learner's worker, before its module is imported: see the module's docstring.
    Nothing is done outside a confined grading (CONFINE_ENV unset)."""
    spec = os.environ.get(CONFINE_ENV)
    if not spec:
        return
    paths = json.loads(spec)
    libc = _libc()
    _check(libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl")
    # (prctl: the harness's is 0: /proc/self would be root's, its uid_map not ours to write)
    _close_harness_files(paths.get("read_only", []))
    _mute_harness_pipes()
    _new_user_namespace(libc)
    hidden = os.ST_RDONLY | os.ST_NOSUID | os.ST_NODEV
    for path in [*paths.get("hide", []), *_multiprocessing_folders()]:
        if os.path.isdir(path):
            _mount(libc, "tmpfs", path, "tmpfs", hidden, "size=0")
    for path in paths.get("read_only", []):
        if os.path.isdir(path):
            _mount(libc, path, path, "", _MS_BIND | _MS_REC)
            _mount(libc, "", path, "", _MS_REMOUNT | _MS_BIND | os.ST_RDONLY | _kept_flags(path))
    flags, data = os.ST_NOSUID | os.ST_NODEV, f"size={TMP_BYTES},mode=1777"
    cwd = os.getcwd()
    for tmp in ("/tmp", "/dev/shm"):
        _mount(libc, "tmpfs", tmp, "tmpfs", flags, data)
    _new_user_namespace(libc)  # the mounts above, made in the parent namespace, are locked
    if cwd == "/tmp" or cwd.startswith("/tmp/"):  # its own, empty: made again
        os.makedirs(cwd, exist_ok=True)
    os.chdir(cwd)  # the folder forked in was the harness's (its /tmp), reachable as "."
    _forget_references()


def guard_harness() -> None:
    """In the graded pytest: not dumpable, so the learner's worker (in a user namespace
    below this one) can neither open /proc/<this pid>/root, /mem nor ptrace it."""
    if os.environ.get(CONFINE_ENV):
        _check(_libc().prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl")
