"""The fifth outside red team's attacks (issue 55, item 6, round 5, on main at 63309f0)
whose doors are closed, each asserting the safe outcome; each failed on 63309f0
(confined, as root, on a 2-vCPU AMD EPYC family 25 model 1 shared with a CI run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tools import planted
from xtc_katas import ROOT
from xtc_katas.kata.manifest import find

PEAK = find(1)
OPTIMIZER = find(12)
COMPILING = find(3)


def _git(repo: Path, *args: str, text: str = "") -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], input=text, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def deep_paths(repo: Path, files: int = 4000, depth: int = 1000, width: int = 200) -> Path:
    """A repository whose one commit lists `files` paths, each under the same `depth`
    folders of `width`-character names (paths of ~200 KB), and kata 01's stub, one line
    changed: ~5 MB of loose objects, which list 800 MB of paths."""
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", ".")
    blob = _git(repo, "hash-object", "-w", "--stdin", text="x\n")
    tree = _git(repo, "mktree", text="".join(f"100644 blob {blob}\tf{n}\n" for n in range(files)))
    for level in range(depth):
        name = f"d{level:04d}".ljust(width, "x")
        tree = _git(repo, "mktree", text=f"040000 tree {tree}\t{name}\n")
    stub = PEAK.stub_path(ROOT).read_text() + "# my work is not done\n"
    own = _git(repo, "hash-object", "-w", "--stdin", text=stub)
    kata = _git(repo, "mktree", text=f"100644 blob {own}\t{PEAK.module}.py\n")
    katas = _git(repo, "mktree", text=f"040000 tree {kata}\t{PEAK.id}\n")
    top = _git(repo, "mktree", text=f"040000 tree {tree}\tdeep\n040000 tree {katas}\tkatas\n")
    commit = _git(repo, "-c", "user.name=a", "-c", "user.email=a@b", "commit-tree", top,
                  "-m", "deep")  # fmt: skip
    _git(repo, "update-ref", "refs/heads/main", commit)
    _git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    return repo


#: Round 4's tree bomb is refused past submissions.MAX_NAMES (100,000) paths, counted as
#: `git ls-tree` lists them; a path's length is not counted. Git's trees may nest a folder
#: in a folder a thousand times, each named with 200 characters, so that each of a few
#: thousand files has a path of 200 KB: 4,000 of them (far under MAX_NAMES) list 800 MB.
#: On main at 63309f0, `xtc-katas grade` of this repository (kata 01, MLIR) took the
#: grader's process to 1.62 GB (max RSS, /usr/bin/time) on a 2-vCPU AMD EPYC family 25
#: model 1 shared with a CI run, and graded it ("failed"); 100,000 such paths would list
#: 20 GB. Reading it as `grade` does (submissions.read) is measured here. Refused now:
#: git's listing is read as it comes, and stopped past submissions.MAX_LISTING_BYTES.
READ_AND_MEASURE = """
import resource, sys
from xtc_katas.grade import submissions
from xtc_katas.kata.manifest import find
sub = submissions.read(sys.argv[1], [find(1)])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, sub.problem[:200])
"""


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_repository_of_long_paths_does_not_take_the_grader_past_1_gb(tmp_path: Path) -> None:
    repo = deep_paths(tmp_path / "deep")
    done = subprocess.run(
        [sys.executable, "-c", READ_AND_MEASURE, str(repo)],
        capture_output=True, text=True, timeout=800, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    peak_kib, problem = done.stdout.split(" ", 1)
    print(peak_kib, problem)
    assert int(peak_kib) < 1 << 20, f"the grader read it at {int(peak_kib) >> 10} MiB: {problem}"


#: The harness answers each question a learner's worker asks (Worker.step: a compile of
#: katas 03, 06 and 07, an evaluation) with a blocking send, under no time limit: the call
#: limit bounds only the wait for the worker's next message. This compile_baseline sends
#: forty "compile" questions that print every stage (kata 03's flags) through the
#: worker's own pipe, without waiting, and reads no answer: the harness compiles and
#: answers them one by one until the pipe is full, then waits in send() for a reader that
#: never comes, a process asleep, not stopped, which the grader's check (_stopped) does not
#: end. On main at 63309f0 (MLIR, confined, as root, the kata's timeout set to 300 s) kata
#: 03 was "timed out" in its first test, test_compile_baseline_computes_the_matmul[mlir]
#: (the same questions asked and each answer read: 248 s, graded "failed"); with the
#: default timeout, 20 minutes of the node per kata that serves questions (03, 06, 07).
#: Each answer is now sent under the call's limit, and the child that reads none ended
#: (isolation.Worker._answer).
UNREAD_ANSWERS = '''
def compile_baseline(graph: XTCGraph, Backend: Any, dump_file: str) -> Any:
    """Asks the harness for forty compiles that print every stage, and reads no answer."""
    import time

    from xtc_katas.checks.compiles import PRINTS, Compile
    from xtc_katas.measure import isolation, wire

    made = Compile(calls=[], default_node=None, dump_file=None, shared_lib=True,
                   prints=tuple(PRINTS))  # fmt: skip
    for _ in range(40):
        isolation._send(isolation._PARENT[0], wire.Ask(wire.to_wire(("compile", made))))
    time.sleep(3600)


'''


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_questions_whose_answers_are_never_read_do_not_hold_the_kata_to_its_timeout(
    tmp_path: Path,
) -> None:
    stub = COMPILING.stub_path(ROOT).read_text()
    start, end = stub.index("def compile_baseline("), stub.index("def percent_of_peak_of(")
    source = stub[:start] + UNREAD_ANSWERS + stub[end:]
    doc = planted.graded_alone(tmp_path, COMPILING, "unread03", source, timeout=300)
    print(doc["katas"])
    assert doc["katas"][0]["verdict"] != "timed out", doc["katas"]
