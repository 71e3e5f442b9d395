"""The second outside red team's attacks that landed (issue 55, item 6, round 2, on main at
d796d9a), each a planted submission graded through the real LocalCluster in bubblewrap,
as `xtc-katas grade` runs it, and asserting the SAFE outcome: each failed while its door
was open (the round's file in tests_open/, run there on d796d9a), and passes since
checks/schedule.Call holds only loop names and the grader reads the record as data, and
since the harness compiles and runs kata 03's baseline itself from the compile recorded
in the learner's process (checks/compiles.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools import planted
from xtc_katas.grade import submissions
from xtc_katas.grade.grade_command import grade_class
from xtc_katas.kata.manifest import find

COMPILE = find(3)
SCHEDULING = find(4)
DESCRIPT = find(5)


#: A loop name is Python that the harness runs. XTC 0.3.2's TVM backend turns a schedule
#: into Python source, every loop name written in as is (TVMScheduler's
#: `{', '.join(t_names)}, = sch.split(...)` and `sch.reorder(...)`), and exec()s it
#: (TVMOpsCompiler._exec_schedule) in the process that compiles: the harness, which
#: replays the learner's recorded calls (a name is a string: data) and compiles them. A
#: tile named `globals()[exec(bytes.fromhex('...').decode())]` is an assignment target
#: there, and an expression in the reorder; it passes the harness's schedule checks (it
#: is a loop of the interchange). Its code runs as the harness, outside the learner's
#: worker's confinement: it can read solutions/, write the kata's record and the
#: grading's copy of the suite (whose xtc_katas the later katas' runs import).
PAYLOAD_LOOP = """
_PAYLOAD = r\'\'\'
{payload}
\'\'\'
_LOOP = f"globals()[exec(bytes.fromhex('{{_PAYLOAD.encode().hex()}}').decode())]"


def _naive(sch):
    sch.strip_mine("j", {{_LOOP: 16}})
    sch.interchange(["i", "k", "j", _LOOP])


schedule_interchange = schedule_vectorize = schedule_register_tile = _naive
schedule_split = schedule_parallel = _naive
"""

#: Rewrites the record as it is written, and what it holds already: every report
#: "passed". On main at d796d9a (TVM, confined) kata 04 with five naive schedules (j
#: tiled by 16, nothing vectorized, split, unrolled nor parallel) was graded "passed",
#: 5/5 tasks, its 15 tests "pass".
FORGE_RECORD = """
import gc, json
from xtc_katas.grade import pytest_record as R
if not getattr(R, "_forged", False):
    R._forged = True
    _write = R.Recorder.write
    def write(self, event, **fields):
        if event == "report":
            fields.update(outcome="passed", message="")
        _write(self, event, **fields)
    R.Recorder.write = write
    for each in gc.get_objects():
        if isinstance(each, R.Recorder):
            path = each.file.name
            events = [json.loads(line) for line in open(path).read().splitlines()]
            for event in events:
                if event.get("event") == "report":
                    event.update(outcome="passed", message="")
            open(path, "w").write("".join(json.dumps(e) + "\\n" for e in events))
