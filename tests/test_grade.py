"""`xtc-katas grade` (xtc_katas/grade/): a class of planted submissions graded through a
real Dask LocalCluster, as an instructor runs it, each with the verdict and cause a
teacher would give; a re-run that grades nothing again; a worker killed mid-job and a
hung kata; an unfair cluster refused; speed figures in the results (perf); class.html in
chromium.

The planted submissions are kata 01 and 02 (kata 04 on MLIR for the speed figures), made
from the reference solutions and the stubs (tools/planted.py).
"""

from __future__ import annotations

import csv
import html
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import dask
import distributed  # noqa: F401 - its config's defaults, before dask.config.set
import pytest

from tools import page_view, planted
from xtc_katas import ROOT
from xtc_katas.grade import class_report, cluster, grading_job, sandbox, submissions
from xtc_katas.grade.grade_command import Unconfinable, grade_class, needs_grading, parse_katas
from xtc_katas.kata.manifest import Kata, find
from xtc_katas.measure import module_cache

PEAK, GRAPH, SCHEDULING = find(1), find(2), find(4)


def solved(kata: Kata, tasks: set[str] | None = None) -> str:
    return planted.partly_solved(kata, tasks)


def stub(kata: Kata) -> str:
    return kata.stub_path(ROOT).read_text()


WRONG_FMAS = """
def matmul_fmas(I: int, J: int, K: int) -> int:  # noqa: E741
    return I * J  # forgot K
"""
SEGFAULT_PEAK = """
def measure_peak(dtype: str = "float32") -> float:
    import ctypes

    return float(len(ctypes.string_at(0)))  # reads address 0: SIGSEGV
"""
NO_GRAPH = """
def matmul_graph(I: int, J: int, K: int, dtype: str = "float32"):  # noqa: E741
    return None
"""
HANGING_GRAPH = """
def matmul_graph(I: int, J: int, K: int, dtype: str = "float32"):  # noqa: E741
    while True:
        pass
"""
#: A test file "fixed" by the learner so that anything passes.
EDITED_TEST = "def test_matmul_graph_structure(learner_module):\n    assert True\n"


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=learner", "-c", "user.email=learner@example.org"]
    subprocess.run(["git", "-C", str(repo), *identity, *args], check=True, capture_output=True)


def plant_class(root: Path) -> Path:
    """Nine submissions and the roster naming eight of them (the ninth is given by path);
    returns the roster."""
    subs = root / "subs"
    half_peak = solved(PEAK, {"matmul_fmas", "percent_of_peak"})
    planted.write(subs / "right", {PEAK.id: solved(PEAK), GRAPH.id: solved(GRAPH)})
    wrong = planted.with_function(solved(PEAK, {"percent_of_peak"}), "matmul_fmas", WRONG_FMAS)
    planted.write(subs / "wrong", {PEAK.id: wrong, GRAPH.id: solved(GRAPH)})
    planted.write(subs / "half", {PEAK.id: half_peak, GRAPH.id: stub(GRAPH)})
    crashing = planted.with_function(solved(PEAK), "measure_peak", SEGFAULT_PEAK)
    planted.write(subs / "crashing", {PEAK.id: crashing, GRAPH.id: solved(GRAPH)})
    editing = planted.with_function(solved(GRAPH), "matmul_graph", NO_GRAPH)
    planted.write(subs / "editing", {PEAK.id: stub(PEAK), GRAPH.id: editing})
    (subs / "editing" / "katas" / GRAPH.id / "test_graph.py").write_text(EDITED_TEST)
    (root / "empty").mkdir()
    with zipfile.ZipFile(subs / "carol.zip", "w") as archive:  # a GitHub-style zip
        archive.writestr(f"katas-main/katas/{GRAPH.id}/graph.py", solved(GRAPH))
        archive.writestr("katas-main/README.md", "my katas")
    repo = planted.write(subs / "dave", {PEAK.id: half_peak, GRAPH.id: solved(GRAPH)})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "done")
    git(repo, "tag", "submitted")
    (repo / "katas" / GRAPH.id / "graph.py").write_text(editing)  # after the deadline
    git(repo, "commit", "-qam", "oops")
    repo = planted.write(subs / "fay", {PEAK.id: stub(PEAK), GRAPH.id: stub(GRAPH)})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "cloned")
    git(repo, "tag", "submitted")
    (repo / "katas" / GRAPH.id / "graph.py").write_text(solved(GRAPH))  # never committed
    roster = root / "roster.csv"
    rows = [("right", "Ada"), ("wrong", "Bob"), ("half", "Cy"), ("crashing", "Dee")]
    rows += [("editing", "Eve"), ("carol.zip", "Carol"), ("dave", "Dave"), ("fay", "Fay")]
    lines = ["id,name,path"] + [f"{p.split('.')[0]},{n},subs/{p}" for p, n in rows]
    roster.write_text("\n".join(lines) + "\n")
    return roster


