"""One submission graded on one node: what a Dask job runs (and the benchmark's plain loop).

The node makes a clean copy of its own suite (tools/repo_copy.py), puts the learner's stub
files in it and nothing else, and runs each graded kata's tests in a pytest process of
its own, as a learner runs them (`pytest katas/NN_name`, learner mode). One process per
kata keeps a crash or a hang to that kata, and gives each kata its timeout. The verdicts
come from the run's record (pytest_record.py), written line by line, so a run that dies
still tells which test it died in.

Two kinds of failure are kept apart. The learner's (a failed test, a crash, a hang, a
missing file, an untouched stub) is a verdict with its cause, `grading_status`
"graded". The grader's (this node's suite at another commit, pytest unable to run the
suite, any exception here) raises: Dask reports it to the client, which records
`grading_status` "grader error" and grades it again on the next run.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from xtc_katas import ROOT
from xtc_katas.checks.confine import CONFINE_ENV
from xtc_katas.grade import sandbox
from xtc_katas.grade.cluster import reap
from xtc_katas.grade.submissions import Submission, stub_name
from xtc_katas.kata.manifest import Kata, find
from xtc_katas.tools.repo_copy import copy_repository, learner_env

#: The seconds a kata's tests may take on a node before the run is stopped as hung: the
#: slowest kata runs in minutes (its races and searches), a hung one never ends.
KATA_TIMEOUT = 1200.0
#: The note on every grade made with --unconfined.
UNCONFINED = (
    "graded unconfined (--unconfined): its code ran with the grader's rights, and could have "
    "changed any grade"
)
#: The end of a crashed or hung run's output kept in its verdict (characters).
OUTPUT_TAIL = 3000


class GraderError(RuntimeError):
    """The grader could not grade: its own failure, never the learner's."""


@dataclass(frozen=True)
class GradeConfig:
    """How a class is graded; the same for every submission of a run."""

    katas: tuple[str, ...]  # kata ids
    backend: str = ""  # "mlir" or "tvm"; "" for both, as a learner runs them
    suite: str = ""  # suite_id() of the instructor's checkout; "" to skip the check
    timeout: float = KATA_TIMEOUT  # per kata, in seconds
    scratch: str = ""  # where the node makes its copies ("" for its temp dir)
    confined: bool = True  # each kata's pytest in bubblewrap (sandbox.py); False: --unconfined


def suite_id(root: Path = ROOT) -> str:
    """The suite's commit, "-dirty" when tracked files changed since: what a grade was
    graded against, and what every node must have checked out. Read without touching
    the index (no optional locks), as other processes may be using the checkout."""
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0"}

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, env=env)
        return done.stdout.decode().strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    if not commit:
        return "unknown (not a git checkout)"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return commit + ("-dirty" if dirty else "")


