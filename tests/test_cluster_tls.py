"""A cluster only the instructor can use (issue 60): the certificates of `xtc-katas cluster
certs`, a plain scheduler refused, the default cluster on loopback only, and the cluster of
docs/grading.md ('On a cluster') run as written, on two real nodes.

The two nodes are two network namespaces the test makes (root only; CI runs as root),
joined by a veth pair whose addresses, 10.231.0.1/24 and 10.231.0.2/24, exist only
inside them: no route leads anywhere else, so nothing is sent beyond the two. Each node has
its own hostname (a UTS namespace), its own checkout of the suite (at the same commit),
its own temp dir and module cache. Node A (10.231.0.1) runs the TLS scheduler, its worker
and the grader; node B (10.231.0.2) runs its worker as `nobody`, where the machine lets an
unprivileged user make bubblewrap's namespaces (the scheduler runs as `nobody` too): root
is needed only to make the namespaces, and by node A's worker, which grades as root.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import psutil
import pytest

from tools import planted
from xtc_katas import ROOT
from xtc_katas.grade import cluster, cluster_certs, sandbox, submissions
from xtc_katas.grade.grade_command import grade_class, job_key
from xtc_katas.grade.grading_job import GradeConfig
from xtc_katas.grade.repo_copy import IGNORED, learner_env
from xtc_katas.kata.manifest import find

PEAK, GRAPH = find(1), find(2)
HEAD, NODE_B = "10.231.0.1", "10.231.0.2"
SCHEDULER = f"tls://{HEAD}:8786"
NOBODY = 65534
#: Every wait of this module is bounded: a node up, a grading of the class.
START, CLASS = 120, 900


def test_the_certificates_are_private_and_signed_by_the_clusters_ca(tmp_path: Path) -> None:
    made = cluster_certs.make(tmp_path / "certs", ["node-a", "node-b"])
    certs = tmp_path / "certs"
    assert made == [certs / n for n in ("scheduler", "grader", "node-a", "node-b")]
    assert (certs / "ca-key.pem").stat().st_mode & 0o777 == 0o600
    assert certs.stat().st_mode & 0o777 == 0o700
    for folder in made:
        assert (folder / "key.pem").stat().st_mode & 0o777 == 0o600
        assert folder.stat().st_mode & 0o777 == 0o700
        assert not (folder / "ca-key.pem").exists()  # the CA's key never leaves DIR
        verify = ["openssl", "verify", "-CAfile", str(certs / "ca.pem"), str(folder / "cert.pem")]
        assert subprocess.run(verify, capture_output=True).returncode == 0
    before = (certs / "node-a" / "key.pem").read_bytes()
    assert cluster_certs.make(certs, ["node-a", "node-c"]) == [certs / "node-c"]  # kept
    assert (certs / "node-a" / "key.pem").read_bytes() == before
    with pytest.raises(cluster_certs.CertsError, match="not a node's name: 'grader'"):
        cluster_certs.make(certs, ["grader"])


def test_a_scheduler_reached_without_tls_is_refused_unless_insecure(tmp_path: Path) -> None:
    """Refused before anything is sent (the address is never contacted), and said how to
    make certificates; TLS without the grader's certificate is refused too."""
    planted.write(tmp_path / "right", {GRAPH.id: planted.partly_solved(GRAPH)})
    entries = [submissions.Entry(str(tmp_path / "right"))]
    with pytest.raises(cluster.Insecure, match=r"without TLS.*cluster certs.*--insecure"):
        grade_class(entries, tmp_path / "grades", [GRAPH], scheduler=f"tcp://{HEAD}:8786")
    with pytest.raises(cluster.Insecure, match="give --tls-dir DIR/grader"):
        grade_class(entries, tmp_path / "grades", [GRAPH], scheduler=SCHEDULER)
    with pytest.raises(cluster.Insecure, match="--insecure is for a scheduler without TLS"):
        grade_class(entries, tmp_path / "grades", [GRAPH], scheduler=SCHEDULER, insecure=True)
    assert not list((tmp_path / "grades").glob("*"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "xtc_katas", "grade", "right", "--katas", "2",
               "--scheduler", f"tcp://{HEAD}:8786"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 2 and "xtc-katas cluster certs DIR NODE" in done.stderr, done.stderr
    config = GradeConfig(katas=(GRAPH.id,))
    assert job_key("h", config, insecure=True) != job_key("h", config)  # graded again, secured


def test_a_plain_cluster_is_taken_only_if_wholly_on_loopback() -> None:
    """A scheduler that listens on every interface is reached through 127.0.0.1 too, but
    says its own address: then it is refused like any plain one."""
    info = {"address": "tcp://127.0.0.1:8786",
            "workers": {"tcp://127.0.0.1:4001": {"nanny": "tcp://127.0.0.1:4002"}}}  # fmt: skip
    client = types.SimpleNamespace(scheduler_info=lambda n_workers: info)
    assert cluster.plain_members(client) == []
    info["workers"]["tcp://10.231.0.2:4001"] = {"nanny": "tcp://10.231.0.2:4002"}
    info["address"] = "tcp://192.0.2.1:8786"
    assert cluster.plain_members(client) == [
        "tcp://192.0.2.1:8786", "tcp://10.231.0.2:4001", "tcp://10.231.0.2:4002"
    ]  # fmt: skip
    assert cluster.security("tcp://localhost:8786", None, insecure=False) is None
    assert cluster.security("tcp://[::1]:8786", None, insecure=False) is None
    assert cluster.security("tcp://head:8786", None, insecure=True) is None
    with pytest.raises(cluster.Insecure):  # a name is not looked up
        cluster.security("tcp://head:8786", None, insecure=False)


@pytest.mark.slow
def test_graded_with_insecure_every_result_says_so(tmp_path: Path) -> None:
    planted.write(tmp_path / "right", {GRAPH.id: planted.partly_solved(GRAPH)})
    entries = [submissions.Entry(str(tmp_path / "right"))]
    local = cluster.local_cluster(tmp_path / "dask")
    try:
        grade_class(entries, tmp_path / "grades", [GRAPH], scheduler=local.scheduler_address,
                    insecure=True, confined=False)  # fmt: skip
    finally:
        local.close()
    results = json.loads((tmp_path / "grades" / "right" / "results.json").read_text())
    assert results["status"] == "pass" and results["secure_cluster"] is False
    assert cluster.INSECURE in results["notes"] and cluster.INSECURE in results["message"]


def listening(pids: list[int]) -> list[tuple[str, int]]:
    """The (address, port) every process of `pids` listens on."""
    found = []
    for pid in pids:
        for sock in psutil.Process(pid).net_connections(kind="inet"):
            if sock.status == psutil.CONN_LISTEN:
                found.append((sock.laddr.ip, sock.laddr.port))
    return found


def test_the_default_cluster_listens_on_loopback_only(tmp_path: Path) -> None:
    """Its scheduler, worker, nanny and both HTTP servers: no port of it on an address
    another machine can reach (from another network namespace: the test below)."""
    local = cluster.local_cluster(tmp_path / "dask")
    try:
        me = psutil.Process()
        ports = listening([me.pid, *(p.pid for p in me.children(recursive=True))])
    finally:
        local.close()
    assert local.scheduler_address.startswith("tcp://127.0.0.1:")
    assert len(ports) >= 5, ports  # scheduler, dashboard, nanny, worker, worker's HTTP
    assert {address for address, _ in ports} == {"127.0.0.1"}, ports


# The two nodes.


def sh(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=check)


def checkout(destination: Path) -> None:
    """A node's own checkout of the suite at this one's commit: a clone of its HEAD with
    its working files over it (uncommitted work is then "<commit>-dirty" on the node as
    here, grading_job.suite_id)."""
    clone = ["git", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(destination)]
    subprocess.run(clone, check=True, capture_output=True, timeout=300)
    shutil.copytree(ROOT, destination, ignore=IGNORED, dirs_exist_ok=True)


@dataclass
class Node:
    """A machine of the cluster: a network namespace, its hostname, its user, its files."""

    netns: str
    address: str
    hostname: str
    folder: Path
    uid: int = 0
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def command(self, *argv: str) -> list[str]:
        """`argv` run on this node: in its network, under its hostname, as its user."""
        named = ["unshare", "--uts", "--", "sh", "-c", 'hostname "$0" && exec "$@"', self.hostname]
        user = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                "--inh-caps=-all", "--"] if self.uid else []  # fmt: skip
        return ["ip", "netns", "exec", self.netns, *named, *user, *argv]

    def env(self) -> dict[str, str]:
        """Its checkout's xtc_katas, its own home and temp dir (a grading's scratch and
        module cache); none of pytest's variables or the harness's switches."""
        kept = {k: v for k, v in learner_env().items() if not k.startswith("PYTEST_")}
        home = str(self.folder / "home")
        mine = {"PYTHONPATH": str(self.folder / "checkout"), "HOME": home}
        return {**kept, **mine, "TMPDIR": str(self.folder / "tmp"), "XDG_CACHE_HOME": home}

    def start(self, name: str, *argv: str) -> None:
        with (self.folder / f"{name}.log").open("wb") as log:
            self.processes[name] = subprocess.Popen(
                self.command(*argv), cwd=self.folder, env=self.env(), stdout=log, stderr=log,
                start_new_session=True,
            )  # fmt: skip

    def kill(self, name: str) -> None:
        """The process and all it started (a nanny, its worker) at once: a node lost."""
        process = self.processes.pop(name)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")


def wait_for(what: str, condition: Any, timeout: float, log: Any) -> None:
    """Until `condition()`, at most `timeout` seconds; else fails showing `log()`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {timeout:.0f} s. Its log:\n{log()[:5000]}")
        time.sleep(0.5)


def dask(*argv: str) -> list[str]:
    return [str(Path(sys.executable).parent / "dask"), *argv]


@dataclass
class Cluster:
    """docs/grading.md's cluster: the scheduler and node A's worker on A, node B's on B."""

    head: Node
    a: Node
    b: Node
    certs: Path  # `xtc-katas cluster certs`' DIR: the CA's key, the grader's folder
    unprivileged: str  # why node B runs as root ("" when it runs as nobody)

    def start_worker(self, node: Node) -> None:
        certs = str(node.folder / "certs")
        command = cluster.worker_command(SCHEDULER, folder=certs).split()[1:]
        node.start("worker", *dask(*command, "--local-directory", str(node.folder / "dask")))
        joined = f"Register worker addr: tls://{node.address}:"
        wait_for(f"{node.hostname}'s worker", lambda: joined in self.head.log("scheduler"),
                 START, lambda: node.log("worker"))  # fmt: skip


def why_not_unprivileged(node: Node) -> str:
    """ "" where `nobody` can run this venv's Python (its standard library too: a venv
    made from a Python under /root, 0700, is not) and make bubblewrap's namespaces."""
    probe = ("import sys, xtc_katas.grade.sandbox as s; "
             f"print(s.unavailable() if sys.base_prefix == {sys.base_prefix!r} else "
             "f'it finds another Python ({sys.base_prefix}) than this venv is made of "
             f"({sys.base_prefix}): the venv\\'s Python is not readable by nobody')")  # fmt: skip
    nobody = Node(node.netns, node.address, node.hostname, node.folder, NOBODY)
    done = subprocess.run(nobody.command(sys.executable, "-c", probe), capture_output=True,
                          text=True, env=node.env(), cwd="/", timeout=120)  # fmt: skip
    if done.returncode != 0:
        return f"nobody cannot run {sys.executable}: {done.stderr.strip()[-300:]}"
    return done.stdout.strip()


def cannot(why: str) -> NoReturn:
    """Skip where the nodes cannot be made; in CI (as root, in its fresh root) they must be."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the two-node tests: {why}")
    pytest.skip(why)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """The cluster, up; everything it made removed at the end, whatever happened."""
    if os.geteuid() != 0:
        cannot("making the nodes' network namespaces (ip netns) needs root; CI runs as root")
    if shutil.which("ip") is None:
        cannot("no `ip` (Debian's iproute2; ./run.sh test installs it as root)")
    tag = f"xk{os.getpid()}"
    namespaces: list[str] = []
    # /var/tmp: where `nobody` may enter (pytest's temp dir is root's, 0700)
    shared = Path(tempfile.mkdtemp(prefix="xtc-katas-nodes-", dir="/var/tmp"))
    try:
        for side in "ab":
            made = sh("ip", "netns", "add", tag + side, check=False)
            if made.returncode != 0:
                cannot(f"cannot make a network namespace here: {made.stderr.strip()}")
            namespaces.append(tag + side)
        sh("ip", "link", "add", f"{tag}a0", "type", "veth", "peer", "name", f"{tag}b0")
        for side, address in (("a", HEAD), ("b", NODE_B)):
            sh("ip", "link", "set", f"{tag}{side}0", "netns", tag + side)
            sh("ip", "-n", tag + side, "addr", "add", f"{address}/24", "dev", f"{tag}{side}0")
            for link in (f"{tag}{side}0", "lo"):
                sh("ip", "-n", tag + side, "link", "set", link, "up")
        certs = tmp_path_factory.mktemp("certs") / "certs"
        cluster_certs.make(certs, ["node-a", "node-b"])
        head = Node(tag + "a", HEAD, "node-a", shared / "head")
        a = Node(tag + "a", HEAD, "node-a", tmp_path_factory.mktemp("node-a"))
        b = Node(tag + "b", NODE_B, "node-b", shared / "node-b")
        for node, role in ((head, "scheduler"), (a, "node-a"), (b, "node-b")):
            for sub in ("home", "tmp", "dask"):
                (node.folder / sub).mkdir(parents=True)
            shutil.copytree(certs / role, node.folder / "certs")
        checkout(a.folder / "checkout")
        checkout(b.folder / "checkout")
        unprivileged = why_not_unprivileged(b)
        if unprivileged:
            print(f"node B and the scheduler run as root: {unprivileged}")
        head.uid = b.uid = 0 if unprivileged else NOBODY
        for where, dirs, files in os.walk(shared):
            for name in [where, *(os.path.join(where, n) for n in dirs + files)]:
                os.lchown(name, b.uid, b.uid)
        tls = [f"--tls-{flag}={head.folder}/certs/{name}.pem"
               for flag, name in (("ca-file", "ca"), ("cert", "cert"), ("key", "key"))]  # fmt: skip
        head.start("scheduler", *dask("scheduler", "--host", HEAD, *tls,
                                      "--dashboard-address", "127.0.0.1:8787"))  # fmt: skip
        log = lambda: head.log("scheduler")  # noqa: E731
        wait_for("the scheduler", lambda: "Scheduler at:" in log(), START, log)
        nodes = Cluster(head, a, b, certs, unprivileged)
        nodes.start_worker(a)
        nodes.start_worker(b)
        yield nodes
    finally:
        for netns in namespaces:  # every process in a namespace of this test is its own
            for pid in sh("ip", "netns", "pids", netns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
        for netns in namespaces:
            sh("ip", "netns", "del", netns, check=False)  # its veth end goes with it
        shutil.rmtree(shared, ignore_errors=True)


def listeners(netns: str) -> list[tuple[str, int]]:
    """Every TCP socket listening in the namespace: (address, port)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        lines = sh("ip", "netns", "exec", netns, "cat", table).stdout.splitlines()[1:]
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A":  # LISTEN
                host, port = local.split(":")
                address = ".".join(str(int(host[i - 2 : i], 16)) for i in (8, 6, 4, 2))
                found.append((address if len(host) == 8 else f"[{host}]", int(port, 16)))
    return found


PROBE = """
import json, socket, ssl, sys
from distributed import Client
from distributed.security import Security

host, ports, ca, stranger = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], sys.argv[4]


def error(attempt):
    try:
        attempt()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def raw_tls():  # trusts the cluster's CA (public), shows no certificate
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    with socket.create_connection((host, port), timeout=10) as sock:
        with context.wrap_socket(sock) as tls:
            tls.sendall(b"x")
            if not tls.recv(1):
                raise ConnectionError("closed by the server")


def http():
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(b"GET /health HTTP/1.0\\r\\n\\r\\n")
        answer = sock.recv(64)
        if answer.startswith(b"HTTP/"):
            return
        raise ConnectionError(f"no HTTP answer: {answer[:20]!r}")


strange = Security(tls_ca_file=ca, tls_client_cert=f"{stranger}/cert.pem",
                   tls_client_key=f"{stranger}/key.pem", require_encryption=True)
found = {}
for port in ports:
    tcp = error(lambda: socket.create_connection((host, port), timeout=10).close())
    found[port] = {"tcp": tcp} if tcp else {
        "tcp": "",
        "http": error(http),
        "dask, plain": error(lambda: Client(f"tcp://{host}:{port}", timeout=10).close()),
        "tls, no certificate": error(raw_tls),
        "dask, another CA's certificate": error(
            lambda: Client(f"tls://{host}:{port}", security=strange, timeout=10).close()
        ),
    }
print(json.dumps(found))
"""


def probe(cluster_: Cluster, on: Node, target: str, ports: list[int], tmp: Path) -> dict:
    """From node `on`: each port of `target` tried without the cluster's certificate."""
    stranger = tmp / "stranger"
    cluster_certs.make(stranger, ["x"])  # a certificate of another CA, as anyone can make
    argv = [sys.executable, "-c", PROBE, target, json.dumps(ports),
            str(cluster_.certs / "ca.pem"), str(stranger / "grader")]  # fmt: skip
    root = Node(on.netns, on.address, on.hostname, on.folder)  # reads root's tmp
    done = subprocess.run(root.command(*argv), capture_output=True, text=True, timeout=600,
                          env=on.env(), cwd="/")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return {int(port): attempts for port, attempts in json.loads(done.stdout).items()}


LOCAL_CLUSTER = """
import sys
from pathlib import Path
from xtc_katas.grade import cluster

if __name__ == "__main__":
    local = cluster.local_cluster(Path(sys.argv[1]))
    print(local.scheduler_address, flush=True)
    sys.stdin.read()
    local.close()
"""


def test_no_port_of_the_cluster_takes_a_peer_without_the_certificate(
    two_nodes: Cluster, tmp_path: Path
) -> None:
    """Every port listening on either node, and those of a default (Local)cluster started
    on node A, tried from the other node: none takes a plain connection, a plain Dask
    client, a TLS client without a certificate or with another CA's; the HTTP servers
    (dashboards, metrics) are on loopback only. The scheduler's log says why it refused."""
    head, a, b = two_nodes.head, two_nodes.a, two_nodes.b
    script = tmp_path / "local_cluster.py"
    script.write_text(LOCAL_CLUSTER)
    local = subprocess.Popen(
        a.command(sys.executable, str(script), str(tmp_path / "local")), stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, env={**a.env(), "PYTHONPATH": str(ROOT)},
        start_new_session=True,
    )  # fmt: skip
    try:
        assert local.stdout is not None
        local_address = local.stdout.readline().strip()  # the cluster is up
        assert local_address.startswith("tcp://127.0.0.1:"), local_address
        tried = {}
        for on, target, netns in ((b, HEAD, a.netns), (a, NODE_B, b.netns)):
            ports = sorted({port for _, port in listeners(netns)})
            tried[target] = (listeners(netns), probe(two_nodes, on, target, ports, tmp_path))
    finally:
        local.stdin.close()  # type: ignore[union-attr]
        local.wait(timeout=60)
    print(json.dumps({t: found for t, (_, found) in tried.items()}, indent=1))
    print("\n".join(line for line in head.log("scheduler").splitlines() if "TLS hand" in line))
    for target, (bound, found) in tried.items():
        assert len(found) >= 3, bound  # at least: a worker, its nanny, its HTTP server
        for port, attempts in found.items():
            if attempts["tcp"]:
                assert "refused" in attempts["tcp"].lower(), (target, port, attempts)
                continue
            assert all(attempts[k] for k in attempts if k != "tcp"), (target, port, attempts)
    head_ports = tried[HEAD][1]
    assert not head_ports[8786]["tcp"]  # the scheduler listens on the network, with TLS
    refused = head.log("scheduler")
    assert "PEER_DID_NOT_RETURN_A_CERTIFICATE" in refused
    assert "CERTIFICATE_VERIFY_FAILED" in refused
    # Only the processes judged are read: another one in the namespaces may end between
    # the listing and the read (psutil.NoSuchProcess in a fresh root's run, d2b9d47).
    in_nodes = {int(pid)
                for netns in (a.netns, b.netns)
                for pid in sh("ip", "netns", "pids", netns).stdout.split()}  # fmt: skip

    def user(pid: int) -> int:
        assert pid in in_nodes, (pid, in_nodes)
        return psutil.Process(pid).uids().real

    if not two_nodes.unprivileged:
        assert user(b.processes["worker"].pid) == NOBODY
        assert user(head.processes["scheduler"].pid) == NOBODY
    assert user(a.processes["worker"].pid) == 0


WRONG_FMAS = """
def matmul_fmas(I: int, J: int, K: int) -> int:  # noqa: E741
    return I * J  # forgot K
"""
NO_GRAPH = """
def matmul_graph(I: int, J: int, K: int, dtype: str = "float32"):  # noqa: E741
    return None
"""


def plant_class(root: Path) -> list[str]:
    """Six small submissions (katas 01 and 02), each file marked with its name. None solves
    measure_peak: its verdict is a measurement of the node's peak, which may differ from
    node to node and, on a loaded machine, from run to run, as any speed verdict may."""
    measured = planted.partly_solved(PEAK, {"matmul_fmas", "percent_of_peak"})
    graph = planted.partly_solved(GRAPH)
    stubs = {kata.id: kata.stub_path(ROOT).read_text() for kata in (PEAK, GRAPH)}
    wrong = planted.with_function(measured, "matmul_fmas", WRONG_FMAS)
    no_graph = planted.with_function(graph, "matmul_graph", NO_GRAPH)
    subs = {
        "right": {PEAK.id: measured, GRAPH.id: graph},
        "wrong": {PEAK.id: wrong, GRAPH.id: graph},
        "half": {PEAK.id: measured, GRAPH.id: stubs[GRAPH.id]},
        "graph-only": {GRAPH.id: graph},
        "no-graph": {PEAK.id: measured, GRAPH.id: no_graph},
        "stubs": stubs,
    }
    for name, modules in subs.items():
        planted.write(root / name, {k: f"# submission {name}\n{v}" for k, v in modules.items()})
    return list(subs)


def as_graded(doc: dict[str, Any]) -> dict[str, Any]:
    """A grade, less where and how long, and the memory addresses in its messages (an
    object's repr in hypothesis' report): the same on any node, in any run."""
    kept = {k: v for k, v in doc.items() if k not in ("node", "seconds", "graded_at")}
    kept["katas"] = [{**k, "seconds": 0} for k in doc["katas"]]
    return json.loads(re.sub(r" at 0x[0-9a-f]+", " at 0x...", json.dumps(kept)))


def differences(one: Any, other: Any, where: str = "") -> list[str]:
    """Where two grades differ, as paths into them, with both values."""
    if isinstance(one, dict) and isinstance(other, dict):
        keys = dict.fromkeys([*one, *other])
        return [d for k in keys for d in differences(one.get(k), other.get(k), f"{where}.{k}")]
    if isinstance(one, list) and isinstance(other, list) and len(one) == len(other):
        pairs = enumerate(zip(one, other, strict=True))
        return [d for i, (x, y) in pairs for d in differences(x, y, f"{where}[{i}]")]
    return [] if one == other else [f"{where}: {one!r} != {other!r}"]


def grade_on(node: Node, cwd: Path, out: str, names: list[str], certs: Path) -> list[str]:
    """`xtc-katas grade` as docs/grading.md runs it with a TLS scheduler, from `node`."""
    confined = [] if not sandbox.unavailable() else ["--unconfined"]
    return node.command(sys.executable, "-m", "xtc_katas", "grade", *names, "--out", out,
                        "--katas", "1-2", "--backend", "mlir", "--scheduler", SCHEDULER,
                        "--tls-dir", str(certs / "grader"), *confined)  # fmt: skip


def grading_now(node: Node) -> str:
    """The submission `node` is grading (its mark in its grading's copy), or ""."""
    try:  # Python 3.11's glob raises when a grading's folder goes while it is read
        stubs = list((node.folder / "tmp").glob("xtc-katas-grade-*/run/xtc-katas/katas/*/*.py"))
    except FileNotFoundError:  # (the fresh-root CI, after a678371): ask again next poll
        return ""
    for stub in stubs:
        try:
            first = stub.read_text().partition("\n")[0]
        except OSError:  # removed meanwhile
            continue
        if first.startswith("# submission "):
            return first.removeprefix("# submission ")
    return ""


def graded_by(out: Path) -> dict[str, str]:
    found = {}
    for record in out.glob("*/grading.json"):
        try:
            found[record.parent.name] = json.loads(record.read_text())["node"]["hostname"]
        except (OSError, ValueError, KeyError):  # being written
            continue
    return found


@pytest.mark.slow  # each node copies the suite
# The class twice (two nodes, then one), each wait bounded by CLASS: pytest-timeout's 300 s
# stopped it in a fresh root at a load of 8, where each node also warms its trusted cache.
@pytest.mark.timeout(2 * CLASS)
def test_a_class_on_two_nodes_is_graded_as_on_one_and_a_lost_node_s_grading_moves(
    two_nodes: Cluster, tmp_path: Path
) -> None:
    """Six submissions on the two nodes: each grades some; node B is killed (its nanny and
    worker at once) in the middle of its second grading, which node A grades instead.
    Then the same class on node A alone: every grade the same, less node and seconds."""
    a, b = two_nodes.a, two_nodes.b
    names = plant_class(tmp_path)
    env = {**a.env(), **{k: v for k, v in os.environ.items() if k.startswith("XTC_KATAS_")}}
    env["PYTHONPATH"] = str(ROOT)  # the instructor's checkout
    started = time.monotonic()
    with (tmp_path / "two.log").open("wb") as log:
        grader = subprocess.Popen(grade_on(a, tmp_path, "two", names, two_nodes.certs),
                                  cwd=tmp_path, env=env, stdout=log, stderr=log)  # fmt: skip
    try:
        lost = ""

        def b_grades_its_second() -> bool:
            nonlocal lost
            if grader.poll() is not None:  # the class ended without it: no use waiting
                pytest.fail(
                    f"the class ended (exit {grader.returncode}) before node B was seen "
                    f"grading a second submission:\n{(tmp_path / 'two.log').read_text()}"
                )
            done = graded_by(tmp_path / "two")
            lost = grading_now(b)
            return "node-b" in done.values() and lost not in ("", *done)

        wait_for("node B grading its second submission", b_grades_its_second, CLASS,
                 lambda: (tmp_path / "two.log").read_text())  # fmt: skip
        b.kill("worker")
        assert grader.wait(timeout=CLASS) == 0, (tmp_path / "two.log").read_text()
    finally:
        if grader.poll() is None:
            grader.kill()
    two = time.monotonic() - started
    on_two = {n: json.loads((tmp_path / "two" / n / "grading.json").read_text()) for n in names}
    hosts = {n: doc["node"]["hostname"] for n, doc in on_two.items()}
    assert set(hosts.values()) == {"node-a", "node-b"}, hosts
    assert hosts[lost] == "node-a" and on_two[lost]["grading_status"] == "graded", hosts
    leftovers = [p for p in psutil.process_iter(["cmdline"])
                 if str(b.folder / "tmp") in " ".join(p.info["cmdline"] or [])]  # fmt: skip
    assert not leftovers  # nothing of node B's grading runs on

    started = time.monotonic()
    done = subprocess.run(grade_on(a, tmp_path, "one", names, two_nodes.certs), cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=CLASS)  # fmt: skip
    one = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert "on 1 node(s)" in done.stderr
    for name in names:
        alone = json.loads((tmp_path / "one" / name / "grading.json").read_text())
        assert alone["node"]["hostname"] == "node-a"
        assert alone["grading_status"] == "graded" and alone["secure_cluster"] is True
        differ = differences(as_graded(alone), as_graded(on_two[name]))
        assert not differ, f"{name}:\n" + "\n".join(differ)
    right, wrong = (on_two[n]["katas"] for n in ("right", "wrong"))
    assert right[0]["tasks_passed"] == 2 and right[1]["verdict"] == "passed", right
    assert wrong[0]["tasks"]["matmul_fmas"] == "failed", wrong
    print(
        f"graded by {hosts}; node B lost while grading {lost!r}; wall times: "
        f"{two:.0f} s on two nodes (one lost), {one:.0f} s on node A alone"
    )
