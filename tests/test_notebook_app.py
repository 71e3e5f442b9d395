"""The notebook mode end to end: marimo leaves pytest alone, the app runs headless, its
server starts and stops, and a real browser (Debian's chromium under Playwright) solves
a task of kata 04 through it.

The app's own logic (save, load, lock, reports) is tested without marimo in
tests/test_notebook_sync.py.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from tools import browser
from tools.copy_runs import run_python
from xtc_katas import ROOT
from xtc_katas.grade.repo_copy import copy_repository, learner_env
from xtc_katas.kata.manifest import find
from xtc_katas.notebook.runner import JUNIT
from xtc_katas.notebook.server import answers

KATA = find(4)
APP = "xtc_katas/notebook/app.py"


def answer(stub: str, interchange: str) -> str:
    """Kata 04's stub with `schedule_interchange`'s body written as `interchange`."""
    head, found, tail = stub.partition("def schedule_interchange(")
    assert found, "kata 04's stub defines schedule_interchange"
    body = tail.index("    raise NotImplementedError\n")
    rest = tail[body + len("    raise NotImplementedError\n") :]
    return head + found + tail[:body] + f"    {interchange}\n" + rest


RIGHT = 'sch.interchange(["i", "k", "j"])'
WRONG = 'sch.interchange(["i", "j", "k"])'


def app_env(repo: Path) -> dict[str, str]:
    # the copy's xtc_katas, a learner's environment, marimo offline; peak not measured
    return learner_env(
        PYTHONPATH=str(repo), MARIMO_SKIP_UPDATE_CHECK="1", XTC_KATAS_PEAK_GFMAS="50"
    )


def test_marimo_and_playwright_register_no_pytest_plugin() -> None:
    """The suite names its plugins (--disable-plugin-autoload); still, installing the
    notebook's packages must not add one that a plain `pytest` would load."""
    plugins = {ep.dist.name.lower() for ep in entry_points(group="pytest11") if ep.dist}
    assert not plugins & {"marimo", "playwright", "filelock", "pyee", "greenlet"}
    args = ["--trace-config", "--co", "-q", "-p", "no:cacheprovider"]
    traced = subprocess.run(
        [sys.executable, "-m", "pytest", *args, str(ROOT / "tests" / "test_structure.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert traced.returncode == 0, traced.stdout + traced.stderr
    assert "marimo" not in traced.stdout and "playwright" not in traced.stdout


@pytest.mark.slow
@pytest.mark.perf  # the app's run races kata 04's kernels
def test_the_app_run_headless_shows_the_verdicts_and_the_chart(tmp_path: Path) -> None:
    """`marimo export html` executes the app; with --autorun it runs the kata once."""
    repo = copy_repository(tmp_path)
    stub = KATA.stub_path(repo)
    stub.write_text(answer(stub.read_text(), RIGHT))
    out = tmp_path / "notebook.html"
    args = ["-m", "marimo", "export", "html", APP, "-o", str(out), "--"]
    args += ["--kata", "4", "--autorun", "--task", "schedule_interchange", "--backend", "mlir"]
    code, output = run_python(repo, *args, env=app_env(repo), timeout=600)
    assert code == 0, output
    page = out.read_text()
    finished = r"04_scheduling\\u003C/b\\u003E: tests finished in [\d.]+ s"
    assert re.search(finished, page), page[-3000:]
    verdict = 'class=\\"xtc-verdict\\" data-task=\\"schedule_interchange\\" data-state=\\"passed'
    assert verdict in page
    assert "speedups against the reference" in page and "data:image/png;base64," in page
    # --task ran schedule_interchange's tests only: no other task's test ran.
    assert 'data-task=\\"schedule_vectorize\\" data-state=\\"not run' in page


def start_logged(
    command: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float = 120.0
) -> tuple[subprocess.Popen[bytes], str]:
    """`xtc-katas notebook ...` started with its output in the file `log` (never a pipe:
    marimo keeps logging, and a pipe nobody reads blocks the server once full): the
    process and the URL it prints; RuntimeError with the log if none comes."""
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"notebook for \S+: (http://\S+)", log.read_text(errors="replace"))
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.2)
    if process.poll() is None:
        process.kill()
        process.wait()
    raise RuntimeError("the notebook printed no URL:\n" + log.read_text(errors="replace"))


def start_notebook(repo: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`xtc-katas notebook 4 --no-browser` in the copy: the process and its printed URL
    (its output in a file beside the copy: a pipe nobody reads would block marimo)."""
    command = [sys.executable, "-m", "xtc_katas", "notebook", "4", "--no-browser"]
    process, url = start_logged(command, repo, app_env(repo), repo.parent / "notebook.log")
    assert re.match(r"http://127\.0\.0\.1:\d+/\S+", url), url
    return process, url


def stop_notebook(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError("the notebook did not stop on SIGTERM") from None


@pytest.mark.slow
def test_the_server_starts_on_a_free_port_answers_and_stops(tmp_path: Path) -> None:
    repo = copy_repository(tmp_path)
    process, url = start_notebook(repo)
    try:
        base = url.split("/?")[0]
        assert answers(f"{base}/health") and answers(url)
    finally:
        stop_notebook(process)
    assert not answers(f"{base}/health")
    # the server's children (marimo's) are gone with it: nothing holds the port
    assert subprocess.run(["pgrep", "-f", "--", f"--port {base.rsplit(':', 1)[1]}"]).returncode == 1


@pytest.mark.slow
def test_a_learner_solves_a_task_in_a_real_browser(tmp_path: Path, chromium: str) -> None:
    """In quick mode (no speed race: the headless test checks the chart), so it may run
    beside other tests under pytest -n."""
    from playwright.sync_api import sync_playwright

    repo = copy_repository(tmp_path)
    stub = KATA.stub_path(repo)
    right, wrong = answer(stub.read_text(), RIGHT), answer(stub.read_text(), WRONG)
    process, url = start_notebook(repo)
    try:
        with sync_playwright() as playwright:
            chrome = browser.launch(playwright, chromium)
            page = chrome.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url)

            def write_save_and_run(text: str) -> None:
                editor = page.locator(".cm-content").first
                editor.wait_for(timeout=90_000)
                editor.click()
                page.keyboard.press("Control+a")
                page.keyboard.insert_text(text)
                page.get_by_role("button", name="Save").click()
                deadline = time.monotonic() + 30
                while stub.read_text() != text and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert stub.read_text() == text  # the file is the editor's text
                tasks = page.locator("select", has=page.locator("option[value='all tasks']"))
                tasks.select_option("schedule_interchange")
                backends = page.locator("select", has=page.locator("option[value='both']"))
                backends.select_option("mlir")
                quick = page.get_by_role("switch").first
                if quick.get_attribute("aria-checked") != "true":
                    quick.click()
                    page.wait_for_timeout(500)
                page.get_by_role("button", name="Run tests").click()

            write_save_and_run(right)
            passed = ".xtc-verdict[data-task='schedule_interchange'][data-state='passed']"
            page.locator(passed).wait_for(timeout=180_000)
            listed = ".xtc-task[data-task='schedule_interchange'][data-state='passed']"
            page.locator(listed).wait_for(timeout=30_000)
            code, status = run_python(repo, "-m", "xtc_katas", "status")
            assert code == 0 and re.search(r"04_scheduling\s+partly run\s+1/5", status), status

            write_save_and_run(wrong)
            failed = ".xtc-verdict[data-task='schedule_interchange'][data-state='failed']"
            page.locator(failed).wait_for(timeout=180_000)
            shown = page.locator(f"{failed} .xtc-failure pre").first.inner_text()
            chrome.close()
    finally:
        stop_notebook(process)
    assert stub.read_text() == wrong
    # the message is pytest's own: the same run in a terminal prints it
    code, printed = run_python(
        repo, "-m", "pytest", "katas/04_scheduling", "-k", "schedule_interchange",
        "--backend", "mlir", "-m", "not perf",
    )  # fmt: skip
    assert code == 1
    first = next(line for line in shown.splitlines() if line.strip())
    assert first.strip() in printed, (first, printed[-3000:])


def _pytest_pids(marker: str) -> list[int]:
    """Processes whose command line holds `marker` (pytest's --junitxml path)."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and marker in (proc / "cmdline").read_bytes().decode():
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.slow
def test_stopping_the_notebook_mid_run_stops_its_pytest_and_frees_the_lock(
    tmp_path: Path, chromium: str
) -> None:
    """SIGTERM to `xtc-katas notebook` while a run goes on: marimo exits, its pytest (and
    kernels) are stopped with it and the run lock is free."""
    from playwright.sync_api import sync_playwright

    from xtc_katas.kata.run_lock import run_lock

    repo = copy_repository(tmp_path)
    marker = f"--junitxml={repo / '.xtc-katas' / JUNIT}"  # on the run's pytest only
    process, url = start_notebook(repo)
    pids: list[int] = []
    try:
        with sync_playwright() as playwright:
            chrome = browser.launch(playwright, chromium)
            page = chrome.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(url)
            page.get_by_role("button", name="Run tests").click(timeout=120_000)
            deadline = time.monotonic() + 90
            while not pids and time.monotonic() < deadline:
                pids = _pytest_pids(marker)
                time.sleep(0.2)
            assert pids, "the run did not start"
            chrome.close()
    finally:
        stop_notebook(process)
    try:
        deadline = time.monotonic() + 15
        while _pytest_pids(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _pytest_pids(marker), "pytest outlived the notebook"
        with run_lock("the next run", repo):
            pass
    finally:
        for pid in _pytest_pids(marker):
            os.killpg(pid, signal.SIGKILL)