def cpu_model() -> str:
    """The CPU as /proc/cpuinfo names it, with its family and model (a VM's "AMD EPYC
    Processor" says little without them)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break  # the first processor's block
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or platform.processor() or platform.machine()
    if "cpu family" in fields and "model" in fields:
        name += f" (family {fields['cpu family']} model {fields['model']})"
    return name


def node_info() -> dict[str, Any]:
    """Where a grade was made: the host, the Dask worker, the CPU and its load."""
    try:
        from distributed import get_worker

        worker = get_worker().address
    except (ImportError, ValueError):
        worker = "(no Dask worker: graded in the calling process)"
    return {
        "hostname": socket.gethostname(),
        "worker": worker,
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "load_before": list(os.getloadavg()),
    }


def graded_env() -> dict[str, str]:
    """A learner's environment for the graded pytest: none of the harness's switches
    (learner_env), none of pytest's or pytest-xdist's variables of a process that started
    this one, no PYTHONPATH (the copy's own modules are imported), and not what a Dask
    nanny sets before it starts a worker: its thread limits (OMP_NUM_THREADS=1, ...:
    kernels use the node's cores as in a learner's run) and its fixed hash seed."""
    try:
        import dask

        nanny = dask.config.get("distributed.nanny.pre-spawn-environ", {}) or {}
    except ImportError:
        nanny = {}
    env = learner_env()
    nanny = {**{k: str(v) for k, v in nanny.items()}, "PYTHONHASHSEED": "6640"}  # Dask's
    for key in list(env):
        set_by_nanny = env[key] == nanny.get(key) or key.startswith("__DASK_")
        if key.startswith("PYTEST_") or key == "PYTHONPATH" or set_by_nanny:
            del env[key]
    return env


def grade(sub: Submission, config: GradeConfig) -> dict[str, Any]:
    """The submission's grading (the document stored as grading.json)."""
    started = time.time()
    scratch = Path(config.scratch or tempfile.gettempdir())
    scratch.mkdir(parents=True, exist_ok=True)
    node = {**node_info(), "leftovers_killed": reap(scratch)}
    here = suite_id()
    if config.suite and here != config.suite:
        raise GraderError(
            f"{node['hostname']}: this node's suite is at {here}, the class is graded at "
            f"{config.suite}: check out the same commit on every node"
        )
    if config.confined and (why := sandbox.unavailable()):
        raise GraderError(f"{node['hostname']} cannot confine a grading: {why}")
    katas = [find(k) for k in config.katas]
    kata_results: list[dict[str, Any]] = []
    tests: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="xtc-katas-grade-", dir=scratch) as tmp:
        copy = copy_repository(Path(tmp)) if sub.files else Path(tmp)
        if config.confined:
            sandbox.hand_over(Path(tmp))
        for kata in katas:
            verdict, kata_tests = grade_kata(kata, sub, copy, config, Path(tmp))
            kata_results.append(verdict)
            tests += kata_tests
    node["load_after"] = list(os.getloadavg())
    notes = list(sub.notes)
    if not config.confined:
        notes.append(UNCONFINED)
    status, message = overall(kata_results, sub, notes)
    return {
        "id": sub.id,
        "name": sub.name,
        "source": sub.source,
        "submission_hash": sub.content_hash,
        "suite_commit": here,
        "grading_status": "graded",
        "status": status,
        "message": message,
        "notes": notes,
        "confined": config.confined,
        "katas": kata_results,
        "tests": tests,
        "node": node,
        "config": asdict(config),
        "graded_at": started,
        "seconds": time.time() - started,
    }


def overall(
    kata_results: list[dict[str, Any]], sub: Submission, notes: list[str]
) -> tuple[str, str]:
    """Exercism's status and a teacher's one-paragraph message."""
    verdicts = [k["verdict"] for k in kata_results]
    if all(v == "passed" for v in verdicts):
        status = "pass"
    elif any(v in ("crashed", "timed out") for v in verdicts) or all(
        v == "missing" for v in verdicts
    ):
        status = "error"
    else:
        status = "fail"
    if sub.problem:
        return status, f"nothing graded: {sub.problem}"
    parts = []
    for k in kata_results:
        line = f"{k['kata']}: {k['verdict']}, {k['tasks_passed']}/{len(k['tasks'])} tasks"
        parts.append(line + (f" ({k['cause']})" if k["cause"] else ""))
    return status, "; ".join(parts + notes)


def _placeholder_tests(kata: Kata, status: str, message: str) -> list[dict[str, Any]]:
    """One entry per task for a kata whose tests did not run (missing, untouched)."""
    return [
        _test(f"{kata.id}::{t.function}", kata.id, [t.function], "", status, message)
        for t in kata.tasks
    ]


def _test(
    name: str,
    kata: str,
    tasks: list[str],
    backend: str,
    status: str,
    message: str,
    output: str = "",
    figures: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "kata": kata,
        "tasks": tasks,
        "backend": backend,
        "status": status,
        "message": message,
        "output": output,
        "figures": figures or [],
    }


