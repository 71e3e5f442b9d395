"""A graded run's total memory cap: a memory cgroup of its own, where the node allows one.

The sandbox's limits are per process (RLIMIT_AS: 12 GiB each, of 256 processes): a
graded run could still take the node's memory, and the grader's with it. A cgroup caps
the run's processes together, its tmpfs pages (/tmp, /dev/shm) included: past the cap
the kernel's OOM killer stops the largest of them, in that run only, and the kata's
verdict says so.

The grader makes the cgroup below its own (it must be allowed to: root, or a delegated
subtree), as cgroup v2 where the memory controller can be enabled there, else under
cgroup v1's memory hierarchy (a hybrid layout: v1 controllers, a cgroup2 without them).
`systemd-run --scope` would need systemd as init, which containers seldom have. Where
none works, `Cap.how` says why, and every grade records it (grading.json's node).
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

#: The cap: half the node's memory, at most 8 GiB (XTC's compiles and the races of a
#: kata took under 2 GiB together on a 2-vCPU AMD EPYC family 25 model 1).
MAX_BYTES = 8 << 30
_numbers = itertools.count()


def total_bytes() -> int:
    """Half of the node's memory, at most MAX_BYTES."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return min(MAX_BYTES, int(line.split()[1]) * 1024 // 2)
    except (OSError, ValueError, IndexError):
        pass
    return MAX_BYTES


def _mounts() -> dict[str, str]:
    """{"cgroup2": its mount point, "memory": cgroup v1 memory's}, from mountinfo."""
    found: dict[str, str] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields, _, rest = line.partition(" - ")
        kind, _, options = [*rest.split(), "", "", ""][:3]
        point = fields.split()[4] if len(fields.split()) > 4 else ""
        if kind == "cgroup2":
            found.setdefault("cgroup2", point)
        elif kind == "cgroup" and "memory" in options.split(","):
            found.setdefault("memory", point)
    return found


def _own() -> dict[str, str]:
    """This process's cgroup per hierarchy: {"": v2's path, "memory": v1 memory's}."""
    own: dict[str, str] = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(",") if controllers else [""]:
                own[controller] = path
    except (OSError, ValueError):
        pass
    return own


@dataclass
class Cap:
    """One graded run's cgroup (None where the node allows none) and what was done."""

    path: Path | None
    how: str  # "cgroup v1 memory, 8.0 GiB at ..." or "none: why"
    limit: int = 0
    version: int = 0

    def wrap(self, command: list[str]) -> list[str]:
        """`command` started in the cgroup (a shell moves itself in, then execs it)."""
        if self.path is None:
            return command
        move = 'echo $$ > "$0/cgroup.procs" && exec "$@"'
        return ["sh", "-c", move, str(self.path), *command]

    def hit(self) -> bool:
        """Whether the OOM killer stopped a process of the run (the cap was reached)."""
        if self.path is None:
            return False
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        try:
            for line in (self.path / name).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and value.strip() != "0":
                    return True
        except OSError:
            pass
        return False

    def said(self) -> str:
        """What a kata's cause adds when the cap was reached."""
        return (
            f"; the grading's memory cap ({self.limit / (1 << 30):.1f} GiB, all its "
            "processes together) was reached: the kernel stopped its largest process"
        )

    def remove(self) -> None:
        """The cgroup removed, once its processes are gone (a few seconds at most)."""
        if self.path is None:
            return
        for _ in range(50):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)


def _remove_stale(base: Path) -> None:
    """The cgroups left by a grader killed mid-run (its pid gone), once they are empty."""
    for stale in base.glob("xtc-katas-grade-*-*"):
        pid = stale.name.split("-")[-2]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            try:
                stale.rmdir()
            except OSError:
                continue


def _make(base: Path, files: dict[str, int], version: int, limit: int) -> Cap:
    _remove_stale(base)
    path = base / f"xtc-katas-grade-{os.getpid()}-{next(_numbers)}"
    path.mkdir()
    try:
        for name, value in files.items():
            if (path / name).exists():
                (path / name).write_text(str(value))
    except OSError:
        path.rmdir()
        raise
    where = (
        f"cgroup v{version} memory, {limit / (1 << 30):.1f} GiB for the run's processes together"
    )
    return Cap(path, where, limit, version)


def create(limit: int = 0) -> Cap:
    """A new cgroup capping a graded run's memory at `limit` (total_bytes() by default),
    or a Cap without one, saying why."""
    limit = limit or total_bytes()
    mounts, own = _mounts(), _own()
    why = []
    if "cgroup2" in mounts and "" in own:
        base = Path(mounts["cgroup2"] + own[""])
        try:
            controllers = (base / "cgroup.controllers").read_text().split()
            if "memory" not in controllers:
                raise OSError(f"no memory controller in {base}/cgroup.controllers")
            if "memory" not in (base / "cgroup.subtree_control").read_text().split():
                (base / "cgroup.subtree_control").write_text("+memory")
            return _make(base, {"memory.max": limit, "memory.swap.max": 0}, 2, limit)
        except OSError as exc:
            why.append(f"cgroup v2 at {mounts['cgroup2']}: {exc.strerror or exc}")
    if "memory" in mounts and "memory" in own:
        base = Path(mounts["memory"] + own["memory"])
        files = {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit}
        try:
            return _make(base, files, 1, limit)
        except OSError as exc:
            why.append(f"cgroup v1 memory at {base}: {exc.strerror or exc}")
    if not why:
        why.append("no cgroup hierarchy with a memory controller is mounted")
    return Cap(None, "none: " + "; ".join(why) + " (only the per-process limits apply)")
