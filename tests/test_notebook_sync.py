"""The notebook's file sync, the shared run lock and the reading of a run's reports,
without marimo and without running any kata: a stub in a temporary folder."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from xtc_katas.kata import progress, stubs
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


def test_a_save_writes_the_file_and_keeps_the_previous_version(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stubs.time, "strftime", lambda *_: "20260101-120000")  # one second
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
    assert second.name == backup.stem + "-2.py"
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
    with pytest.raises(RunBusy):  # held: a run that does not wait is refused
        RunLock("xtc-katas run", root).acquire()
    releasing = threading.Event()

    def release_later() -> None:  # the notebook's reader thread, at its run's end
        time.sleep(0.3)
        releasing.set()
        first.release()

    releaser = threading.Thread(target=release_later)
    releaser.start()
    with run_lock("xtc-katas watch", root, wait=10):
        assert releasing.is_set(), "the waiter got the lock while the notebook held it"
        assert holder(root).startswith("xtc-katas watch, pid ")
    releaser.join()
    assert holder(root) == ""


def test_a_runs_verdicts_come_from_junit_and_the_progress_record(root: Path) -> None:
    """Failure texts from pytest's JUnit report, tasks/outcomes/figures from the record."""
    tests = "katas/04_scheduling/test_scheduling.py::"
    passed, failed = (
        "test_schedule_interchange_keeps_up[mlir]",
        "test_schedule_vectorize_computes[tvm]",
    )
    junit = root / "junit.xml"
    junit.write_text(
        '<?xml version="1.0"?><testsuites><testsuite>'
        f'<testcase classname="katas.04_scheduling.test_scheduling" name="{passed}"/>'
        f'<testcase classname="katas.04_scheduling.test_scheduling" name="{failed}">'
        '<failure message="short">04_scheduling › schedule_vectorize() is too slow\n'
        "the whole text</failure></testcase></testsuite></testsuites>"
    )
    figures = {"speedup": 1.1, "reference_speedup": 1.2, "bar": 0.8}
    now = time.time()
    records = {
        tests + passed: progress.TestResult(
            KATA.id, ("schedule_interchange",), "mlir", "passed", "h", [figures], now
        ),
        tests + failed: progress.TestResult(
            KATA.id, ("schedule_vectorize",), "tvm", "failed", "h", [], now, "first line"
        ),
        tests + "test_schedule_parallel_computes[tvm]": progress.TestResult(
            KATA.id, ("schedule_parallel",), "tvm", "failed", "h", [], now - 3600, "old"
        ),
    }
    cache = progress.cache_file(root)
    cache.parent.mkdir(parents=True)
    cache.write_text(
        json.dumps({k: r.__dict__ | {"tasks": list(r.tasks)} for k, r in records.items()})
    )
    tasks, found = runner.verdicts(KATA, runner.failure_texts(junit), now - 60, root)
    states = {t.function: t.state for t in tasks}
    assert states["schedule_interchange"] == "passed"
    assert states["schedule_vectorize"] == "failed"
    assert states["schedule_parallel"] == "not run"  # recorded by an earlier run
    vectorize = next(t for t in tasks if t.function == "schedule_vectorize")
    assert vectorize.failures == (
        (tests + failed, "04_scheduling › schedule_vectorize() is too slow\nthe whole text"),
    )
    assert found == [("schedule_interchange", "mlir", figures)]


def test_a_crashed_run_names_the_kata_the_signal_and_what_to_do() -> None:
    message = runner.problem(KATA, -11, reported=True)
    assert message.startswith("04_scheduling: the test run crashed (pytest was killed by SIGSEGV)")
    assert "the notebook is fine" in message and "xtc-katas run 4" in message
    assert "exit code 3" in runner.problem(KATA, 3, reported=False)
    assert runner.problem(KATA, 1, reported=True) == ""


def test_a_one_task_run_leaves_out_the_tests_of_longer_names_containing_it() -> None:
    def k(kata: int, task: str) -> str:
        args = runner.pytest_command(find(kata), Path("j.xml"), task=task)
        return args[args.index("-k") + 1]

    assert k(11, "schedule_conv") == "schedule_conv and not schedule_conv_parallel"
    assert k(11, "schedule_conv_parallel") == "schedule_conv_parallel"
    assert k(4, "schedule_interchange") == "schedule_interchange"


def test_a_run_pytest_ends_badly_shows_what_pytests_exit_code_means() -> None:
    message = runner.problem(KATA, 5, reported=True)
    assert message.startswith("04_scheduling: pytest ended with exit code 5 (no tests collected)")
    assert "(usage error)" in runner.problem(KATA, 4, reported=True)


