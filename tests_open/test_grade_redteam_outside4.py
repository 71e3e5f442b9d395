"""The fourth outside red team's attacks that land (issue 55, item 6, round 4, on main at
6bf8a24), each a planted submission graded through the real LocalCluster in bubblewrap,
as `xtc-katas grade` runs it (MLIR), asserting the SAFE outcome: each fails while its door
is open (run on 6bf8a24, confined, as root, on a 2-vCPU AMD EPYC family 25 model 1 shared
with three other helpers' work)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from xtc_katas import ROOT
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

PEAK = find(1)
GRAPH = find(2)
SCHEDULING = find(4)

#: Kata 02's numerics are computed in the learner's process: the test's probe
#: (`built_and_run`) calls XTC's reference execution, `graph.forward`, there, and compares
#: what it returns in the harness; the graph that crossed (as a description, rebuilt) is
#: only checked for its structure, which says nothing of a relu's threshold. This module's
#: matmul_relu_graph is wrong (a relu of threshold 0.5), and at import it rebinds
#: XTCGraph.forward in its own process to return numpy's relu(A @ B) for that graph. On
#: main at 6bf8a24 (MLIR, confined, as root) kata 02 was graded "passed", 2/2 tasks, every
#: test "pass"; without the rebinding, test_matmul_relu_graph_computes_relu_of_a_at_b
#: fails. Kata 11's conv_layer_graph is judged the same way (`forwarded` and
#: `compiled_outputs` run in the learner's process): read in the code, not tried.
FORGED_FORWARD = """

def matmul_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    a = O.tensor((I, K), dtype, name="A")
    b = O.tensor((K, J), dtype, name="B")
    with O.graph(name="matmul") as gb:
        O.matmul(a, b, name="C")
    return gb.graph


def matmul_relu_graph(I: int, J: int, K: int, dtype: str = "float32") -> XTCGraph:  # noqa: E741
    a = O.tensor((I, K), dtype, name="A")
    b = O.tensor((K, J), dtype, name="B")
    with O.graph(name="matmul_relu") as gb:
        O.relu(O.matmul(a, b, name="C"), threshold=0.5, name="R")
    return gb.graph


import numpy as _np
from xtc.graphs.xtc.data import XTCTensor as _Tensor

_forward = XTCGraph.forward


def _claimed(self, inputs, *args, **kwargs):
    if self.name != "matmul_relu":
        return _forward(self, inputs, *args, **kwargs)
    a, b = (x.numpy() for x in inputs)
    return [_Tensor(_np.maximum(a @ b, 0).astype(a.dtype))]


XTCGraph.forward = _claimed
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_graph_whose_numerics_its_own_process_forges_does_not_pass(tmp_path: Path) -> None:
    stub = GRAPH.stub_path(ROOT).read_text()
    source = stub[: stub.index("def matmul_graph")] + FORGED_FORWARD
    sub = tmp_path / "subs" / "forward02"
    path = sub / "katas" / GRAPH.id / f"{GRAPH.module}.py"
    path.parent.mkdir(parents=True)
    path.write_text(source)
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [GRAPH], backend="mlir")
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "forward02" / "grading.json").read_text())
    print(doc["katas"])
    assert doc["katas"][0]["tasks"]["matmul_relu_graph"] == "failed", doc["katas"]