def grade_cli(cwd: Path, *args: str) -> tuple[int, str]:
    """`xtc-katas grade` as an instructor runs it, from `cwd`, in this test's environment
    (pytest-xdist's variables and the harness's switches included: the grader must keep
    them from the graded runs)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "xtc_katas", "grade", *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    return done.returncode, done.stdout + done.stderr


def grading(out: Path, sub_id: str) -> dict[str, Any]:
    return json.loads((out / sub_id / "grading.json").read_text())


def kata_of(doc: dict[str, Any], kata: Kata) -> dict[str, Any]:
    return next(k for k in doc["katas"] if k["kata"] == kata.id)


def said(doc: dict[str, Any], kata: Kata) -> str:
    """Everything the grade says about a kata: its cause and its tests' messages."""
    found = kata_of(doc, kata)
    return found["cause"] + "".join(t["message"] for t in doc["tests"] if t["kata"] == kata.id)


@pytest.mark.slow
def test_a_class_gets_a_teachers_verdicts_and_a_rerun_grades_nothing_again(
    tmp_path: Path,
) -> None:
    plant_class(tmp_path)
    args = ["--roster", "roster.csv", "empty", "--out", "grades", "--katas", "1-2"]
    code, printed = grade_cli(tmp_path, *args, "--ref", "submitted")
    assert code == 0, printed
    out = tmp_path / "grades"
    ids = ["right", "wrong", "half", "crashing", "editing", "carol", "dave", "fay", "empty"]
    docs = {i: grading(out, i) for i in ids}
    assert {d["grading_status"] for d in docs.values()} == {"graded"}

    assert docs["right"]["name"] == "Ada"
    assert docs["right"]["status"] == "pass", docs["right"]["message"]
    wrong = docs["wrong"]
    assert wrong["status"] == "fail"
    tasks = kata_of(wrong, PEAK)["tasks"]
    assert tasks["matmul_fmas"] == "failed" and tasks["percent_of_peak"] == "passed"
    assert "65536" in said(wrong, PEAK)  # the tutorial problem's count, missed
    assert kata_of(wrong, GRAPH)["verdict"] == "passed"
    half = docs["half"]
    assert kata_of(half, PEAK)["tasks_passed"] == 2
    assert kata_of(half, GRAPH)["verdict"] == "not attempted"
    assert "untouched stub" in kata_of(half, GRAPH)["cause"]
    crashing = docs["crashing"]
    assert crashing["status"] in ("error", "fail")
    assert kata_of(crashing, PEAK)["tasks"]["measure_peak"] == "failed"
    assert "SIGSEGV" in said(crashing, PEAK)
    assert kata_of(crashing, GRAPH)["verdict"] == "passed"  # the crash stayed in its kata
    editing = docs["editing"]
    assert kata_of(editing, GRAPH)["tasks"]["matmul_graph"] == "failed"  # the suite's tests
    assert any("katas/02_graph/test_graph.py differs" in n for n in editing["notes"])
    assert "graded with the suite's" in editing["message"]
    assert docs["empty"]["status"] == "error"
    assert "no katas/ folder" in docs["empty"]["message"]
    carol = docs["carol"]
    assert kata_of(carol, PEAK)["verdict"] == "missing"
    assert "katas/01_peak/peak.py is missing" in kata_of(carol, PEAK)["cause"]
    assert kata_of(carol, GRAPH)["verdict"] == "passed"
    dave = docs["dave"]  # graded at the tag, not at the later broken commit
    assert kata_of(dave, GRAPH)["verdict"] == "passed"
    assert kata_of(dave, PEAK)["tasks_passed"] == 2
    assert "katas/02_graph/graph.py differ from it (changes after it" in dave["message"]
    fay = docs["fay"]  # the work never committed: not graded, and said
    assert kata_of(fay, GRAPH)["verdict"] == "not attempted"
    uncommitted = "the folder's katas/02_graph/graph.py differ from it"  # at --ref submitted
    assert uncommitted in fay["message"] and fay["message"].startswith("01_peak")

    results = json.loads((out / "wrong" / "results.json").read_text())
    assert results["version"] == 3 and results["status"] == "fail"
    for test in results["tests"]:
        assert set(test) >= {"name", "status", "message", "output", "task_id"}
        assert test["status"] in ("pass", "fail", "error")
    assert {t["task_id"] for t in results["tests"]} == {
        "matmul_fmas", "percent_of_peak", "measure_peak", "matmul_graph", "matmul_relu_graph"
    }  # fmt: skip
    assert results["node"]["cpu"] == grading_job.cpu_model()
    assert results["suite_commit"] == grading_job.suite_id()
    assert len(results["submission_hash"]) == 64

    with (out / "class.csv").open() as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    assert sorted(rows) == sorted(ids)
    assert rows["right"]["01_peak"] == "3" and rows["right"]["total"] == "5"
    assert rows["carol"]["grading_status"] == "graded" and rows["carol"]["total"] == "2"
    assert uncommitted in rows["fay"]["message"]
    page = (out / "class.html").read_text()
    assert html.escape(uncommitted) in page
    assert "<table id='class'>" in page and page.count("data:image/png;base64,") >= 2
    assert class_report.FAIRNESS in page

    code, printed = grade_cli(tmp_path, *args, "--ref", "submitted")
    assert code == 0 and "0 graded, 9 unchanged" in printed, printed
    assert grading(out, "wrong")["graded_at"] == wrong["graded_at"]

    code, printed = grade_cli(tmp_path, *args, "--ref", "submitted", "--only", "carol",
                              "--format", "gradescope")  # fmt: skip
    assert code == 0 and "1 graded, 8 unchanged" in printed, printed
    assert grading(out, "carol")["graded_at"] > carol["graded_at"]
    scope = json.loads((out / "carol" / "results.json").read_text())
    assert scope["score"] == 2.0 and scope["max_score"] == 5.0
    assert len(scope["tests"]) == 5 and scope["leaderboard"] == []
    assert "score" in json.loads((out / "wrong" / "results.json").read_text())  # all rewritten


