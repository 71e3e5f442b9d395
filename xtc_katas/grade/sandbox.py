"""Each kata's graded pytest, confined with bubblewrap (Debian's `bubblewrap`, `bwrap`).

What the graded run sees (docs/grading.md has the threat model's table):

- a read-only system (/usr, /etc, ... and the suite's venv), nothing else of the node's
  files: not the instructor's home, the grades, the other submissions, nor the suite's
  checkout (its copy, made for this grading, is the one it runs);
- writable: the grading's own scratch folder (the copy, its own module cache: what it
  compiles stays there), the folder of this kata's record (made by the grader for this
  run, seen by no other), a private /tmp of TMP_BYTES;
- read-only: the node's trusted module cache (the references, compiled before the first
  submission outside any sandbox) and the sha256 of each of its files;
- no network (a loopback of its own), its own PID namespace (it sees no Dask worker, no
  grader, no other grading), killed with the Dask worker (--die-with-parent), and every
  process of it killed when its pytest ends (the PID namespace's end);
- limits: PROCESSES processes or threads, MEMORY_BYTES of address space per process,
  and where the node allows it a total for the run's processes together (memory_cap.py);
  the time is the grader's kata timeout, outside;
- as root, it runs as `nobody` (root is exempt from the process limit).

Inside, the learner's worker confines itself further (checks/confine.py): solutions/
hidden, everything read-only. The grade comes back as the record's JSON lines, which the
grader reads and checks (grading_job._events); the confined side writes no grade.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: Read-only system folders bound where they exist.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/etc", "/opt", "/sys")
#: Processes and threads at once (RLIMIT_NPROC): a graded kata's processes each start a
#: thread per core (TVM, OpenBLAS, OpenMP), ~40 on 2 cores. Each forked process of a
#: fork bomb costs a copy of a Python with XTC loaded: the fewer, the sooner it ends.
PROCESSES = max(256, 8 * (os.cpu_count() or 1))
#: Address space per process (RLIMIT_AS): XTC's compilers reserve ~3 GiB.
MEMORY_BYTES = 12 << 30
#: The sandbox's /tmp and /dev/shm, each (tmpfs: memory, bounded).
TMP_BYTES = 1 << 30
#: Who runs it when the grader is root (the process limit does not bind root).
NOBODY = 65534
INSTALL = "sudo apt-get install -y bubblewrap"


@functools.cache
def unavailable() -> str:
    """Why a grading cannot be confined on this machine ("" when it can)."""
    if shutil.which("bwrap") is None:
        return f"bubblewrap (bwrap) is not installed: {INSTALL}"
    try:
        done = subprocess.run(wrap(["true"], "/", {}), capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0:
        return (
            f"bwrap cannot make its namespaces here ({done.stderr.strip()}): it needs user "
            "namespaces (sysctl user.max_user_namespaces > 0; in a container, one started "
            "with them allowed)"
        )
    return ""


def _venv() -> list[str]:
    """The Python that runs pytest: the venv and the interpreter it links to."""
    found = {sys.prefix, sys.base_prefix, str(Path(sys.executable).resolve().parent.parent)}
    return sorted(p for p in found if not any(p.startswith(s + "/") or p == s for s in SYSTEM))


def _folders(paths: list[str]) -> list[str]:
    """bwrap's arguments making each path's parents as folders anyone may enter: bwrap
    makes them with the mode of the originals (/root's 0700 would stop `nobody`)."""
    folders: list[str] = []
    for path in paths:
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in folders:
                folders.append(str(parent))
    return [arg for parent in folders for arg in ("--perms", "0755", "--dir", parent)]


#: Where the grading's folder, the module cache and the kata's record's folder (one per
#: kata's run, bound in that run only) are, inside.
GRADING, CACHE, RECORD = "/grading", "/grading-cache", "/grading-record"


def wrap(
    command: list[str],
    cwd: str,
    writable: dict[Path, str],
    read_only: dict[Path, str] | None = None,
) -> list[str]:
    """`command` run confined, from `cwd`, with the `writable` folders bound where it
    says (outside -> inside), and the `read_only` files and folders; the rest as the
    module's docstring says. As root, bwrap
    makes the namespaces but the user's (root's files stay root's), and `command` runs as
    nobody; otherwise in a user namespace of the user's own."""
    root = os.geteuid() == 0
    limits = ["prlimit", f"--nproc={PROCESSES}", f"--as={MEMORY_BYTES}", "--core=0", "--"]
    bwrap = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid"]
    bwrap += ["--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    bwrap += ["--cap-add", "CAP_SETUID,CAP_SETGID"] if root else ["--unshare-user"]
    bwrap += ["--proc", "/proc", "--dev", "/dev"]
    # The tmpfs first: a venv or a grading under /tmp is bound over it, not hidden by it.
    for tmp in ("/dev/shm", "/tmp"):  # libomp registers itself in /dev/shm
        bwrap += ["--perms", "01777", "--size", str(TMP_BYTES), "--tmpfs", tmp]
    extra = [p for p in _venv() if os.path.exists(p)]
    bwrap += _folders(extra)
    for path in [*SYSTEM, *extra]:
        if os.path.exists(path):
            bwrap += ["--ro-bind", path, path]
    for outside, inside in writable.items():
        bwrap += ["--bind", str(outside), inside]
    for outside, inside in (read_only or {}).items():
        bwrap += ["--ro-bind", str(outside), inside]
    bwrap += ["--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp", "--chdir", cwd]
    user = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    user += ["--inh-caps=-all", "--bounding-set=-all", "--"]
    return [*limits, *bwrap, "--", *(user if root else []), *command]


def hand_over(folder: Path) -> None:
    """`folder` (and all in it) writable by the sandbox's user: nobody, when run as root."""
    if os.geteuid() != 0:
        return
    for where, dirs, files in os.walk(folder):
        for name in [where, *(os.path.join(where, n) for n in dirs + files)]:
            os.lchown(name, NOBODY, NOBODY)