"""

#: Raises the reference's schedules, which the test's failure message carries into the
#: grade (the path spelled so that the loader's check of the stub's text does not see
#: it). On main at d796d9a (TVM, confined) grading.json's messages held
#: solutions/04_scheduling's `sch.` lines.
READ_REFERENCE = """
import glob, os
from xtc_katas import ROOT
found = glob.glob(os.path.join(ROOT, "sol" + "utions", "04_*", "*.py"))
raise RuntimeError("".join(
    line for path in found for line in open(path) if "sch." in line and "#" not in line
))
"""


def _graded_tvm(tmp_path: Path, name: str, payload: str) -> dict:
    sub = tmp_path / "subs" / name
    planted.write(sub, {SCHEDULING.id: PAYLOAD_LOOP.format(payload=payload)})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [SCHEDULING], backend="tvm")
    assert not outcome.grader_errors, outcome
    return json.loads((out / name / "grading.json").read_text())


@pytest.mark.slow
@pytest.mark.perf  # kata 04's races
@pytest.mark.timeout(900)
def test_a_loop_name_cannot_run_code_in_the_harness_that_forges_the_record(
    tmp_path: Path,
) -> None:
    doc = _graded_tvm(tmp_path, "forge", FORGE_RECORD)
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["verdict"] != "passed", doc["katas"]
    assert doc["katas"][0]["tasks"]["schedule_vectorize"] == "failed", doc["katas"]
    assert tests["test_schedule_vectorize_has_a_vector_tile[tvm]"] == "fail", tests


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(900)
def test_a_loop_name_cannot_run_code_in_the_harness_that_reads_the_reference(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    doc = _graded_tvm(tmp_path, "peek", READ_REFERENCE)
    reference = (ROOT / "solutions" / SCHEDULING.id / f"{SCHEDULING.module}.py").read_text()
    secret = 'sch.split("j", {"j0": 0, "j1": 32})'
    assert secret in reference  # the line the grade must not carry
    grade = json.dumps(doc)
    assert secret.replace('"', '\\"') not in grade, "the reference's schedule is in the grade"


#: Adds a figure that is not a dict to every report the harness writes afterwards. The
#: grader reads it back as a list (the record's check: `perf` is a list), and writes
#: results.json from it in the client (result_formats.speed: `last.get(...)`):
#: AttributeError, out of `grade_class`. On main at d796d9a (TVM, confined), the command
#: died after the attacker's grading.json was written: the honest learner after it was
#: not graded, class.csv and class.html were not written; run again, the attacker was
#: graded again first, and the command died again, the honest learner still not graded.
BAD_FIGURE = """
from xtc_katas.grade import pytest_record as R
if not getattr(R, "_boom", False):
    R._boom = True
    _write = R.Recorder.write
    def write(self, event, **fields):
        if event == "report":
            fields["perf"] = ["not a figure"]
        _write(self, event, **fields)
    R.Recorder.write = write
"""


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(1200)
def test_a_figure_that_is_not_a_dict_does_not_stop_the_class(tmp_path: Path) -> None:
    from xtc_katas import ROOT

    subs = tmp_path / "subs"
    for name, source in (
        ("boom", PAYLOAD_LOOP.format(payload=BAD_FIGURE)),
        ("honest", SCHEDULING.solution_path(ROOT).read_text()),
    ):
        planted.write(subs / name, {SCHEDULING.id: source})
    out = tmp_path / "out"
    entries = [submissions.Entry(str(subs / name)) for name in ("boom", "honest")]
    grade_class(entries, out, [SCHEDULING], backend="tvm")  # raised AttributeError
    assert (out / "class.csv").exists()
    assert json.loads((out / "honest" / "results.json").read_text())["status"] in ("pass", "fail")


#: Writes one line of 200,000 "[" into the record. The grader reads each line with
#: json.loads and skips a ValueError, but the nesting raises RecursionError (a
#: RuntimeError): out of grading_job.grade, a "grader error". On main at d796d9a (TVM,
#: confined) the submission was "not graded: the grader failed, not the submission
#: (RecursionError ...)", the command exited 1, and the next run grades it again: the
#: same, at every run; the learner's five naive schedules never get their fail.
DEEP_RECORD = """
import gc
from xtc_katas.grade import pytest_record as R
if not getattr(R, "_deep", False):
    R._deep = True
    for each in gc.get_objects():
        if isinstance(each, R.Recorder):
            each.file.write("[" * 200000 + "\\n")
            each.file.flush()
"""


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(900)
def test_a_record_nested_deep_is_the_submissions_verdict_not_a_grader_error(
    tmp_path: Path,
) -> None:
    doc = _graded_tvm(tmp_path, "deep", DEEP_RECORD)
    print(doc["grading_status"], doc["message"])
    assert doc["grading_status"] == "graded", doc["message"]


#: The same record forgery, and the grading's copy of the suite changed for the katas
#: after it: the harness (which runs the payload) may write the copy, and each later
#: kata's pytest imports the copy's xtc_katas. The payload rewrites the copy's
#: pytest_record.py so that every report it writes says "passed". On main at d796d9a,
#: graded on both backends (the default), kata 04 (naive) and kata 05 (its stub, which
#: raises NotImplementedError, and a comment) were graded "passed", 5/5 and 4/4, their 54
#: tests "pass".
FORGE_LATER_KATAS = (
    FORGE_RECORD
    + """
    text = open(R.__file__).read()
    text = text.replace("outcome=report.outcome,", "outcome='passed',")
    text = text.replace(
        "message=report.longreprtext[:MESSAGE_LIMIT] if report.failed else", "message="
    )
    open(R.__file__, "w").write(text)
