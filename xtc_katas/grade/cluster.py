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

Who may connect: a scheduler given by address is reached with mutual TLS (Dask's own
Security; the certificates of `xtc-katas cluster certs`, cluster_certs.py): a plain
address is refused, unless --insecure (every grade then says so) or the whole cluster
is on this machine's loopback. The default cluster is that: every port of it on
127.0.0.1, none reachable from another address.
"""

from __future__ import annotations

import ipaddress
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
#: ... and as the cluster's mutual TLS wants it: {folder} is the node's folder made by
#: `xtc-katas cluster certs`. The worker's HTTP server (its metrics, which ask for no
#: certificate) listens on 0.0.0.0 unless told: on loopback only.
TLS_FLAGS = (
    " --tls-ca-file {folder}/ca.pem --tls-cert {folder}/cert.pem --tls-key {folder}/key.pem"
    " --dashboard-address 127.0.0.1:0"
)
#: The note on every grade made with --insecure.
INSECURE = (
    "graded on a cluster without TLS (--insecure): anyone who could reach its scheduler "
    "could run code on its nodes and change any grade"
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


class Insecure(RuntimeError):
    """A scheduler to be reached without TLS, and --insecure was not given; or TLS
    without the grader's certificate."""


def worker_command(address: str, folder: str = "NODE") -> str:
    """The command that starts a grading node's worker for the scheduler at `address`."""
    tls = TLS_FLAGS.format(folder=folder) if address.startswith("tls://") else ""
    return WORKER_COMMAND.format(address=address) + tls


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
            host="127.0.0.1",  # no port of it reachable from another address
            dashboard_address="127.0.0.1:0",  # Dask's HTTP server: on a free port, not 8787
            local_directory=str(directory),
            silence_logs=logging.WARNING,
        )


def security(address: str, tls_dir: Path | None, insecure: bool) -> Any:
    """How the grader reaches `address`: mutual TLS with the certificate in `tls_dir`
    (`xtc-katas cluster certs`' DIR/grader) for tls://; for a plain address, nothing
    (None), where --insecure was given or the host is this machine's loopback (the whole
    cluster must then be: plain_members); else Insecure, before anything is sent."""
    from distributed.comm import get_address_host, parse_address
    from distributed.security import Security

    protocol, _ = parse_address(address)
    if protocol == "tls" and insecure:
        raise Insecure(f"--insecure is for a scheduler without TLS: {address} has it")
    if protocol == "tls":
        files = [tls_dir / f"{name}.pem" for name in ("ca", "cert", "key")] if tls_dir else []
        if not files or not all(f.is_file() for f in files):
            raise Insecure(
                f"the scheduler {address} asks for TLS: give --tls-dir DIR/grader, the "
                "folder with the grader's ca.pem, cert.pem and key.pem that `xtc-katas "
                "cluster certs DIR NODE...` made" + (f" (not in {tls_dir})" if tls_dir else "")
            )
        ca, cert, key = map(str, files)
        return Security(
            tls_ca_file=ca, tls_client_cert=cert, tls_client_key=key, require_encryption=True
        )
    if insecure or _loopback(get_address_host(address)):
        return None
    raise Insecure(
        f"refusing to grade on {address}: without TLS, anyone who can reach the scheduler "
        "runs code on every node and can change any grade. Make the cluster's "
        "certificates (xtc-katas cluster certs DIR NODE...), start the scheduler and each "
        "worker with them (docs/grading.md, 'On a cluster'), then grade with --scheduler "
        "tls://HEAD:8786 --tls-dir DIR/grader; or grade anyway with --insecure: every "
        "result then says so"
    )


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: not resolved here (no lookup leaves this machine)
        return False


def plain_members(client: Any) -> list[str]:
    """The scheduler's, workers' and nannies' addresses not on this machine's loopback,
    of a cluster reached without TLS: a scheduler listening on every interface is
    reachable through 127.0.0.1 too, but says its own address."""
    from distributed.comm import get_address_host

    info = client.scheduler_info(n_workers=-1)
    addresses = [info["address"]]
    for address, worker in info["workers"].items():
        addresses += [address, worker.get("nanny") or address]
    return [a for a in addresses if not _loopback(get_address_host(a))]


@contextmanager
def connect(
    scheduler: str = "", tls_dir: Path | None = None, insecure: bool = False
) -> Iterator[tuple[Any, Path | None]]:
    """(A Dask client, the scratch folder for the nodes' copies or None): to `scheduler`
    or $DASK_SCHEDULER_ADDRESS (see security()), else to a LocalCluster made and removed
    here."""
    from distributed import Client

    address = scheduler or os.environ.get("DASK_SCHEDULER_ADDRESS", "")
    if address:
        reached_with = security(address, tls_dir, insecure)
        try:
            client = Client(address, security=reached_with)
        except OSError as exc:  # TLS refused on either side, or nobody there
            raise UnfairCluster(
                f"cannot reach the scheduler {address}: {exc} (with TLS: are the "
                "scheduler's certificate and --tls-dir's signed by the same CA?)"
            ) from exc
        with client:
            client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS)
            if reached_with is None and not insecure and (open_to := plain_members(client)):
                raise Insecure(
                    f"refusing to grade on {address} without TLS: it reaches beyond this "
                    f"machine's loopback ({', '.join(open_to)}). Give it TLS (docs/"
                    "grading.md, 'On a cluster'), or grade anyway with --insecure"
                )
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
            "single-threaded, quiet worker per node:\n    " + worker_command(scheduler)
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


def say_how_reached(doc: dict[str, Any], insecure: bool) -> None:
    """A grade says whether its cluster was reached without TLS (--insecure), as one
    graded unconfined says so: `secure_cluster` false, and a note in its message."""
    doc["secure_cluster"] = not insecure
    if insecure:
        doc["notes"] = [*doc["notes"], INSECURE]
        doc["message"] = f"{doc['message']}; {INSECURE}"


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