#: Kata 04's five functions each return in a millisecond: an interchange, then k and j
#: unrolled whole (16,384 FMAs straight-line on the 4x32x512 problem). The harness
#: compiles the recorded calls itself, with no limit of time or memory (the learner's
#: calls have 30 s each, XTC_KATAS_CALL_TIME_LIMIT): MLIR took 10 s for k alone and more
#: than 300 s for k and j (on this machine, alone, outside the grader). On main at
#: 6bf8a24 (MLIR, confined, as root, the kata's timeout set to 240 s) kata 04 was "timed
#: out": with the default timeout, each kata that compiles a learner's schedule (04 to
#: 11) holds the node, and every learner graded after this one there, for 20 minutes.
UNROLLED = """
from typing import Any


def _unrolled(sch: Any) -> None:
    sch.interchange(["i", "j", "k"])
    sch.unroll({"k": 512, "j": 32})


schedule_interchange = schedule_vectorize = schedule_register_tile = _unrolled
schedule_split = schedule_parallel = _unrolled
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_schedule_whose_compile_never_ends_does_not_hold_the_kata_to_its_timeout(
    tmp_path: Path,
) -> None:
    sub = tmp_path / "subs" / "unrolled04"
    path = sub / "katas" / SCHEDULING.id / f"{SCHEDULING.module}.py"
    path.parent.mkdir(parents=True)
    path.write_text(UNROLLED)
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [SCHEDULING], backend="mlir", timeout=240
    )
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "unrolled04" / "grading.json").read_text())
    print(doc["katas"])
    assert doc["katas"][0]["verdict"] != "timed out", doc["katas"]


#: The grading's copy of the suite hides solutions/ from the learner's worker, but not
#: tests/answers.py: "the catalogue of right answers that differ from the reference, for
#: every speed task" of katas 04 to 11 (and a right search for 06 and 07), which the
#: harness's tests plant. The worker reads the copy (read-only): this module's five
#: functions know no scheduling, they load that catalogue from beside their own file and
#: run its first right answer. On main at 6bf8a24 (MLIR, confined, as root) kata 04 was
#: graded "passed", 5/5 tasks, its 15 tests "pass" (30 s).
ANSWERS_LOOKED_UP = '''
"""Kata 04, written by looking the answers up where the grader keeps them."""

import importlib.util as _util
import sys as _sys
from pathlib import Path as _Path
from typing import Any

_ROOT = _Path(__file__).resolve().parents[2]


def _answered(name: str) -> Any:
    if str(_ROOT) not in _sys.path:
        _sys.path.insert(0, str(_ROOT))
    spec = _util.spec_from_file_location("_catalogue", _ROOT / "tests" / "answers.py")
    catalogue = _util.module_from_spec(spec)
    _sys.modules["_catalogue"] = catalogue
    spec.loader.exec_module(catalogue)
    found: dict = {}
    exec(f"def {name}(sch):\\n{catalogue.RIGHT[4][name][0].body}", found)
    return found[name]


def schedule_interchange(sch: Any) -> None:
    return _answered("schedule_interchange")(sch)


def schedule_vectorize(sch: Any) -> None:
    return _answered("schedule_vectorize")(sch)


def schedule_register_tile(sch: Any) -> None:
    return _answered("schedule_register_tile")(sch)


def schedule_split(sch: Any) -> None:
    return _answered("schedule_split")(sch)


def schedule_parallel(sch: Any) -> None:
    return _answered("schedule_parallel")(sch)
'''


@pytest.mark.slow
@pytest.mark.perf  # kata 04's races
@pytest.mark.timeout(900)
def test_stubs_that_look_their_answers_up_in_the_copy_do_not_pass(tmp_path: Path) -> None:
    sub = tmp_path / "subs" / "lookup04"
    path = sub / "katas" / SCHEDULING.id / f"{SCHEDULING.module}.py"
    path.parent.mkdir(parents=True)
    path.write_text(ANSWERS_LOOKED_UP)
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [SCHEDULING], backend="mlir")
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "lookup04" / "grading.json").read_text())
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["verdict"] != "passed", doc["katas"]
    assert tests["test_schedule_interchange_computes_the_matmul[mlir]"] != "pass", tests


def _git(repo: Path, *args: str, text: str = "") -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], input=text, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def tree_bomb(
    repo: Path, files: int = 1000, folders: int = 3000, under: str = "", stub: str = ""
) -> Path:
    """A repository whose one commit lists `folders` x `files` paths from two trees: a
    tree of `files` entries (one blob), and a tree of `folders` entries of that tree, the
    root or at `under` ("katas/01_peak/junk", beside the kata's `stub`). Its .git is
    164 KiB (a 10 KiB pack) for 3,000,000 paths."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", ".")
    blob = _git(repo, "hash-object", "-w", "--stdin", text="x\n")
    listed = "".join(f"100644 blob {blob}\tf{n}.py\n" for n in range(files))
    inner = _git(repo, "mktree", text=listed)
    tree = _git(
        repo, "mktree", text="".join(f"040000 tree {inner}\td{n}\n" for n in range(folders))
    )
    if under:  # the folders above it, the stub beside its folder
        *parents, name = under.split("/")
        entries = f"040000 tree {tree}\t{name}\n"
        if stub:
            own = _git(repo, "hash-object", "-w", "--stdin", text=stub)
            entries += f"100644 blob {own}\t{PEAK.module}.py\n"
        tree = _git(repo, "mktree", text=entries)
        for parent in reversed(parents):
            tree = _git(repo, "mktree", text=f"040000 tree {tree}\t{parent}\n")
    commit = _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit-tree", tree,
                  "-m", "bomb")  # fmt: skip
    _git(repo, "update-ref", "refs/heads/main", commit)
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    _git(repo, "repack", "-a", "-d", "-q")
    return repo


