"""The notebook's file sync, the shared run lock and the reading of a run's reports,
without marimo and without running any kata: a stub in a temporary folder."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from xtc_katas.kata import progress
from xtc_katas.kata.manifest import find
from xtc_katas.kata.run_lock import RunBusy, RunLock, holder, run_lock
from xtc_katas.notebook import runner, stub_sync

KATA = find(4)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A repository root holding kata 04's stub only (what stub_sync touches)."""
    stub = KATA.stub_path(tmp_path)
    stub.parent.mkdir(parents=True)
    stub.write_text(KATA.stub_path().read_text())
    return tmp_path


ANSWER = """
def schedule_interchange(sch):
    sch.interchange(["i", "k", "j"])
"""


def test_a_save_writes_the_file_and_keeps_the_previous_version(root: Path) -> None:
    loaded = stub_sync.load(KATA, root)
    before = loaded.text
    saved, backup = stub_sync.save(KATA, loaded, before + ANSWER, root)
    assert KATA.stub_path(root).read_text() == before + ANSWER == saved.text
    assert backup is not None and backup.read_text() == before
    assert backup.parent == root / ".xtc-katas" / "backups"
    assert not stub_sync.changed_on_disk(saved)
    # a second save in the same second keeps its own backup
    _, second = stub_sync.save(KATA, saved, before, root)
    assert second is not None and second != backup and second.read_text() == before + ANSWER
    assert not list(KATA.stub_path(root).parent.glob("*.tmp"))


def test_a_syntax_error_is_refused_and_the_file_left_alone(root: Path) -> None:
    loaded = stub_sync.load(KATA, root)
    with pytest.raises(stub_sync.SaveRefused) as refused:
        stub_sync.save(KATA, loaded, loaded.text + "\ndef broken(:\n", root)
    message = str(refused.value)
    assert message.startswith("04_scheduling: not saved: scheduling.py has a syntax error")
    assert "line" in message and "SyntaxError:" in message
    assert KATA.stub_path(root).read_text() == loaded.text
    assert not (root / ".xtc-katas" / "backups").exists()


def test_a_file_changed_on_disk_is_never_overwritten(root: Path) -> None:
    loaded = stub_sync.load(KATA, root)
    elsewhere = loaded.text + "\n# saved in another editor\n"
    KATA.stub_path(root).write_text(elsewhere)
    assert stub_sync.changed_on_disk(loaded)
    with pytest.raises(stub_sync.SaveRefused, match="changed on disk since the notebook"):
        stub_sync.save(KATA, loaded, loaded.text + ANSWER, root)
    assert KATA.stub_path(root).read_text() == elsewhere
    reloaded = stub_sync.load(KATA, root)  # the banner's reload button
    assert reloaded.text == elsewhere and not stub_sync.changed_on_disk(reloaded)


def test_one_run_at_a_time_and_the_second_is_told_who_runs(root: Path) -> None:
    with run_lock("xtc-katas on 04_scheduling", root):
        assert "xtc-katas on 04_scheduling" in holder(root)
        with pytest.raises(RunBusy, match="another run of the katas' tests is in progress"):
            with run_lock("the notebook on 04_scheduling", root):
                pass
    with run_lock("the notebook on 04_scheduling", root):  # free again
        pass
    assert holder(root) == ""


def test_a_lock_taken_in_one_thread_is_released_in_another_and_waiters_get_it(
    root: Path,
) -> None:
    first = RunLock("the notebook", root)
    first.acquire()
    releaser = threading.Thread(target=lambda: (time.sleep(0.3), first.release()))
    releaser.start()
    with run_lock("xtc-katas watch", root, wait=10):
        pass
    releaser.join()


def test_a_runs_verdicts_come_from_junit_and_the_progress_record(root: Path) -> None:
    """Failure texts from pytest's JUnit report, tasks/backend/figures from the record."""
    nodeid = "katas/04_scheduling/test_scheduling.py::test_schedule_interchange_keeps_up[mlir]"
    junit = root / "junit.xml"
    junit.write_text(
        '<?xml version="1.0"?><testsuites><testsuite>'
        '<testcase classname="katas.04_scheduling.test_scheduling"'
        ' name="test_schedule_interchange_keeps_up[mlir]"/>'
        '<testcase classname="katas.04_scheduling.test_scheduling"'
        ' name="test_schedule_vectorize_computes[tvm]">'
        '<failure message="short">04_scheduling › schedule_vectorize() is too slow\n'
        "the whole text</failure></testcase></testsuite></testsuites>"
    )
    figures = {"speedup": 1.1, "reference_speedup": 1.2, "bar": 0.8}
    record = progress.TestResult(
        KATA.id, ("schedule_interchange",), "mlir", "passed", "h", [figures], time.time()
    )
    cache = progress.cache_file(root)
    cache.parent.mkdir(parents=True)
    cache.write_text(json.dumps({nodeid: record.__dict__ | {"tasks": list(record.tasks)}}))
    tests, tasks = runner.verdicts(KATA, runner.read_junit(junit), time.time() - 60, root)
    states = {t.function: t.state for t in tasks}
    assert states["schedule_interchange"] == "passed"
    assert states["schedule_vectorize"] == "failed"
    assert states["schedule_parallel"] == "not run"
    vectorize = next(t for t in tasks if t.function == "schedule_vectorize")
    assert vectorize.failures[0].message.endswith("too slow\nthe whole text")
    assert [(t.tasks[0], t.backend) for t in tests if t.perf] == [("schedule_interchange", "mlir")]


def test_a_crashed_run_names_the_kata_the_signal_and_what_to_do() -> None:
    message = runner._crash_message(KATA, -11)
    assert message.startswith("04_scheduling: the test run crashed (pytest was killed by SIGSEGV)")
    assert "the notebook is fine" in message and "xtc-katas run 4" in message
    assert "exit code 3" in runner._crash_message(KATA, 3)