DIES = '''
import os
import signal
import time
from pathlib import Path


def _dask_worker() -> int:
    """The Dask worker grading this: the first ancestor multiprocessing spawned."""
    pid = os.getppid()
    while pid > 1:
        if b"spawn_main" in Path(f"/proc/{{pid}}/cmdline").read_bytes():
            return pid
        pid = int(Path(f"/proc/{{pid}}/stat").read_text().rsplit(")", 1)[1].split()[1])
    raise RuntimeError("not graded by a Dask worker")


_tries = Path({marker!r})
_tries.write_text(_tries.read_text() + "x" if _tries.exists() else "x")
if {always} or _tries.read_text() == "x":
    os.kill(_dask_worker(), signal.SIGKILL)
    time.sleep(30)
'''


def running(marker: str) -> list[int]:
    """The processes whose command line holds `marker`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker.encode() in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def dies(marker: Path, always: bool) -> str:
    """Kata 02 solved, whose import kills the Dask worker grading it: on the first try
    only, or every time."""
    return DIES.format(marker=str(marker), always=always) + solved(GRAPH)


@pytest.mark.slow
def test_a_killed_worker_is_rescheduled_a_hung_kata_times_out_and_killed_worker_is_the_graders(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One worker, allowed one failure per job: a job whose worker dies once is graded on
    the restarted worker; one that kills every worker is KilledWorker, the grader's error
    (graded again on the next run), not the learner's verdict.

    The kata's limit is 30 s: kata 02 on its solution took 8.7 s of wall time at a load of
    1.5 (Zen 3, 2 vCPU), so the 8 s it had failed `once` ("error") on a loaded machine."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the worker's copies, also a killed one's
    once, always = tmp_path / "once.tries", tmp_path / "always.tries"
    planted.write(tmp_path / "once", {GRAPH.id: dies(once, always=False)})
    planted.write(tmp_path / "always", {GRAPH.id: dies(always, always=True)})
    hung = planted.with_function(solved(GRAPH), "matmul_graph", HANGING_GRAPH)
    planted.write(tmp_path / "hangs", {GRAPH.id: hung})
    entries = [submissions.Entry(str(tmp_path / n)) for n in ("once", "always", "hangs")]
    out = tmp_path / "grades"
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        local = cluster.local_cluster(tmp_path / "dask")
    try:
        outcome = grade_class(  # unconfined: a confined grading sees no Dask worker to kill
            entries, out, [GRAPH], scheduler=local.scheduler_address, timeout=30, confined=False
        )
    finally:
        local.close()
    assert outcome.graded == ["once", "hangs"] or outcome.graded == ["hangs", "once"]
    assert outcome.grader_errors == ["always"]
    assert once.read_text() == "xx" and always.read_text() == "xx"
    assert grading(out, "once")["status"] == "pass"
    assert grading_job.UNCONFINED in grading(out, "once")["message"]
    assert json.loads((out / "once" / "results.json").read_text())["confined"] is False
    error = grading(out, "always")
    assert error["grading_status"] == "grader error" and "KilledWorker" in error["message"]
    assert kata_of(error, GRAPH)["verdict"] == "not graded"
    hangs = grading(out, "hangs")
    assert hangs["status"] == "error" and kata_of(hangs, GRAPH)["verdict"] == "timed out"
    assert "did not finish within 30 s, in test_matmul_graph" in kata_of(hangs, GRAPH)["cause"]
    with (out / "class.csv").open() as handle:
        states = {row["id"]: row["grading_status"] for row in csv.DictReader(handle)}
    assert states == {"once": "graded", "always": "grader error", "hangs": "graded"}
    assert not running(f"--grade-record={tmp_path}/")  # nothing of a killed job runs on
    assert needs_grading(error, error.get("key", ""), rerun_failed=False)


def test_a_cluster_where_two_gradings_could_share_cores_is_refused(tmp_path: Path) -> None:
    local = cluster.local_cluster(tmp_path / "dask", n_workers=2, threads_per_worker=2)
    planted.write(tmp_path / "right", {GRAPH.id: solved(GRAPH)})
    try:
        with pytest.raises(cluster.UnfairCluster) as refused:
            grade_class(
                [submissions.Entry(str(tmp_path / "right"))],
                tmp_path / "grades",
                [GRAPH],
                scheduler=local.scheduler_address,
            )
    finally:
        local.close()
    message = str(refused.value)
    assert "runs 2 workers" in message and "runs 2 threads" in message
    assert f"dask worker {local.scheduler_address} --nworkers 1 --nthreads 1" in message
    assert "--resources node=1" in message
    assert not (tmp_path / "grades" / "right").exists()  # refused before grading


@pytest.mark.slow
@pytest.mark.perf  # the graded run races kata 04's kernels
def test_speed_figures_come_back_with_the_node_that_raced_them(tmp_path: Path) -> None:
    planted.write(tmp_path / "right", {SCHEDULING.id: solved(SCHEDULING)})
    half = solved(SCHEDULING, {"schedule_interchange", "schedule_vectorize"})
    planted.write(tmp_path / "half", {SCHEDULING.id: half})
    entries = [submissions.Entry(str(tmp_path / n)) for n in ("right", "half")]
    out = tmp_path / "grades"
    outcome = grade_class(entries, out, [SCHEDULING], backend="mlir")
    assert outcome.graded == ["right", "half"] and not outcome.grader_errors
    right = json.loads((out / "right" / "results.json").read_text())
    assert right["status"] == "pass", right["message"]
    raced = [t for t in right["tests"] if t["speed"]]
    assert {t["task_id"] for t in raced} == {t.function for t in SCHEDULING.tasks}
    for test in raced:
        figures = test["speed"]
        assert figures["speedup"] > 1 and figures["reference"] > 1 and figures["bar"] > 0
        assert 0 < figures["percent_of_peak"] and test["backend"] == "mlir"
    assert right["node"]["cpu"] == grading_job.cpu_model() and right["node"]["worker"]
    half_tasks = kata_of(grading(out, "half"), SCHEDULING)["tasks"]
    assert half_tasks["schedule_interchange"] == "passed"
    assert half_tasks["schedule_split"] == "failed"
    assert "speedups over the reference per speed test" in (out / "class.html").read_text()


@pytest.mark.slow
def test_class_html_shows_the_table_and_the_plots_in_chromium(
    tmp_path: Path, chromium: str
) -> None:
    """Two submissions graded in this process (no cluster), one speed figure added as a
    speed test records it: the page, drawn by chromium, has the table and three plots."""
    config = grading_job.GradeConfig(katas=(GRAPH.id,), scratch=str(tmp_path))
    wrong = planted.with_function(solved(GRAPH), "matmul_graph", NO_GRAPH)
    docs = []
    for name, source in (("right", solved(GRAPH)), ("wrong", wrong)):
        planted.write(tmp_path / name, {GRAPH.id: source})
        docs.append(grading_job.grade(submissions.read(str(tmp_path / name), [GRAPH]), config))
    figures = {"speedup": 20.0, "reference_speedup": 21.0, "bar": 14.0, "percent_of_peak": 40}
    docs[0]["tests"][0]["figures"] = [figures]
    page = tmp_path / "class.html"
    class_report.write_html(page, docs, [GRAPH], grading_job.suite_id())
    shown = page_view.look(page, tmp_path / "class.png")
    assert shown["rows"] == ["right", "wrong"]
    drawn = {image["alt"]: image["width"] for image in shown["images"]}
    assert set(drawn) == {
        "pass rate per task",
        "speedups over the reference per speed test",
        "submissions graded per node",
    }
    assert all(width > 300 for width in drawn.values()), drawn
    assert "% of peak is per node" in shown["rule"]
    assert (tmp_path / "class.png").stat().st_size > 10_000


@pytest.mark.slow  # each warming copies the repository
def test_the_trusted_step_runs_once_per_node_and_fingerprint_not_once_per_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trusted step (the graded katas on the solutions, their races included) costs a
    solved grading's time: a node makes it once per backend and module_cache.fingerprint(),
    in its own cache folder, not again for each class graded on this machine, whose
    scratch is new each time. An unconfined class's, which its learners' code could write,
    is never a confined one's. Another fingerprint's, left for a week, is removed."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "home"))
    warmed: list[tuple[str, ...]] = []

    def warm(kata: Kata, backends: list[str], *_: Any) -> str:
        warmed.append((kata.id, *backends))
        return "exit 0"

    monkeypatch.setattr(grading_job, "_warm", warm)

    def trusted(scratch: str, backend: str = "", confined: bool = True) -> Path:
        where = str(tmp_path / scratch) if scratch else ""  # "": a cluster's node
        config = grading_job.GradeConfig(
            katas=(GRAPH.id,), backend=backend, scratch=where, confined=confined
        )
        return grading_job.trusted_cache([GRAPH], config)[0]

    first = trusted("class1", "mlir")
    assert trusted("class2") == first and trusted("class3", "tvm") == first
    assert warmed == [(GRAPH.id, "mlir"), (GRAPH.id, "tvm")]  # the second class: TVM's only
    assert first.is_relative_to(tmp_path / "home")
    assert trusted("class4", confined=False).is_relative_to(tmp_path / "class4")
    unconfined = trusted("", confined=False)  # a cluster node's: its user cache folder
    assert not first.is_relative_to(unconfined) and not unconfined.is_relative_to(first.parent)
    assert warmed[2:] == [(GRAPH.id, "mlir", "tvm")] * 2
    stale = first.parent / ("0" * 16)
    stale.mkdir()
    os.utime(stale, (0, 0))
    monkeypatch.setattr(module_cache, "fingerprint", lambda: "f" * 64)  # a solution edited
    assert trusted("class5") != first and len(warmed) == 5
    assert first.exists() and not stale.exists()


def test_graded_runs_see_a_learners_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not pytest-xdist's worker id (a race would refuse to run, or run beside another),
    not the harness's switches (--solutions' would grade the reference), not the thread
    limit a Dask nanny sets (kernels would run on one core)."""
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/test_grade.py::x (call)")
    monkeypatch.setenv("XTC_KATAS_SOLUTIONS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("TVM_BIND_THREADS", "0")
    env = grading_job.graded_env()
    assert not {k for k in env if k.startswith(("PYTEST_", "XTC_KATAS_"))}
    assert "OMP_NUM_THREADS" not in env and "PYTHONPATH" not in env
    assert env["TVM_BIND_THREADS"] == "0"


def test_work_not_committed_is_not_graded_and_the_grade_says_so(tmp_path: Path) -> None:
    repo = planted.write(tmp_path / "fay", {GRAPH.id: stub(GRAPH)})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "cloned")
    assert submissions.read(str(repo), [GRAPH]).notes == ()
    (repo / "katas" / GRAPH.id / "graph.py").write_text(solved(GRAPH))
    sub = submissions.read(str(repo), [GRAPH])
    assert sub.files[f"katas/{GRAPH.id}/graph.py"] == stub(GRAPH).encode()  # the commit's
    commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout[:12]  # fmt: skip
    assert sub.notes == (
        f"graded commit {commit}; uncommitted changes to katas/02_graph/graph.py were not graded",
    )


