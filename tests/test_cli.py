"""`xtc-katas`, end to end: each subcommand in a subprocess on a temporary copy of the repo."""

import os
import re
import subprocess
import sys
import time

import pytest

from tools.copy_runs import run_python
from xtc_katas.grade.repo_copy import copy_repository, learner_env
from xtc_katas.kata.manifest import find, katas

#: Every test here runs the CLI or pytest in a copy of the repository.
pytestmark = pytest.mark.slow


@pytest.fixture
def repo(tmp_path):
    return copy_repository(tmp_path)


def cli_env():
    # A learner's environment: not the --solutions run this suite may be part of.
    # The CLI tests check behaviour, not the peak: skip its measurement.
    return learner_env(XTC_KATAS_PEAK_GFMAS="50")


def cli(repo, *args, timeout=600, stdin=None):
    return run_python(repo, "-m", "xtc_katas", *args, env=cli_env(), timeout=timeout, stdin=stdin)


def solve(repo, number):
    kata = find(number)
    kata.stub_path(repo).write_text(kata.solution_path(repo).read_text())


def git(repo, *args):
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.mark.parametrize(
    "command",
    [
        "status",
        "run",
        "watch",
        "hint",
        "solution",
        "reset",
        "show",
        "explore",
        "report",
        "notebook",
    ],
)
def test_every_subcommand_has_help(repo, command):
    code, out = cli(repo, command, "--help")
    assert code == 0 and "usage: xtc-katas" in out


def test_status_on_a_fresh_copy_shows_every_kata_and_the_first_step(repo):
    code, out = cli(repo)
    assert code == 0
    for kata in katas():
        assert kata.id in out
    assert f"0 of {len(katas())} katas passing." in out
    assert "Next: 01_peak" in out and "run:  xtc-katas run 1" in out


def test_status_reads_the_last_results_and_runs_nothing(repo):
    """Issue 50: `status` re-ran the first unfinished kata's tests (7.8 s on a Zen 4);
    it reads what the last `run` recorded, and an edit since then reads as not run."""
    code, out = cli(repo, "status")
    assert code == 0 and "running the tests" not in out, out
    assert not (repo / ".pytest_cache" / "v" / "xtc-katas" / "results").exists(), "it ran"
    assert re.search(r"^01_peak +not run +0/3", out, re.M), out
    code, out = cli(repo, "run", "1")
    assert code == 1 and "01_peak: not started" in out, out
    code, out = cli(repo, "status")
    assert re.search(r"^01_peak +not started +0/3", out, re.M), out
    assert "first failure: 01_peak › matmul_fmas() is not implemented yet." in out, out
    solve(repo, 1)  # an edit without a run
    code, out = cli(repo, "status")
    assert re.search(r"^01_peak +not run +0/3", out, re.M), out


def test_a_solved_kata_passes_and_unlocks_its_solution_an_unsolved_one_does_not(repo):
    solve(repo, 1)
    code, out = cli(repo, "run", "1")
    assert code == 0 and "01_peak: passing, 3/3 tasks passed" in out, out
    code, out = cli(repo, "status")
    assert "1 of" in out and "Next: 02_graph" in out
    code, out = cli(repo, "solution", "1")
    assert code == 0 and "def measure_peak" in out and "raise NotImplementedError" not in out
    code, out = cli(repo, "solution", "2")
    assert code == 1 and "does not pass yet" in out and "def matmul_graph" not in out
    code, out = cli(repo, "solution", "2", "--force")
    assert code == 0 and "warning:" in out and "def matmul_graph" in out


def test_hints_come_one_at_a_time_in_order_per_function(repo):
    # A newcomer needed nine calls to reach kata 03's ninth hint, about its third
    # function: hints now run in order within each function.
    kata = find(3)
    first, third = kata.tasks[0], kata.tasks[2]
    for n, hint in enumerate(first.hints[:2], 1):
        code, out = cli(repo, "hint", "3")  # no result yet: the first function
        assert code == 0 and f"{first.function} hint {n}/{len(first.hints)}: {hint}" in out
    code, out = cli(repo, "hint", "3", third.function)
    assert code == 0 and f"{third.function} hint 1/{len(third.hints)}: {third.hints[0]}" in out
    code, out = cli(repo, "hint", "3", "no_such_function")
    assert code != 0 and "has no function 'no_such_function'" in out


