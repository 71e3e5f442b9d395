"""What a child sends the harness is data, decoded by a schema (measure/wire.py): the
decoder, fed arbitrary bytes and hostile but well-formed messages, never runs code, never
allocates past its cap, and fails with a message that names the task; issue 55's two
pickle gadgets, planted in a learner's function, are refused and run nothing; and the
learner's worker, a fresh interpreter, holds none of the reference."""

from __future__ import annotations

import json
import os
import re
import sys
import tracemalloc
from pathlib import Path

import msgspec
import numpy as np
import pytest
import xtc.graphs.xtc.op  # noqa: F401  (a graph's first decoding imports it: not its code)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.attacks import GADGETS, attacker_stub
from tools.copy_runs import run_python
from xtc_katas.checks.confine import CONFINE_ENV
from xtc_katas.checks.learner import Learner, reference_learner
from xtc_katas.grade.repo_copy import copy_repository, learner_env
from xtc_katas.kata import loader
from xtc_katas.kata.manifest import find
from xtc_katas.measure import isolation, wire
from xtc_katas.measure.isolation import NotPlainData, Worker

TASK = "04_scheduling › schedule_interchange()"
#: Audit events that mean code of the message's choosing ran, or wrote, in the harness.
RAN = re.compile(
    r"^(subprocess\.Popen|os\.system|os\.exec|os\.posix_spawn|os\.spawn|os\.fork|"
    r"pickle\.find_class|exec|compile|ctypes\.|mmap\.|os\.remove|os\.rename|shutil\.)"
)
_SEEN: list[str] = []
_WATCHING: list[bool] = []


def _audit(event: str, args: tuple) -> None:
    if _WATCHING and RAN.match(event):
        _SEEN.append(event)
    elif _WATCHING and event == "open" and len(args) > 1 and set(str(args[1])) & set("wax+"):
        _SEEN.append(f"open {args[0]} for writing")


sys.addaudithook(_audit)


def _worker() -> Worker:
    """A Worker of no process, to decode what a child would send it."""
    worker = Worker.__new__(Worker)
    worker.what = TASK
    worker.close = lambda kill=False: None  # type: ignore[method-assign]
    return worker


def _decoded(data: bytes) -> object:
    """What the harness makes of `data`: the value, or the exception it raises; checked
    to have run nothing and allocated at most a few times its size."""
    _SEEN.clear()
    tracemalloc.start()
    _WATCHING.append(True)
    try:
        return Worker._decoded(_worker(), data)
    except Exception as exc:
        return exc
    finally:
        _WATCHING.clear()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert not _SEEN, f"decoding ran {_SEEN}"
        assert peak <= 3 * len(data) + (4 << 20), f"{peak} bytes allocated for {len(data)}"


def _judged(found: object) -> None:
    """A value of the schema's, a builtin or harness exception, or NotPlainData naming
    the task and what to return."""
    if isinstance(found, NotPlainData):
        assert TASK in str(found) and "does not take across the process boundary" in str(found)
        assert "return plain values" in str(found)
    elif isinstance(found, BaseException):
        kind = type(found)
        assert isinstance(found, Exception), kind
        assert kind.__module__ in ("builtins", "xtc_katas.measure.isolation") or (
            kind.__module__.startswith("xtc_katas.")
        ), kind


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=4096))
def test_arbitrary_bytes_run_nothing_and_are_refused_naming_the_task(data):
    _judged(_decoded(data))


names = st.one_of(
    st.sampled_from(
        ["subprocess.Popen", "numpy.memmap", "os.system", "builtins.eval", "x; system(1)", ""]
    ),
    st.text(max_size=80),
    st.sampled_from(sorted(wire.RECORDS)),
)
dtypes = st.one_of(
    st.sampled_from(sorted(wire.ALLOWED_DTYPES)), st.sampled_from(["object", "V8", ">f8", "<U3"])
)
shapes = st.lists(st.integers(min_value=-1, max_value=2**62), max_size=10)
leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(),
    st.text(max_size=20),
    st.builds(wire.Raw, st.binary(max_size=64)),
    st.builds(wire.Array, dtypes, shapes, st.binary(max_size=256)),
    st.builds(wire.Scalar, dtypes, st.binary(max_size=16)),
)