def test_a_mistyped_path_is_refused_before_grading(tmp_path: Path) -> None:
    planted.write(tmp_path / "right", {GRAPH.id: solved(GRAPH)})
    code, printed = grade_cli(tmp_path, "right", "rihgt", "--out", "grades", "--katas", "2")
    assert code == 2 and f"no such file or folder: {tmp_path / 'rihgt'}" in printed, printed
    assert not (tmp_path / "grades").exists()


def test_grading_where_it_cannot_be_confined_is_refused_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "unavailable", lambda: "bubblewrap (bwrap) is not installed")
    planted.write(tmp_path / "right", {GRAPH.id: stub(GRAPH)})
    entries = [submissions.Entry(str(tmp_path / "right"))]
    with pytest.raises(Unconfinable, match=r"bwrap.* is not installed.*--unconfined"):
        grade_class(entries, tmp_path / "grades", [GRAPH])
    assert not (tmp_path / "grades").exists()


def test_what_is_graded_again() -> None:
    stored = {"key": "k", "grading_status": "graded", "status": "fail"}
    assert not needs_grading(stored, "k", rerun_failed=False)
    assert needs_grading(stored, "k", rerun_failed=True)
    assert needs_grading(stored, "other", rerun_failed=False)
    assert needs_grading({**stored, "grading_status": "grader error"}, "k", False)
    assert not needs_grading({**stored, "status": "pass"}, "k", rerun_failed=True)
    assert needs_grading(None, "k", rerun_failed=False)
    assert [k.number for k in parse_katas("1-2,4")] == [1, 2, 4]


def test_grade_has_its_help() -> None:
    command = [sys.executable, "-m", "xtc_katas", "grade", "--help"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    for option in ("--scheduler", "--roster", "--rerun-failed", "--only", "--format"):
        assert option in done.stdout
