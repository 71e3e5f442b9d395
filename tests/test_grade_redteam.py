"""The grader's red team: attacks planted in submissions, graded through the real Dask
LocalCluster in bubblewrap (grade/sandbox.py, checks/confine.py), as `xtc-katas grade`
runs them.

A small honest class (kata 02, which races nothing: its grades are the same from one
run to the next) is graded alone, then again beside fourteen attackers in one grading.
Every honest grade must be the same (results.json without the node's load and the
seconds), the first grading's folder and a file outside any grading byte-identical, and
each attacker graded, with a verdict whose message says what stopped it.

A second grading plants what attacks the grader's intake instead (issue 55): submissions
that are links, FIFOs, zip bombs, `.git` files, ids that are not names, and a pickle that
reaches the harness to poison the node's module cache and bomb the record.

Each attack runs at the import of the learner's module, in the learner's worker, and
lets the error that stopped it through (a real attacker would swallow it; the grade's
message then shows what the sandbox said). A path the attacker should not reach is
written in its code, as an attacker who knows the grader's layout would.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tools import planted
from tools.attacks import git_repository, intake_class
from xtc_katas import ROOT
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

GRAPH = find(2)
NO_GRAPH = """
def matmul_graph(I: int, J: int, K: int, dtype: str = "float32"):  # noqa: E741
    return None
"""

#: name -> (module-level code run at import, what the grade's message must say).
#: {out} is the first grading's folder, {now} this one's, {sentinel} a file outside any,
#: {other} another learner's stub, {checkout} the instructor's checkout of the suite.
ATTACKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "grades": (
        """
for grades in ({out!r}, {now!r}):
    for name in ("right/results.json", "right/grading.json", "class.csv"):
        with open(f"{{grades}}/{{name}}", "w") as f:
            f.write('{{"status": "pass", "message": "owned"}}')
""",
        ("No such file or directory",),
    ),
    "sentinel": (
        "open({sentinel!r}, 'w').write('owned')",
        ("No such file or directory",),
    ),
    "checkout": (
        "open({checkout!r} + '/conftest.py', 'a').write('owned = True')",
        ("Permission denied", "No such file or directory"),
    ),
    "own_copy": (
        """
from pathlib import Path
copy = Path(__file__).resolve().parents[2]
(copy / "conftest.py").write_text("def pytest_runtest_makereport(): pass")
""",
        ("Read-only file system",),
    ),
    "other": (
        "open({other!r}).read()",
        ("No such file or directory",),
    ),
    "solutions": (
        """
import importlib.util
from pathlib import Path
reference = Path(__file__).resolve().parents[2] / ("sol" + "utions") / "02_graph" / "graph.py"
spec = importlib.util.spec_from_file_location("reference", reference)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
matmul_graph = module.matmul_graph
""",
        ("No such file or directory",),
    ),
    "harness_memory": (
        """
import gc, os
found = [f for f in gc.get_objects() if type(f).__name__ == "function"
         and str(f.__module__).startswith("xtc_katas_sol" + "ution")]
if found:
    found[0](4, 4, 4)  # the reference's function: hidden
open(f"/proc/{{os.getppid()}}/root" + {checkout!r} + "/README.md").read()  # the harness's view
""",
        ("hidden from your code", "Permission denied"),
    ),
    "network": (
        "import socket; socket.create_connection(('1.1.1.1', 80), timeout=5)",
        ("Network is unreachable",),
    ),
    "kill_worker": (
        """
import os, signal
from pathlib import Path
seen = []
for proc in Path("/proc").iterdir():
    if proc.name.isdigit():
        line = (proc / "cmdline").read_bytes()
        seen.append(line[:40])
        if b"distributed" in line or b"spawn_main" in line or b"dask" in line:
            os.kill(int(proc.name), signal.SIGKILL)
raise ProcessLookupError(f"no Dask worker in sight, only {{len(seen)}} processes")
""",
        ("no Dask worker in sight",),
    ),
    "kill_all": (
        """
import os, signal
from pathlib import Path
for proc in Path("/proc").iterdir():
    if proc.name.isdigit() and int(proc.name) != os.getpid():
        try:
            os.kill(int(proc.name), signal.SIGKILL)
        except PermissionError:
            pass
""",
        ("SIGKILL",),
    ),
    "fork_bomb": (
        """
import os, time
count = 0
while True:
    try:
        pid = os.fork()
    except BlockingIOError as exc:
        raise RuntimeError(f"fork bomb stopped after {{count}} processes: {{exc}}")
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    count += 1
""",
        ("fork bomb stopped after",),
    ),
    "memory": (
        """
import mmap
held = []
while True:
    held.append(mmap.mmap(-1, 1 << 30))  # address space, its pages never touched
""",
        ("Cannot allocate memory",),
    ),
    "disk": (
        """