def _containers(children):
    tensor = st.builds(wire.GraphTensor, st.text(max_size=6) | st.just("%0"), shapes, dtypes)
    node = st.builds(
        wire.GraphNode,
        names | st.just("C"),
        st.sampled_from([*sorted(wire.GRAPH_OPS), "XTCGraphContext", "Any", "__import__"]),
        st.lists(st.tuples(names, children), max_size=3),
        st.lists(st.sampled_from(["%0", "%1", "%2"]), max_size=3),
        tensor,
    )
    return st.one_of(
        st.builds(wire.Seq, st.lists(children, max_size=4)),
        st.builds(wire.Tup, st.lists(children, max_size=4)),
        st.builds(wire.Group, st.lists(children, max_size=4), st.booleans()),
        st.builds(wire.Map, st.lists(st.tuples(children, children), max_size=4)),
        st.builds(wire.Record, names, st.lists(st.tuples(names, children), max_size=4)),
        st.builds(
            wire.Graph,
            names | st.just("matmul"),
            st.lists(tensor, max_size=3),
            st.lists(node, max_size=3),
            st.lists(st.sampled_from(["%0", "%1", "%2", "%9"]), max_size=2),
        ),
    )


values = st.recursive(leaves, _containers, max_leaves=12)
messages = st.one_of(
    st.builds(wire.Ok, values),
    st.builds(wire.Item, values),
    st.builds(wire.Ask, values),
    st.builds(wire.Refused, st.text(max_size=40)),
    st.builds(
        wire.Error,
        st.sampled_from(
            [
                "builtins.SystemExit",
                "builtins.KeyboardInterrupt",
                "builtins.ValueError",
                "builtins.eval",
                "subprocess.Popen",
                "xtc_katas.measure.module_cache.subprocess.Popen",
                "xtc_katas.kata.failures.KataFailure",
                "numpy.memmap",
            ]
        )
        | names,
        st.text(max_size=40),
        st.lists(st.text(max_size=20), max_size=2),
    ),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message=messages)
def test_hostile_well_formed_messages_run_nothing_and_are_refused_naming_the_task(message):
    _judged(_decoded(msgspec.msgpack.encode(message)))


@pytest.mark.parametrize("gadget", sorted(GADGETS))
def test_the_pickle_gadgets_of_issue_55_are_refused_and_run_nothing(tmp_path, gadget):
    sentinel = tmp_path / "sentinel"
    found = _decoded(GADGETS[gadget](str(sentinel)))
    assert isinstance(found, NotPlainData), found
    assert TASK in str(found) and "not a message of the harness's" in str(found)
    assert not sentinel.exists()


def test_what_a_message_claims_is_bounded_before_it_is_built():
    for claim in (
        wire.Array("float64", [2**40, 2**40], b"\0" * 8),  # far more than its bytes
        wire.Array("float64", [1] * (wire.MAX_DIMS + 1), b"\0" * 8),
        wire.Array("object", [1], b"\0" * 8),
        wire.Record("subprocess.Popen", [("args", "true")]),
        wire.Graph("main(){}", [], [], []),
    ):
        found = _decoded(msgspec.msgpack.encode(wire.Ok(claim)))
        assert isinstance(found, NotPlainData), (claim, found)
    nested = None
    for _ in range(wire.MAX_DEPTH + 2):
        nested = wire.Seq([nested])
    assert "nested deeper" in str(_decoded(msgspec.msgpack.encode(wire.Ok(nested))))


def test_a_graph_crosses_as_its_description_and_is_built_again():
    import xtc.graphs.xtc.op as O

    a, b = O.tensor((4, 8), "float32", name="A"), O.tensor((8, 2), "float32", name="B")
    with O.graph(name="matmul_relu") as built:
        O.relu(O.matmul(a, b, name="C"), name="R")
    graph = _decoded(wire.encode(wire.Ok(wire.to_wire(built.graph))))[1]
    assert graph.name == "matmul_relu"
    assert [(n.name, n.operator.name) for n in graph.nodes.values()] == [
        ("C", "matmul"),
        ("R", "relu"),
    ]
    assert [tuple(t.shape) for t in graph.inputs_types] == [(4, 8), (8, 2)]
    x = [np.ones((4, 8), "float32"), np.ones((8, 2), "float32")]
    from xtc.graphs.xtc.data import XTCTensor

    assert (graph.forward([XTCTensor(v) for v in x])[0].numpy() == 8).all()


