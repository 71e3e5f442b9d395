"""Dask's side of grading: the cluster, the fairness rule, and the jobs in flight.

A grade's speed verdicts are races timed on the node that grades it, so two gradings
must never share a node's cores: one single-threaded worker per node, each offering the
resource node=1 that every grading job asks for. The default cluster is that on this
machine (a LocalCluster of one such worker); a real one is refused before anything is
graded if a host runs two workers, a worker two threads, or Dask's profiler (QUIET).

Nothing is lost: versions are checked on every node (client.get_versions(check=True));
a job's key is made of the submission's content hash and the suite's commit (plus a
nonce, so that a grade asked again is run again, never served from Dask's memory); a
worker killed mid-job has its job rescheduled by Dask, and one that killed more workers
than `distributed.scheduler.allowed-failures` allows comes back as KilledWorker, the
grader's error. Jobs are submitted no faster than there are nodes to run them: a job
waiting on a worker counts as "processing" there, and a worker's death would charge it a
failure too.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

#: The resource every grading job asks for, which every worker offers once.
NODE = {"node": 1}
#: How to start a worker as the fairness rule wants it, on each node.
WORKER_COMMAND = (
    "dask worker {address} --nworkers 1 --nthreads 1 --resources node=1 "
    "--preload-nanny xtc_katas.grade.quiet_node"
)
#: Dask's own sampling, off or slowed where a grade runs: its races should share the
#: node's cores with nothing. Beside a running job, Dask's processes took 8.8% of a core
#: (the worker's profiler samples the job's thread every 10 ms, every event loop ticks
#: every 20 ms), 1.3% with these (2-vCPU AMD EPYC family 25 model 1). A LocalCluster is
#: made with them; a node's nanny takes them from quiet_node.py (WORKER_COMMAND).
QUIET = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.scheduler.work-stealing": False,
}
#: A LocalCluster's worker is never given up on: its nanny restarts it (local_cluster).
NEVER_LOST = "30 days"
#: Seconds to wait for a first worker to join a scheduler given by address.
WAIT_FOR_WORKERS = 120


class UnfairCluster(RuntimeError):
    """A cluster on which two gradings could share cores, or that cannot grade at all."""


def local_cluster(directory: Path, n_workers: int = 1, threads_per_worker: int = 1) -> Any:
    """This machine as a cluster: by default one single-threaded worker, one grading at a
    time, on free ports.

    Its files (the scheduler's and the workers' scratch space) go under `directory`,
    not the temp dir. It leaves this process's environment alone: Dask's nanny otherwise
    sets OMP_NUM_THREADS=1 (and other thread limits) in the process that starts it,
    before it spawns a worker, and every kernel run from this process afterwards (the
    benchmark's plain loop, a test's) would run on one thread."""
    import dask
    from distributed import LocalCluster

    settings = {"distributed.nanny.pre-spawn-environ": {}, "temporary-directory": str(directory)}
    # A worker that a submission killed is restarted by its nanny. LocalCluster (a
    # SpecCluster) also closes that nanny for good if, `lost-worker-timeout` (15 s) after
    # a worker's death, no worker of its name is registered: under load, a submission that
    # killed its worker twice did so while the restarted one was still registering, and the
    # class then waited for a node forever (tests/test_grade.py's killed-worker test, past
    # 400 s at a load of 7-9, 2-vCPU AMD EPYC family 25 model 1). SpecCluster reads it at
    # each death, not at creation: set for the process.
    dask.config.set({"distributed.deploy.lost-worker-timeout": NEVER_LOST})
    with dask.config.set({**QUIET, **settings}):
        return LocalCluster(
            n_workers=n_workers,
            threads_per_worker=threads_per_worker,
            processes=True,
            resources=NODE,
            dashboard_address=":0",  # Dask's HTTP server on a free port, not 8787
            local_directory=str(directory),
            silence_logs=logging.WARNING,
        )


@contextmanager
def connect(scheduler: str = "") -> Iterator[tuple[Any, Path | None]]:
    """(A Dask client, the scratch folder for the nodes' copies or None): to `scheduler`
    or $DASK_SCHEDULER_ADDRESS, else to a LocalCluster made and removed here."""
    from distributed import Client

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS", "")
    if address:
        with Client(address) as client:
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
            yield client, None
        return
    with tempfile.TemporaryDirectory(prefix="xtc-katas-grade-") as scratch:
        cluster = local_cluster(Path(scratch) / "dask")
        try:
            with Client(cluster) as client:
                yield client, Path(scratch) / "copies"
        finally:
            cluster.close()
            reap(Path(scratch) / "copies")  # what a worker killed mid-job left running


def check(client: Any) -> int:
    """The number of nodes that may grade at once, after refusing an unfair cluster (two
    workers on a host, a worker with two threads, no worker offering node=1) or one whose
    nodes run other versions of Python's packages than this client."""
    import dask

    try:
        client.get_versions(check=True)
    except ValueError as exc:
        raise UnfairCluster(f"the nodes' packages differ from this machine's:\n{exc}") from exc
    workers = client.scheduler_info(n_workers=-1)["workers"]
    hostnames = client.run(socket.gethostname)
    problems = []
    for label, host_of in (("host", lambda a: workers[a]["host"]), ("hostname", hostnames.get)):
        on: dict[str, list[str]] = defaultdict(list)
        for address in workers:
            on[str(host_of(address))].append(address)
        problems += [
            f"{label} {host} runs {len(addresses)} workers ({', '.join(sorted(addresses))})"
            for host, addresses in sorted(on.items())
            if len(addresses) > 1
        ]
    problems += [
        f"worker {address} runs {info['nthreads']} threads"
        for address, info in sorted(workers.items())
        if info["nthreads"] > 1
    ]
    profiled = client.run(dask.config.get, "distributed.worker.profile.enabled")
    problems += [
        f"worker {address} samples the running job every few ms (Dask's profiler: start "
        "it with --preload-nanny xtc_katas.grade.quiet_node)"
        for address, enabled in sorted(profiled.items())
        if enabled
    ]
    nodes = [a for a, info in workers.items() if info.get("resources", {}).get("node", 0) >= 1]
    if not nodes:
        problems.append("no worker offers the resource node=1 that grading jobs ask for")
    if problems:
        scheduler = client.scheduler.address
        raise UnfairCluster(
            "refusing to grade on this cluster: "
            + "; ".join(dict.fromkeys(problems))
            + ". A grade's races need their node's cores to themselves: another grading "
            "beside them, or Dask sampling itself, would be timed too. Start one "
            "single-threaded, quiet worker per node:\n    "
            + WORKER_COMMAND.format(address=scheduler)
        )
    return len(nodes)


def run(
    client: Any,
    jobs: Sequence[tuple[str, Any]],
    slots: int,
    job: Callable[[Any], dict[str, Any]],
    on_error: Callable[[Any, BaseException], dict[str, Any]],
    on_result: Callable[[Any, dict[str, Any]], None],
) -> None:
    """Run `job(item)` for each (key, item) of `jobs`, at most `slots` at a time, each
    asking for a node; `on_result(item, document)` as each one ends, in completion order.
    A job that raised, or that Dask gave up on (KilledWorker), is `on_error`'s document."""
    from distributed import as_completed

    queue = list(jobs)
    items: dict[str, Any] = {}
    running = as_completed()

    def submit() -> None:
        key, item = queue.pop(0)
        future = client.submit(job, item, key=key, resources=NODE, pure=False)
        items[future.key] = item
        running.add(future)

    for _ in range(min(slots, len(queue))):
        submit()
    for future in running:
        item = items.pop(future.key)
        if future.status == "finished":
            document = future.result()
        else:
            try:
                error = future.exception()
            except BaseException as exc:  # cancelled: the scheduler lost it
                error = exc
            document = on_error(item, error)
        future.release()
        on_result(item, document)
        if queue:
            submit()


def reap(scratch: Path) -> int:
    """Kill what a grade left running under `scratch` when its worker died mid-job; the
    number of processes killed.

    A graded pytest dies with its worker (run_pytest's parent-death signal), but what it
    forked does not: such a process keeps its process group, and its command line still
    names its record under `scratch`. A node grades one submission at a time, so before
    one starts, any such process is a leftover, which would otherwise run beside the next
    grade's races."""
    marker = f"--grade-record={scratch}/".encode()
    killed = 0
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes():
                os.killpg(os.getpgid(int(proc.name)), signal.SIGKILL)
                killed += 1
        except OSError:  # gone meanwhile, or not ours to kill
            continue
    return killed