# A stand-in for pytest that ignores SIGTERM, prints a line, then sleeps.
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('started', flush=True); time.sleep(120)"
)


def _started(run: runner.KataRun) -> None:
    deadline = time.monotonic() + 30
    while "started" not in run.lines:
        assert time.monotonic() < deadline and run.running, run.lines
        time.sleep(0.05)


def test_cancel_kills_a_pytest_that_ignores_sigterm_and_frees_the_lock(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(runner, "TERM_GRACE", 0.5)
    monkeypatch.setattr(runner, "pytest_command", lambda *_: [sys.executable, "-c", STUBBORN])
    run = runner.KataRun(KATA, root=root).start()
    _started(run)
    with pytest.raises(RunBusy):  # the run holds the repository's lock
        RunLock("another", root).acquire()
    started = time.monotonic()
    run.cancel()
    result = run.wait(30)
    assert result is not None and result.cancelled and result.returncode == -9
    assert time.monotonic() - started < 10
    with run_lock("the next run", root):  # free again
        pass


def test_a_cancel_after_pytest_ended_is_no_cancel(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setattr(runner, "pytest_command", lambda *_: [sys.executable, "-c", "pass"])
    stale = root / ".xtc-katas" / runner.JUNIT  # an earlier run's report
    stale.parent.mkdir()
    stale.write_text("<testsuites/>")
    run = runner.KataRun(KATA, root=root).start()
    assert run._process is not None
    run._process.wait()
    run.cancel()  # between pytest's end and the reader's: nothing to stop
    result = run.wait(30)
    assert result is not None and not result.cancelled
    assert "exit code 0 before writing its report" in result.problem  # not the stale one


def test_a_failed_start_leaves_no_lock(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "pytest_command", lambda *_: ["/nonexistent/python"])
    with pytest.raises(OSError):
        runner.KataRun(KATA, root=root).start()
    with run_lock("the next run", root):
        pass


PARENT = """
import os, sys, time
from pathlib import Path
from xtc_katas.kata.manifest import find
from xtc_katas.notebook import runner
runner.TERM_GRACE = 0.5
runner.pytest_command = lambda *_: [sys.executable, "-c", {child!r}]
run = runner.KataRun(find(4), root=Path({root!r})).start()
while "started" not in run.lines:
    time.sleep(0.05)
print(run._process.pid, flush=True)
if sys.argv[1] == "crash":
    os._exit(0)  # no atexit: pytest keeps the lock
"""


@pytest.mark.parametrize("how", ["exit", "crash"])
def test_a_run_never_outlives_the_notebook_without_its_lock(root: Path, how: str) -> None:
    """The server (or kernel) exits during a run: its pytest is stopped with it (atexit);
    if it dies without atexit, its pytest keeps the lock, so no other run races it."""
    import os
    import signal
    import subprocess
    import sys

    script = PARENT.format(child=STUBBORN, root=str(root))
    out = subprocess.run(
        [sys.executable, "-c", script, how], capture_output=True, text=True, timeout=60
    )
    pid = out.stdout.strip()
    try:
        if how == "exit":
            with pytest.raises(ProcessLookupError):
                os.kill(int(pid), 0)
            with run_lock("the next run", root):
                pass
        else:
            with pytest.raises(RunBusy):
                RunLock("the next run", root).acquire()
    finally:
        if how == "crash":
            os.killpg(int(pid), signal.SIGKILL)


def test_a_lock_whose_holder_file_cannot_be_written_is_released(root: Path) -> None:
    (root / ".xtc-katas" / "run.lock.holder").mkdir(parents=True)  # write_text: an OSError
    with pytest.raises(OSError):
        RunLock("the notebook", root).acquire()
    (root / ".xtc-katas" / "run.lock.holder").rmdir()
    with run_lock("the next run", root):  # not left held
        pass


def test_a_change_on_disk_during_the_save_is_not_overwritten(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = stub_sync.load(KATA, root)
    other = loaded.text + "\n# saved by another editor meanwhile\n"
    chmod = stub_sync.os.chmod

    def racing_chmod(*args: object, **kwargs: object) -> None:  # another save lands now
        KATA.stub_path(root).write_text(other)
        chmod(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stub_sync.os, "chmod", racing_chmod)
    with pytest.raises(stub_sync.SaveRefused, match="changed on disk"):
        stub_sync.save(KATA, loaded, loaded.text + ANSWER, root)
    assert KATA.stub_path(root).read_text() == other
    assert not list(KATA.stub_path(root).parent.glob("*.tmp"))