@pytest.mark.parametrize("padding", [0, (1, 0), {-3: (1, 1), -2: (0, 0)}, 1])
def test_a_pad2d_crosses_whatever_it_pads(padding):
    """XTC keeps a pad2d's padding as the axes it pads, a dict its builder refuses with
    fewer than two (kata 11's "pads nothing" judgement needs the graph of padding 0)."""
    import xtc.graphs.xtc.op as O

    image = O.tensor((1, 4, 4, 3), "float32", name="I")
    with O.graph(name="padded") as built:
        O.pad2d(image, padding=padding, name="P")
    graph = _decoded(wire.encode(wire.Ok(wire.to_wire(built.graph))))[1]
    (node,) = graph.nodes.values()
    assert vars(node.operator.attrs) == vars(next(iter(built.graph.nodes.values())).operator.attrs)
    assert graph.outputs_types[0].shape == built.graph.outputs_types[0].shape


@pytest.mark.slow
@pytest.mark.parametrize("gadget", sorted(GADGETS))
def test_a_planted_pickle_gadget_fails_its_task_and_runs_nothing(tmp_path, gadget):
    """Issue 55's attackers, planted in kata 04's stub of a copy of the repository, run by
    the kata's own test as a learner runs it."""
    repo = copy_repository(tmp_path)
    sentinel = tmp_path / "sentinel"
    find(4).stub_path(repo).write_text(attacker_stub(gadget, str(sentinel)))
    code, out = run_python(
        repo,
        "-m",
        "pytest",
        "katas/04_scheduling",
        "-k",
        "schedule_interchange_computes",
        env=learner_env(XTC_KATAS_CACHE_DIR=str(tmp_path / "cache")),
        timeout=600,
    )
    assert code == 1, out
    assert "04_scheduling › schedule_interchange() gave back something the harness" in out, out
    assert "not a message of the harness's" in out, out
    assert not sentinel.exists(), f"the {gadget} gadget ran: {sentinel.read_text()!r}"


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether the readable memory of process `pid` holds `needle` (/proc/PID/maps, mem)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
        for line in maps:
            where, perms = line.split()[:2]
            if "r" not in perms or line.rstrip().endswith(("[vvar]", "[vsyscall]")):
                continue
            start, end = (int(x, 16) for x in where.split("-"))
            try:
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
            except OSError:
                continue
    return False


def _reference_line(kata_number: int) -> str:
    """A line of the kata's reference that its stub does not have: the answer."""
    kata = find(kata_number)
    stub = kata.stub_path().read_text()
    lines = loader.module_path(kata, solution=True).read_text().splitlines()
    return next(s.strip() for s in lines if "sch." in s and s.strip() not in stub)


def test_the_learners_worker_holds_none_of_the_reference():
    """The harness holds the reference (its module, its source, its recorded calls); a
    child forked from the harness holds them too (the control: the search works); the
    learner's worker, forked from the forkserver, does not."""
    kata = find(4)
    line = _reference_line(4)
    reference = reference_learner(kata)
    source = reference.module.__loader__ if hasattr(reference.module, "__loader__") else None
    held = [line.encode(), source]  # kept alive in the harness for the whole test
    assert _memory_holds(os.getpid(), held[0])
    with Worker(os.getpid, what="a kernel's child") as forked:
        assert _memory_holds(forked.process.pid, held[0]), "the search finds nothing"
    with Learner(kata, solution=False) as learner:
        assert learner.run(isolation_pid) != os.getpid()
        pid = learner._worker.process.pid  # type: ignore[union-attr]
        assert not _memory_holds(pid, held[0]), f"the learner's worker holds {line!r}"


def isolation_pid(module: object) -> int:
    return os.getpid()