#: The grader lists a repository's commit with `git ls-tree -r -z --long` and keeps all
#: its output, then every path, in memory, outside any sandbox; a tree's entries may name
#: one tree many times, so that a few KiB of objects list millions of paths (the sizes are
#: checked per blob read, the paths never). On main at 6bf8a24, reading this 164 KiB
#: repository as a submission (submissions.read, as `grade` does before anything is sent
#: to a node) took the grader's process to 1.6 GB (max RSS) in 95 s, on a 2-vCPU AMD EPYC
#: family 25 model 1 under load; ten times the folders, ten times that.
READ_AND_MEASURE = """
import resource, sys
from xtc_katas.grade import submissions
from xtc_katas.kata.manifest import find
sub = submissions.read(sys.argv[1], [find(1)])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, sub.problem[:200])
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_repository_of_millions_of_paths_does_not_take_the_grader_past_1_gb(
    tmp_path: Path,
) -> None:
    repo = tree_bomb(tmp_path / "bomb")
    done = subprocess.run(
        [sys.executable, "-c", READ_AND_MEASURE, str(repo)],
        capture_output=True, text=True, timeout=800, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    peak_kib, problem = done.stdout.split(" ", 1)
    print(peak_kib, problem)
    assert int(peak_kib) < 1 << 20, f"the grader read it at {int(peak_kib) >> 10} MiB: {problem}"


#: Each .py file beside a stub that the suite does not have is a note ("... is not in the
#: suite: ignored"), without bound: the notes go into the learner's grading.json and
#: results.json, and into class.csv's and class.html's row. A 160 KiB repository listing
#: 1,000,000 such files under katas/01_peak/ (and a stub one line from the suite's): on
#: main at 6bf8a24 (MLIR, confined, as root) its grade took 218 s, the grader 850 MB, and
#: wrote a class.csv and a class.html of 64 MB, and a grading.json and a results.json of
#: 132 MB, for one learner of the class (the Dask worker that graded it: 438 MB, sampled
#: each second).
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_a_million_files_beside_a_stub_do_not_fill_the_class_table(tmp_path: Path) -> None:
    stub = PEAK.stub_path(ROOT).read_text() + "# my work is not done\n"
    repo = tree_bomb(tmp_path / "notes", folders=1000, under=f"katas/{PEAK.id}/junk", stub=stub)
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(repo))], out, [PEAK], backend="mlir")
    assert not outcome.grader_errors, outcome
    sizes = {path.name: path.stat().st_size for path in out.rglob("*") if path.is_file()}
    print(sizes)
    assert sizes["class.csv"] < 1 << 20, sizes
    assert sizes["grading.json"] < 16 << 20, sizes


#: The learner's worker shares the harness's PID namespace and user: at import, it sends
#: SIGSTOP to the graded pytest (found by its command line), which then never answers:
#: nothing but the kata's timeout ends the run. The threat model lets the worker kill the
#: harness (its kata "crashed", at once); a stopped one holds the node, and every learner
#: graded after this one there, for the kata's timeout, in every kata (20 minutes each by
#: default, 4 hours for katas 01-12). On main at 6bf8a24 (MLIR, confined, as root, the
#: kata's timeout set to 90 s) kata 01 was "timed out".
STOP_THE_HARNESS = """

import os as _os
import signal as _signal


def _stop_the_harness():
    for pid in _os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == _os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read()
            if b"pytest" in line and b"--grade-record" in line:
                _os.kill(int(pid), _signal.SIGSTOP)
        except OSError:
            continue


_stop_the_harness()


def matmul_fmas(I, J, K):  # noqa: E741  (not the stub's: the worker must import this module)
    return 0
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_learner_cannot_stop_the_harness_until_the_katas_timeout(tmp_path: Path) -> None:
    sub = tmp_path / "subs" / "stop01"
    path = sub / "katas" / PEAK.id / f"{PEAK.module}.py"
    path.parent.mkdir(parents=True)
    path.write_text(PEAK.stub_path(ROOT).read_text() + STOP_THE_HARNESS)
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [PEAK], backend="mlir", timeout=90)
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "stop01" / "grading.json").read_text())
    print(doc["katas"])
    assert doc["katas"][0]["verdict"] != "timed out", doc["katas"]