"""
)


@pytest.mark.slow
@pytest.mark.perf
@pytest.mark.timeout(1800)
def test_a_loop_name_cannot_change_the_suite_that_grades_the_later_katas(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    sub = tmp_path / "subs" / "later"
    planted.write(sub, {
        SCHEDULING.id: PAYLOAD_LOOP.format(payload=FORGE_LATER_KATAS),
        DESCRIPT.id: DESCRIPT.stub_path(ROOT).read_text() + "\n# nothing\n",
    })  # fmt: skip
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [SCHEDULING, DESCRIPT])
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "later" / "grading.json").read_text())
    print(doc["message"])
    assert doc["katas"][1]["verdict"] == "failed", doc["katas"]


#: A kernel's outputs computed in the learner's process. Kata 03's tests call
#: compile_baseline in the learner's worker (`baseline_outputs`) and run the module it
#: returns there too (numerics.outputs: a child of that worker), then compare the outputs
#: that come back with numpy in the harness. The harness never sees the module: only
#: its file name and those outputs. So a compile_baseline that compiles nothing, and
#: returns an object whose evaluator fills the output with numpy's product, is judged a
#: kernel that computes the matmul; it asks the Backend for a scheduler and transforms
#: nothing, so the baseline's loop-nest checks (replayed by the harness) pass too. On main
#: at d796d9a (MLIR, confined) compile_baseline was graded "passed", its four tests too.
#: Closed: the harness compiles the compile recorded in the learner's process (its
#: scheduler's calls, its compiler's options: checks/compiles.py) and runs that; a
#: baseline that compiled nothing through the Backend it was given has nothing to run.
NUMPY_BASELINE = '''
class _Numpy:
    """Compiles nothing: a 'module' whose evaluator computes the graph with numpy."""

    def __init__(self, graph, dump_file):
        self.graph = graph
        self.file_name = dump_file + ".so"

    def get_evaluator(self, parameters=None, **kwargs):
        return _Evaluator(self.graph, parameters)


class _Evaluator:
    def __init__(self, graph, parameters):
        self.graph, self.parameters = graph, parameters

    def evaluate(self):
        import numpy as np

        (a, b), (out,) = self.parameters
        c = a.astype(np.float64) @ b.astype(np.float64)
        if "relu" in self.graph.name:
            c = np.maximum(c, 0)
        out[...] = c
        return [1e-3], 0, ""


def compile_baseline(graph, Backend, dump_file):
    """Compiles nothing: asks for a scheduler (the harness records its calls), then numpy."""
    Backend(graph).get_scheduler()
    return _Numpy(graph, dump_file)


'''


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_baseline_that_compiles_nothing_is_not_judged_by_outputs_it_computed_itself(
    tmp_path: Path,
) -> None:
    from xtc_katas import ROOT

    solution = COMPILE.solution_path(ROOT).read_text()
    start, end = solution.index("def compile_baseline("), solution.index("def percent_of_peak_of(")
    source = solution[:start] + NUMPY_BASELINE + solution[end:]
    sub = tmp_path / "subs" / "numpy"
    planted.write(sub, {COMPILE.id: source})
    out = tmp_path / "out"
    outcome = grade_class([submissions.Entry(str(sub))], out, [COMPILE], backend="mlir")
    assert not outcome.grader_errors, outcome
    doc = json.loads((out / "numpy" / "grading.json").read_text())
    tests = {t["name"].split("::")[-1]: t["status"] for t in doc["tests"]}
    print(doc["katas"], tests)
    assert doc["katas"][0]["tasks"]["compile_baseline"] == "failed", doc["katas"]
    assert tests["test_compile_baseline_computes_the_matmul[mlir]"] == "fail", tests