def _kata_verdict(
    kata: Kata, verdict: str, cause: str, tests: list[dict[str, Any]], seconds: float = 0.0
) -> dict[str, Any]:
    tasks = {}
    for task in kata.tasks:
        mine = [t for t in tests if task.function in t["tasks"] and t["status"] != "skip"]
        passed = bool(mine) and all(t["status"] == "pass" for t in mine)
        tasks[task.function] = "passed" if passed else "failed"
    passed = sum(state == "passed" for state in tasks.values())
    if verdict == "ran":
        verdict = "passed" if passed == len(tasks) else "failed"
    return {
        "kata": kata.id,
        "verdict": verdict,
        "cause": cause,
        "tasks": tasks,
        "tasks_passed": passed,
        "seconds": seconds,
    }


def grade_kata(
    kata: Kata, sub: Submission, copy: Path, config: GradeConfig, tmp: Path
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(The kata's verdict, its tests) for one kata of the submission."""
    stub = stub_name(kata)
    if stub not in sub.files:
        cause = sub.problem or f"{stub} is missing from the submission"
        tests = _placeholder_tests(kata, "error", cause)
        return _kata_verdict(kata, "missing", cause, tests), tests
    if sub.files[stub] == (ROOT / stub).read_bytes():
        cause = f"{stub} is the untouched stub"
        tests = _placeholder_tests(kata, "fail", cause)
        return _kata_verdict(kata, "not attempted", cause, tests), tests
    (copy / stub).write_bytes(sub.files[stub])
    record, log = tmp / f"{kata.id}.jsonl", tmp / f"{kata.id}.log"
    started = time.monotonic()
    code, timed_out = run_pytest(kata, copy, record, log, config)
    seconds = time.monotonic() - started
    events = _events(record)
    collected = next((e["tests"] for e in events if e["event"] == "collected"), [])
    finish = next((e for e in events if e["event"] == "finish"), None)
    starts = [e["nodeid"] for e in events if e["event"] == "start"]
    reports: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["event"] == "report":
            reports.setdefault(event["nodeid"], []).append(event)
    tail = _tail(log)
    if finish is not None and not timed_out and finish["exitstatus"] not in (0, 1):
        raise GraderError(
            f"{kata.id}: pytest ended with exit code {finish['exitstatus']} "
            f"({_exit_meaning(finish['exitstatus'])}) on the suite's tests:\n{tail}"
        )
    running = starts[-1] if starts and not reports.get(starts[-1]) else ""
    if timed_out:
        verdict = "timed out"
        cause = f"did not finish within {config.timeout:.0f} s" + _where(running)
    elif finish is None:
        verdict = "crashed"
        cause = f"the test run {_death(code)}" + _where(running)
    else:
        verdict, cause = "ran", ""
    tests = []
    for entry in collected:
        status, message, output, figures = _outcome(entry["nodeid"], reports, running, cause)
        name = f"{kata.id}::{entry['nodeid'].split('::', 1)[-1]}"
        if entry["nodeid"] == running:
            output = (output + "\n" + tail).strip()
        tests.append(
            _test(name, kata.id, entry["tasks"], entry["backend"], status, message, output, figures)
        )
    if not collected and verdict != "ran":  # died before its tests were listed
        tests = _placeholder_tests(kata, "error", cause)
        tests[0]["output"] = tail
    return _kata_verdict(kata, verdict, cause, tests, seconds), tests


#: The record's events (pytest_record.py), each with its fields' types.
EVENTS: dict[str, dict[str, type]] = {
    "collected": {"tests": list},
    "start": {"nodeid": str},
    "report": {"nodeid": str, "when": str, "outcome": str, "message": str, "perf": list},
    "finish": {"exitstatus": int},
}


def _events(record: Path) -> list[dict[str, Any]]:
    """The record's events; a line cut short by the run's death, or not one of EVENTS
    with its fields, is left out."""
    events = []
    lines = record.read_text(errors="replace").splitlines() if record.exists() else []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        fields = EVENTS.get(event.get("event")) if isinstance(event, dict) else None
        if fields is not None and all(isinstance(event.get(k), t) for k, t in fields.items()):
            events.append(event)
    return events


def _outcome(
    nodeid: str, reports: dict[str, list[dict[str, Any]]], running: str, cause: str
) -> tuple[str, str, str, list[dict[str, Any]]]:
    """(status, message, output, figures) of one collected test."""
    mine = reports.get(nodeid, [])
    failed = [r for r in mine if r["outcome"] == "failed"]
    call = next((r for r in mine if r["when"] == "call"), None)
    output = "".join(r.get("output", "") for r in mine)
    figures = [f for r in mine for f in r.get("perf", [])]
    if failed:
        status = "fail" if failed[0]["when"] == "call" else "error"
        return status, failed[0]["message"], output, figures
    if call is not None and call["outcome"] == "passed":
        return "pass", "", output, figures
    if any(r["outcome"] == "skipped" for r in mine):
        return "skip", mine[0].get("message", ""), output, figures
    if nodeid == running:
        return "error", f"stopped in this test: {cause}", output, figures
    return "error", f"not run: {cause}", output, figures


def _where(nodeid: str) -> str:
    return f", in {nodeid.split('::', 1)[-1]}" if nodeid else ""


def _death(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}" + (" (a segfault)" if name == "SIGSEGV" else "")
    return f"exited with code {code} before finishing (os._exit or a crash in the code)"


def _exit_meaning(code: int) -> str:
    import pytest

    try:
        return pytest.ExitCode(code).name.lower().replace("_", " ")
    except ValueError:
        return "not one of pytest's codes"


def _tail(log: Path) -> str:
    """The part of a run's output that says why it died: Python's fault handler report
    (its first lines name the learner's function, most recent call first), else the end."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return ""
    fault = text.find("Fatal Python error")
    return text[fault : fault + OUTPUT_TAIL] if fault >= 0 else text[-OUTPUT_TAIL:]


def run_pytest(
    kata: Kata, copy: Path, record: Path, log: Path, config: GradeConfig
) -> tuple[int | None, bool]:
    """pytest on one kata in the copy: (exit code or -signal, whether it timed out).

    In a session of its own, so that a timeout stops it and every kernel it forked; and,
    where util-linux's setpriv is found, with SIGKILL as its parent-death signal, so that
    a worker killed mid-job does not leave its pytest running beside the next grade."""
    env, cwd = graded_env(), str(copy)
    if config.confined:  # the grading's folder (the copy, the record) and the module cache
        cache = Path(config.scratch or tempfile.gettempdir()) / "xtc-katas-module-cache"
        if not cache.exists():
            cache.mkdir()
            sandbox.hand_over(cache)
        grading = Path(sandbox.GRADING)
        cwd, record = str(grading / copy.relative_to(record.parent)), grading / record.name
        hidden = {"hide": [f"{cwd}/solutions"], "read_only": [sandbox.GRADING, sandbox.CACHE]}
        env.update({CONFINE_ENV: json.dumps(hidden), "XDG_CACHE_HOME": sandbox.CACHE})
    command = [sys.executable, "-m", "pytest", f"katas/{kata.id}", "-q", "--no-header"]
    command += ["-p", "xtc_katas.grade.pytest_record", f"--grade-record={record}"]
    if config.backend:
        command.append(f"--backend={config.backend}")
    if config.confined:
        command = sandbox.wrap(command, cwd, {log.parent: sandbox.GRADING, cache: sandbox.CACHE})
    setpriv = shutil.which("setpriv")
    if setpriv:
        command = [setpriv, "--pdeathsig", "KILL", *command]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command,
            cwd=copy,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=config.timeout)
            if config.confined and code > 128:  # bwrap's for its command killed by a signal
                code = 128 - code
            return code, False
        except subprocess.TimeoutExpired:
            return None, True
        finally:  # the kernels it forked too, also after a crash or an exception here
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()