def test_reset_restores_the_stub_and_keeps_a_named_backup(repo):
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "as shipped")
    kata = find(3)
    original = kata.stub_path(repo).read_text()
    solve(repo, 3)
    git(repo, "commit", "-qam", "the learner commits their work")  # not the original
    mine = kata.stub_path(repo).read_text()
    code, out = cli(repo, "reset", "3")
    assert code == 0, out
    assert kata.stub_path(repo).read_text() == original
    backup = next(line.split(" saved as ")[1] for line in out.splitlines() if "saved as" in line)
    assert (repo / backup).read_text() == mine
    code, out = cli(repo, "reset", "3")
    assert code == 0 and "already the original stub" in out


def test_watch_reruns_when_the_learner_saves(repo):
    process = subprocess.Popen(
        [sys.executable, "-m", "xtc_katas", "watch", "1", "--max-runs", "2"],
        cwd=repo,
        env=cli_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("watching katas/01_peak/"):
                time.sleep(0.5)  # let the watcher start
                solve(repo, 1)  # the learner saves a correct file
        process.wait(timeout=300)
    finally:
        process.kill()
    out = "".join(lines)
    assert out.count("running the tests of 01_peak") == 2, out
    assert "[01_peak] not started" in out and "[01_peak] passing: 3/3 tasks passed" in out
    assert process.returncode == 0


def test_watch_falls_back_to_enter_when_asked(repo):
    code, out = cli(repo, "watch", "1", "--manual", "--max-runs", "2", stdin="\n")
    assert code == 1, "the kata still fails after both runs"
    assert out.count("running the tests of 01_peak") == 2
    assert "press Enter to re-run" in out


@pytest.mark.perf  # explore times the search's candidates
def test_explore_shows_the_search_a_table_and_a_plot(repo):
    code, out = cli(repo, "explore", "6", "--backend", "mlir", "--solutions")
    assert code == 0, out
    assert "naive" in out and "| rank | candidate | % of peak |" in out
    plot = next(line.split("plot: ")[1] for line in out.splitlines() if line.startswith("plot: "))
    assert plot.endswith(".png") and os.path.getsize(plot) > 1000


@pytest.mark.perf  # report races the learner's kernels
def test_report_measures_a_passing_kata_against_the_reference(repo):
    solve(repo, 4)
    code, out = cli(repo, "run", "4", "--backend", "mlir", "-m", "not perf")
    assert code == 0, out
    code, out = cli(repo, "report", "--backend", "mlir")
    assert code == 0, out
    assert "wrote " in out and "report.json" in out and "report.png" in out
    import json

    report = json.loads((repo / ".xtc-katas" / "report" / "report.json").read_text())
    tasks = {row["task"] for row in report["rows"]}
    assert tasks == {t.function for t in find(4).tasks}
    # A copy of the reference, raced beside it: the two figures agree within the margins
    # flakecheck allows twins (never "faster than naive": on MLIR the interchange step
    # read 0.87-1.12x naive, its reference too, AMD EPYC family 23 model 1).
    for row in report["rows"]:
        assert row["yours"] > 0 and row["reference"] > 0, row
        assert 0.5 < row["yours"] / row["reference"] < 2, row


def test_show_marks_the_vector_fmas_of_the_references_register_tile(repo):
    code, out = cli(
        repo,
        "show",
        "4",
        "schedule_register_tile",
        "--asm",
        "--reference",
        "--spoil",
        "--backend",
        "mlir",
    )
    assert code == 0, out
    assert "===== 04_scheduling schedule_register_tile on mlir, 4x32x512" in out
    assert "<== vector FMA" in out and "vector FMA instructions in this listing" in out


@pytest.mark.parametrize("backend_name", ["mlir", "tvm"])
def test_show_diffs_your_nest_with_the_reference(repo, backend_name):
    solve(repo, 5)
    code, out = cli(
        repo,
        "show",
        "5",
        "register_tile_spec",
        "--nest",
        "--diff",
        "--spoil",
        "--backend",
        backend_name,
    )
    assert code == 0, out
    assert "(the same)" in out, "a copy of the reference has the reference's loop nest"


def test_show_on_an_untouched_stub_says_so(repo):
    code, out = cli(repo, "show", "8", "--ir", "--backend", "mlir")
    assert code == 1
    assert "08_large_matmul › schedule_large() is not implemented yet." in out


def test_show_keeps_the_reference_for_after_the_task_passes_or_spoil(repo):
    """Issue 50: the reference's schedule is the task's answer, locked as the solution is."""
    solve(repo, 4)
    for side in ("--reference", "--diff"):
        code, out = cli(repo, "show", "4", "schedule_split", side, "--backend", "mlir")
        assert code == 1, out
        assert "schedule_split() has not passed its tests yet" in out and "--spoil" in out
        assert "j0" not in out and "=====" not in out, "nothing of the reference shown"
    code, out = cli(
        repo, "show", "4", "schedule_split", "--reference", "--spoil", "--backend", "mlir"
    )
    assert code == 0 and "warning:" in out and "===== 04_scheduling schedule_split" in out, out
    code, out = cli(repo, "run", "4", "-k", "schedule_split", "-m", "not perf")
    assert code == 0, out
    code, out = cli(repo, "show", "4", "schedule_split", "--reference", "--backend", "mlir")
    assert code == 0 and "warning:" not in out and "===== 04_scheduling schedule_split" in out


@pytest.mark.parametrize(
    "args, expected",
    [
        (("3", "--nest"), "03_compile compile_baseline on mlir"),
        (("6", "--nest", "--candidate", "4x16 tile"), "06_explore candidate_specs on mlir"),
        (("7", "--ir", "--sample", "1"), "07_strategies make_strategy on mlir"),
    ],
    ids=["03 baseline", "06 candidate", "07 sample"],
)
def test_show_covers_the_baseline_a_candidate_and_a_sample(repo, args, expected):
    code, out = cli(repo, "show", *args, "--reference", "--spoil", "--backend", "mlir")
    assert code == 0, out
    assert expected in out


def test_a_second_run_is_refused_while_another_holds_the_repository(repo):
    """run, watch, status and the notebook share one lock: two runs never race timings."""
    from xtc_katas.kata.run_lock import run_lock

    with run_lock("the notebook on 01_peak", repo):
        code, out = cli(repo, "run", "1")
    assert code == 75, out  # EX_TEMPFAIL: not one of pytest's codes, which `run` passes on
    assert "another run of the katas' tests is in progress (the notebook on 01_peak" in out
    code, out = cli(repo, "run", "1")
    assert code == 1 and "01_peak: not started" in out


def test_status_shows_the_recorded_table_while_another_run_holds_the_repository(repo):
    from xtc_katas.kata.run_lock import run_lock

    with run_lock("the notebook on 01_peak", repo):
        code, out = cli(repo, "status")
    assert code == 0, out
    assert re.search(r"^01_peak +not run +0/3", out, re.M), out  # the recorded table


def test_watch_waits_for_the_next_change_while_another_run_holds_the_repository(repo):
    """A busy lock never ends watch: it names the holder and tries again at the next
    change (here Enter, --manual); it ends on q/EOF as always."""
    from xtc_katas.kata.run_lock import run_lock

    with run_lock("the notebook on 01_peak", repo):
        code, out = cli(repo, "watch", "1", "--manual", "--max-runs", "1", stdin="\n")
    assert code == 0, out
    assert out.count("running the tests of 01_peak") == 2, out
    assert out.count("another run is in progress (the notebook on 01_peak") == 2, out
    assert "the tests run when you next save" in out


def test_help_documents_the_busy_exit_code(repo):
    code, out = cli(repo, "--help")
    assert code == 0 and "75 (EX_TEMPFAIL)" in out


def test_a_reader_that_stops_early_gets_no_traceback(repo):
    """`xtc-katas | head` (issue 50): the closed pipe ends the command quietly, as a CLI
    tool's would; it printed a BrokenPipeError traceback."""
    command = [sys.executable, "-m", "xtc_katas"]
    with subprocess.Popen(
        command, cwd=repo, env=cli_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as process:
        process.stdout.close()  # the reader is gone before the table is written
        errors = process.stderr.read().decode()
    assert process.returncode == 1, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