def test_the_learners_worker_is_not_a_fork_of_the_harness():
    with Learner(find(4), solution=False) as learner:
        learner.run(isolation_pid)
        worker = learner._worker.process  # type: ignore[union-attr]
        parent = int(Path(f"/proc/{worker.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert parent != os.getpid(), "forked from the forkserver, not from the harness"
        assert isolation.PRELOAD[0] in sys.modules


#: Run with `python -m` from a copy's root: a learner's worker started from elsewhere (a
#: test's folder, as the plugin's tests start it), printing the file of the stub it loaded.
WHERE_THE_WORKER_LOADS = """
import os, sys
from xtc_katas.checks.learner import Learner
from xtc_katas.kata.manifest import find

os.chdir(sys.argv[1])  # a folder outside the copy
with Learner(find(1), solution=False) as learner:
    print("loaded:", learner.run(getattr, "__file__"))
"""


@pytest.mark.slow
def test_a_copys_learner_worker_loads_the_copys_stub(tmp_path):
    """A copy run as CI and the harness tests run it (`python -m`, from its root) grades
    the copy's stubs, with its xtc_katas: not those of the checkout installed in the venv
    (its editable finder), which the forkserver found from a folder outside the copy."""
    repo = copy_repository(tmp_path)
    (repo / "where_the_worker_loads.py").write_text(WHERE_THE_WORKER_LOADS)
    elsewhere = tmp_path / "elsewhere"  # in the test's folder: ./run.sh test finds no leftover
    elsewhere.mkdir()
    code, out = run_python(repo, "-m", "where_the_worker_loads", str(elsewhere), timeout=120)
    assert code == 0, out
    assert f"loaded: {find(1).stub_path(repo)}" in out.splitlines(), out


def forkserver_reached(module: object, address: str) -> bool:
    """In the learner's worker: whether the forkserver's socket is there to connect to
    (not connected to: Python 3.11's forkserver ends at a client that sends nothing)."""
    return os.path.exists(address)


def test_a_confined_worker_cannot_reach_the_forkserver_it_came_from(monkeypatch):
    """The forkserver forks whatever it is asked, outside the worker's namespaces: in a
    confined grading, the worker does not reach its socket (checks/confine.py)."""
    import multiprocessing.forkserver

    with Learner(find(4), solution=False) as learner:
        learner.run(isolation_pid)
        address = multiprocessing.forkserver._forkserver._forkserver_address
        assert learner.run(forkserver_reached, address), "the control: unconfined"
    monkeypatch.setenv(CONFINE_ENV, json.dumps({"hide": [], "read_only": []}))
    with Learner(find(4), solution=False) as learner:
        assert not learner.run(forkserver_reached, address)
    assert multiprocessing.forkserver._forkserver._forkserver_address == address


@pytest.mark.parametrize(
    "fields",
    [
        [("name", "__class__"), ("args", wire.Tup([])), ("kwargs", wire.Map([]))],
        [("name", "schedule"), ("args", wire.Tup([])), ("kwargs", wire.Map([]))],
        [("name", "interchange"), ("args", wire.Seq([])), ("kwargs", wire.Map([]))],
        [("name", "interchange"), ("args", wire.Tup([])), ("kwargs", wire.Map([(1, 2)]))],
    ],
)
def test_a_recorded_call_names_only_a_primitive_the_harness_replays(fields):
    """A schedule crosses as recorded calls, replayed by name on the harness's scheduler:
    a dunder, a read-only method, or arguments of another shape are refused."""
    kind = "xtc_katas.checks.schedule.Call"
    found = _decoded(msgspec.msgpack.encode(wire.Ok(wire.Record(kind, fields))))
    assert isinstance(found, NotPlainData), found
    fine = [("name", "interchange"), ("args", wire.Tup([wire.Seq(["i", "k", "j"])]))]
    fine.append(("kwargs", wire.Map([])))
    _, call = _decoded(msgspec.msgpack.encode(wire.Ok(wire.Record(kind, fine))))
    assert (call.name, call.args, call.kwargs) == ("interchange", (["i", "k", "j"],), {})