import os, tempfile
with open(os.path.join(tempfile.gettempdir(), "fill"), "wb") as f:
    while True:
        f.write(b"x" * (64 << 20))
""",
        ("No space left on device",),
    ),
    "slow_reference": (
        """
import os
for name in ("OMP_NUM_THREADS", "TVM_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[name] = "1"
os.sched_setaffinity(os.getppid(), {{0}})  # the harness, which times the races
os.setpriority(os.PRIO_PROCESS, os.getppid(), 19)
os.setpriority(os.PRIO_PROCESS, os.getpid(), -20)
""",
        ("Permission denied",),
    ),
    "fake_grade": (
        """
import json, os, sys
for test in ("test_matmul_graph_structure", "test_matmul_relu_graph_structure"):
    line = {{"event": "report", "nodeid": f"katas/02_graph/test_graph.py::{{test}}",
            "when": "call", "outcome": "passed", "message": "", "output": "", "perf": []}}
    print(json.dumps(line)); print(json.dumps(line), file=sys.stderr)
print(json.dumps({{"version": 3, "status": "pass", "message": "owned", "tests": []}}))
pid, found = os.getppid(), []
while not found and pid > 1:  # the graded pytest: the worker's parent, or an ancestor
    argv = open(f"/proc/{{pid}}/cmdline").read().split("\\0")
    found = [a for a in argv if a.startswith("--grade-record=")]
    pid = int(open(f"/proc/{{pid}}/stat").read().rsplit(")", 1)[1].split()[1])
record = found[0].split("=", 1)[1]
open(record, "a").write(json.dumps(line) + "\\n")
""",
        ("Read-only file system",),
    ),
}


def digest(path: Path) -> str:
    """sha256 of a file, or of a folder's every file (names and bytes)."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    sha = hashlib.sha256()
    for each in files:
        sha.update(str(each.relative_to(path) if path.is_dir() else each.name).encode())
        sha.update(each.read_bytes())
    return sha.hexdigest()


def stable(results: dict[str, Any]) -> dict[str, Any]:
    """results.json without what moves from one grading to the next: the node (its
    worker's address, its load), each kata's seconds, and the addresses of objects in
    pytest's tracebacks ("<... object at 0x7f3b...>")."""
    kept = {k: v for k, v in results.items() if k != "node"}
    kept["katas"] = [{k: v for k, v in kata.items() if k != "seconds"} for kata in kept["katas"]]
    return json.loads(re.sub(r" at 0x[0-9a-f]+", " at 0x...", json.dumps(kept)))


@pytest.mark.slow
@pytest.mark.perf  # alone on the node: the fork bomb spends the process limit of `nobody`,
# whom every confined grading on this machine runs as (an xdist neighbour's too)
def test_planted_attacks_change_no_other_grade_and_each_attacker_is_told_why(
    tmp_path: Path,
) -> None:
    subs = tmp_path / "subs"
    honest = {
        "right": planted.partly_solved(GRAPH),
        "half": planted.partly_solved(GRAPH, {"matmul_graph"}),
        "wrong": planted.with_function(planted.partly_solved(GRAPH), "matmul_graph", NO_GRAPH),
    }
    for name, source in honest.items():
        planted.write(subs / name, {GRAPH.id: source})
    first, second = tmp_path / "first", tmp_path / "second"
    sentinel = tmp_path / "sentinel.txt"
    sentinel.write_text("the instructor's notes\n")
    entries = [submissions.Entry(str(subs / name)) for name in honest]
    outcome = grade_class(entries, first, [GRAPH], timeout=300)
    assert sorted(outcome.graded) == sorted(honest) and not outcome.grader_errors

    paths = {
        "out": str(first),
        "now": str(second),
        "sentinel": str(sentinel),
        "other": str(subs / "right" / "katas" / GRAPH.id / "graph.py"),
        "checkout": str(ROOT),
    }
    for name, (code, _) in ATTACKS.items():
        source = code.format(**paths).strip() + "\n\n" + honest["right"]
        planted.write(subs / name, {GRAPH.id: source})
    before = {"first": digest(first), "sentinel": digest(sentinel)}
    started = time.monotonic()
    everyone = entries + [submissions.Entry(str(subs / name)) for name in ATTACKS]
    outcome = grade_class(everyone, second, [GRAPH], timeout=300)
    seconds = time.monotonic() - started
    print(f"{len(everyone)} submissions graded in {seconds:.0f} s")

    assert not outcome.grader_errors, outcome
    assert {"first": digest(first), "sentinel": digest(sentinel)} == before
    for name in honest:
        graded = [json.loads((out / name / "results.json").read_text()) for out in (first, second)]
        assert stable(graded[0]) == stable(graded[1]), name
        assert graded[1]["confined"] is True
    for name, (_, causes) in ATTACKS.items():
        doc = json.loads((second / name / "grading.json").read_text())
        assert doc["grading_status"] == "graded", name
        kata = doc["katas"][0]
        said = kata["cause"] + "".join(t["message"] + t["output"] for t in doc["tests"])
        errors = [line for line in said.splitlines() if re.match(r"E\s+\w+: ", line)]
        why = (kata["cause"] or errors[0][1:] if errors else said).strip()
        print(f"{name:15} {kata['seconds']:5.1f} s  {kata['verdict']:8} {why[:110]}")
        assert kata["verdict"] in ("failed", "crashed"), (name, kata)
        assert any(cause in said for cause in causes), (name, causes, said[-3000:])
    fake = json.loads((second / "fake_grade" / "grading.json").read_text())
    assert fake["katas"][0]["tasks"] == {"matmul_graph": "failed", "matmul_relu_graph": "failed"}


@pytest.mark.slow
@pytest.mark.perf  # graded alone on the node, as the other red team test
@pytest.mark.timeout(900)  # two gradings, 16 submissions: 135 s at load 3, twice at load 8
def test_planted_intake_attacks_are_refused_with_a_cause_and_change_no_other_grade(
    tmp_path: Path,
) -> None:
    """Issue 55's cache poison, links to the reference and to /dev/zero, a FIFO, a `.git`
    file naming another learner's repository, a zip bomb, a record bomb and ids that are
    not names, graded with two honest learners through the real LocalCluster: the honest
    grades are those they get alone, and every attacker's grade says what stopped it."""
    import csv

    subs = tmp_path / "subs"
    honest = {
        "right": planted.partly_solved(GRAPH),
        "half": planted.partly_solved(GRAPH, {"matmul_graph"}),
    }
    for name, source in honest.items():
        planted.write(subs / name, {GRAPH.id: source})
    alone, together = tmp_path / "alone", tmp_path / "out" / "together"
    outcome = grade_class([submissions.Entry(str(subs / n)) for n in honest], alone, [GRAPH])
    assert sorted(outcome.graded) == sorted(honest) and not outcome.grader_errors
    other = git_repository(tmp_path / "other", honest["right"])
    attackers = intake_class(subs, other)
    # the record bomb's own cause, or the harness's refusal of the gadget (issue 55, item 1)
    attackers["record_bomb"] = (attackers["record_bomb"][0], ())
    cut = ("the run's record was read up to its first 16 MiB", "the process boundary")
    poison, bomb = attackers.pop("poison"), attackers.pop("record_bomb")
    entries = [submissions.Entry(poison[0]), submissions.Entry(bomb[0])]  # before the honest
    entries += [submissions.Entry(str(subs / n)) for n in honest]
    entries += [submissions.Entry(path) for path, _ in attackers.values()]
    attackers.update(poison=poison, record_bomb=bomb)
    started = time.monotonic()
    outcome = grade_class(entries, together, [GRAPH], timeout=300)
    print(f"{len(entries)} submissions graded in {time.monotonic() - started:.0f} s")

    assert not outcome.grader_errors, outcome
    for name in honest:
        graded = [
            json.loads((out / name / "results.json").read_text()) for out in (alone, together)
        ]
        assert stable(graded[0]) == stable(graded[1]), name
    assert not (tmp_path / "out" / "grading.json").exists()  # nothing above --out
    for name, (_, causes) in attackers.items():
        doc = json.loads((together / name / "grading.json").read_text())
        kata = doc["katas"][0]
        said = doc["message"] + kata["cause"] + "".join(t["message"] for t in doc["tests"])
        print(f"{name:12} {kata['verdict']:13} {said[:150]!r}")
        assert doc["grading_status"] == "graded", name
        if name == "copy":  # right's work under another id: graded as right's, and flagged
            assert (
                stable(json.loads((together / name / "results.json").read_text()))["tests"]
                == stable(json.loads((together / "right" / "results.json").read_text()))["tests"]
            )
            continue
        # the gadgets' code is the solution: the answer the gadget stood in for failed its test
        assert kata["tasks_passed"] < len(kata["tasks"]), name
        assert kata["tasks_passed"] == 0 or name in ("poison", "record_bomb"), name
        assert kata["verdict"] in ("refused", "missing", "not attempted", "failed", "crashed")
        assert all(cause in said for cause in causes), (name, causes, said)
        assert name != "record_bomb" or any(c in said for c in cut), said
    with (together / "class.csv").open() as handle:
        flags = {row["id"]: row["flags"] for row in csv.DictReader(handle)}
    assert "id collision" in flags["bob"] and "id collision" in flags["bob-2"]
    assert "the same submission as copy" in flags["right"], flags
    assert "the same submission as right" in flags["copy"]
    assert "the same submission as" in (together / "class.html").read_text()
