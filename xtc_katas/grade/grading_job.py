"""One submission graded on one node: what a Dask job runs (and the benchmark's plain loop).

The node makes a clean copy of its own suite (repo_copy.py), puts the learner's stub
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

No grading writes what another reads. The node's module cache, the references compiled
once per node before the first submission (trusted_cache, outside any sandbox), is
read-only in a graded run, and each of its files is checked against the sha256 recorded
here before it is loaded (measure/module_cache.py); what a run compiles goes to its own
scratch, removed with it. The sandbox writes only its own folder (the copy, that cache)
and the folder of the record of the kata it runs, made fresh for that run: no run
writes another kata's record. The grader writes each stub into the copy before the
first kata runs, keeps each run's output where the sandbox cannot reach, and reads the
record back as data from the other side: no link followed, at most RECORD_BYTES,
RECORD_LINES and RECORD_TESTS.
"""

from __future__ import annotations

import contextlib
import fcntl
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

import platformdirs

from xtc_katas import ROOT
from xtc_katas.checks.confine import CONFINE_ENV
from xtc_katas.grade import memory_cap, sandbox
from xtc_katas.grade.cluster import reap
from xtc_katas.grade.repo_copy import copy_repository, learner_env
from xtc_katas.grade.submissions import Submission, stub_name
from xtc_katas.grade.untrusted_files import Refused, read_end, read_start
from xtc_katas.kata.manifest import Kata, find
from xtc_katas.measure import module_cache

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
#: The most of a run's output read back to find why it died (its end).
LOG_BYTES = 1 << 20
#: The most of a kata's record read (bytes, lines, collected tests): a kata's is under
#: 1 MiB and lists at most a few hundred tests, and every report's message and output are
#: capped (pytest_record.py). Each test read is kept in grading.json: the cap on tests
#: bounds the grader's memory and the grade's size (~342,000 tests in 16 MiB took the
#: grader to 3.1 GB).
RECORD_BYTES, RECORD_LINES, RECORD_TESTS = 16 << 20, 20_000, 2_000
#: Where a node keeps its trusted module cache, under its scratch folder.
TRUSTED_CACHE = "xtc-katas-trusted-cache"


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
    if sub.files:  # the references compiled for this node, before any submission runs
        node["trusted_cache"] = trusted_cache(katas, config)[1]
    with tempfile.TemporaryDirectory(prefix="xtc-katas-grade-", dir=scratch) as tmp:
        run = Path(tmp) / "run"  # the sandbox's: the copy, its own cache
        run.mkdir()
        copy = copy_repository(run, graded=True) if sub.files else run
        for kata in katas:  # every stub, before any of the sandbox's runs could plant a link
            stub = stub_name(kata)
            if stub in sub.files and sub.files[stub] != (ROOT / stub).read_bytes():
                (copy / stub).write_bytes(sub.files[stub])
        (run / "cache").mkdir()
        if config.confined:
            sandbox.hand_over(run)
        for kata in katas:
            verdict, kata_tests = grade_kata(kata, sub, copy, config, Path(tmp), node)
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


def trusted_cache(katas: list[Kata], config: GradeConfig) -> tuple[Path, str]:
    """The node's trusted module cache (its folder, and what it holds, in words), the
    references of `katas` compiled in it first where they are not yet.

    The trusted step: each kata's tests run on the suite's own solutions (`--solutions`,
    which compiles every reference and naive kernel a graded run asks the cache for),
    in a clean copy of the suite, outside any sandbox, as the grader, once per node and
    kata. Every file is then made readable by the sandbox's user, and its sha256
    recorded beside the folder (module_cache.TRUSTED_INDEX), which a graded run sees
    read-only: it loads only what matches.

    A confined grading's is the node's own cache folder, not its run's scratch, one folder
    per module_cache.fingerprint() (compilers, CPU, the harness's and solutions' sources:
    what every entry's key holds), so a node warms each kata and backend once per
    fingerprint, not at every `xtc-katas grade` on this machine (whose scratch is new each
    time: the harness's grading tests ran the trusted step again in each class they
    graded). An unconfined grading's runs could write its cache, which a confined one must
    never trust: theirs is another folder, under their scratch where there is one."""
    # Not the temp dir: it outlives every grading on the node (./run.sh test found it left
    # in its temp dir).
    node = Path(platformdirs.user_cache_dir("xtc-katas"))
    if config.confined:
        scratch, folder = node, TRUSTED_CACHE
    else:
        scratch, folder = Path(config.scratch or node), f"{TRUSTED_CACHE}-unconfined"
    root = scratch / folder / module_cache.fingerprint()[:16]
    index_path = Path(f"{root}{module_cache.TRUSTED_INDEX}")
    root.mkdir(parents=True, exist_ok=True)
    backends = [config.backend] if config.backend else ["mlir", "tvm"]
    with open(f"{root}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one node's workers warm it once
        try:
            index = json.loads(index_path.read_text())
        except (OSError, ValueError):
            index = {"warmed": {}, "files": {}}
        # per backend: a class graded on MLIR, then one on both, warms only TVM's
        left = {k.id: [b for b in backends if f"{k.id}:{b}" not in index["warmed"]] for k in katas}
        missing = [(k, left[k.id]) for k in katas if left[k.id]]
        if missing or "host runtime" not in index["warmed"]:
            _prune(root.parent, keep=root.name)
            with tempfile.TemporaryDirectory(prefix="xtc-katas-warm-", dir=scratch) as tmp:
                copy = copy_repository(Path(tmp), graded=True)
                env = {**graded_env(), "XDG_CACHE_HOME": tmp}
                env[module_cache.DIR_ENV] = str(root / "modules")
                for kata, cold in missing:
                    log = Path(tmp) / f"{kata.id}.log"
                    ended = _warm(kata, cold, copy, env, config, log)
                    index["warmed"].update({f"{kata.id}:{b}": ended for b in cold})
                runtime = "from xtc_katas.measure import module_cache; module_cache.host_runtime()"
                try:
                    done = subprocess.run([sys.executable, "-c", runtime], cwd=copy, env=env,
                                          capture_output=True, timeout=config.timeout)  # fmt: skip
                    index["warmed"]["host runtime"] = f"exit {done.returncode}"
                except subprocess.TimeoutExpired:
                    index["warmed"]["host runtime"] = f"stopped after {config.timeout:.0f} s"
            for where, _, files in os.walk(root):  # the sandbox's `nobody` reads it
                os.chmod(where, 0o755)
                for name in files:
                    os.chmod(os.path.join(where, name), 0o644)
            index["files"] = module_cache.index(root)
            partial = index_path.with_name(index_path.name + ".tmp")
            partial.write_text(json.dumps(index))
            partial.replace(index_path)
    warmed = ", ".join(f"{k} ({v})" for k, v in sorted(index["warmed"].items()))
    return root, f"{len(index['files'])} files checked by sha256; references of {warmed}"


def _prune(folder: Path, keep: str) -> None:
    """Remove the trusted caches (folder, index, lock) of other fingerprints than `keep`
    left unchanged for module_cache.KEEP_OTHERS_S, as the module cache prunes its own."""
    now = time.time()
    for other in folder.iterdir():
        try:
            if (
                other.name.startswith(keep)
                or now - other.stat().st_mtime < module_cache.KEEP_OTHERS_S
            ):
                continue
            if other.is_dir():
                shutil.rmtree(other, ignore_errors=True)
            else:
                other.unlink()
        except OSError:
            continue


def _warm(
    kata: Kata, backends: list[str], copy: Path, env: dict[str, str], config: GradeConfig, log: Path
) -> str:
    """The kata's tests on the solutions, in `copy`: what they compile fills the cache.
    Its verdict does not matter (a race lost on a busy node); how it ended is kept."""
    command = [sys.executable, "-m", "pytest", f"katas/{kata.id}", "-q", "--no-header"]
    command += ["--solutions", "-p", "no:cacheprovider"]
    if len(backends) == 1:
        command.append(f"--backend={backends[0]}")
    with log.open("wb") as out:
        code = _run_in_group(command, copy, env, out, config.timeout)
    return f"exit {code}" if code is not None else f"stopped after {config.timeout:.0f} s"


#: How often a run is checked for a stopped process (_stopped).
STOPPED_CHECK_S = 0.5
#: What the run's output ends with when one was: the test running then shows it.
STOPPED = (
    "\nxtc-katas grade: a process of this run was stopped ({}, SIGSTOP or the like): "
    "the run was ended. Nothing a kata asks stops a process: your code must not signal "
    "the harness.\n"
)


def _stopped(pid: int) -> str:
    """A process of the run `pid` (itself or a descendant) that is stopped, as
    "pid N, <name>", or "". The learner's worker shares the graded pytest's user and PID
    namespace: a SIGSTOP held that run, and the node, to the kata's timeout (outside red
    team, round 4); nothing in a grading stops a process otherwise."""
    import psutil

    try:
        run = psutil.Process(pid)
        for proc in [run, *run.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):
                if proc.status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP):
                    return f"pid {proc.pid}, {proc.name()}"
    except psutil.Error:
        pass
    return ""


def _run_in_group(
    command: list[str], cwd: Path, env: dict[str, str], out: Any, timeout: float
) -> int | None:
    """`command` in a session of its own, its output to `out`: its exit code, or None
    once it ran past `timeout`. Then its whole group is killed: the kernels it forked
    too, also after a crash or an exception here."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return process.wait(timeout=min(STOPPED_CHECK_S, deadline - time.monotonic()))
            if stopped := _stopped(process.pid):
                out.write(STOPPED.format(stopped).encode())
                out.flush()
                os.killpg(process.pid, signal.SIGKILL)
                return process.wait()
        return None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def overall(
    kata_results: list[dict[str, Any]], sub: Submission, notes: list[str]
) -> tuple[str, str]:
    """Exercism's status and a teacher's one-paragraph message."""
    verdicts = [k["verdict"] for k in kata_results]
    if all(v == "passed" for v in verdicts):
        status = "pass"
    elif any(v in ("crashed", "timed out") for v in verdicts) or all(
        v in ("missing", "refused") for v in verdicts
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
    kata: Kata,
    sub: Submission,
    copy: Path,
    config: GradeConfig,
    tmp: Path,
    node: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(The kata's verdict, its tests) for one kata of the submission, whose stub is in
    `copy` (under tmp/run, the sandbox's); what the node allowed goes to `node`."""
    stub = stub_name(kata)
    if stub in sub.refused:
        tests = _placeholder_tests(kata, "error", sub.refused[stub])
        return _kata_verdict(kata, "refused", sub.refused[stub], tests), tests
    if stub not in sub.files:
        cause = sub.problem or f"{stub} is missing from the submission"
        tests = _placeholder_tests(kata, "error", cause)
        return _kata_verdict(kata, "missing", cause, tests), tests
    if sub.files[stub] == (ROOT / stub).read_bytes():
        cause = f"{stub} is the untouched stub"
        tests = _placeholder_tests(kata, "fail", cause)
        return _kata_verdict(kata, "not attempted", cause, tests), tests
    # The record's folder, made here for this run only, is bound into this kata's sandbox
    # alone: no earlier kata's run (nor anything it left) can write what is read as its
    # verdict, and the learner's worker sees it read-only.
    records = tmp / "records" / kata.id
    records.mkdir(parents=True)  # never there before: a fresh folder, or an error
    record, log = records / "record.jsonl", tmp / f"{kata.id}.log"
    if config.confined:
        sandbox.hand_over(records)
    cap = memory_cap.create() if config.confined else memory_cap.Cap(None, "none: unconfined")
    if node is not None:
        node["memory_cap"] = cap.how
    started = time.monotonic()
    try:
        code, timed_out = run_pytest(kata, copy, tmp / "run", record, log, config, cap)
        capped = cap.hit()
    finally:
        cap.remove()
    if node is not None:  # what it compiled itself, in its own cache: the trusted one missed
        node["own_compiles"] = _count(tmp / "run" / "cache" / "modules", "module.so")
    seconds = time.monotonic() - started
    events, cut = _events(record)
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
    cause += (cap.said() if capped else "") + (f"; {cut}" if cut else "")
    cause = cause.removeprefix("; ")
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
    "collected": {"tests": list},  # of TESTED, at most RECORD_TESTS
    "start": {"nodeid": str},
    "report": {"nodeid": str, "when": str, "outcome": str, "message": str, "perf": list},
    "finish": {"exitstatus": int},
}
#: The fields of each collected test, with their types.
TESTED: dict[str, type] = {"nodeid": str, "kata": str, "tasks": list, "backend": str}


def _count(folder: Path, name: str, most: int = 10_000) -> int:
    """The files called `name` under `folder` (the sandbox's: no link followed, at most
    `most` entries looked at)."""
    found = seen = 0
    for _, dirs, files in os.walk(folder):
        found += files.count(name)
        seen += len(dirs) + len(files)
        if seen > most:
            break
    return found


def _events(record: Path) -> tuple[list[dict[str, Any]], str]:
    """The record's events, and what stopped its reading ("" if nothing did); a line cut
    short by the run's death, or not one of EVENTS with its fields, is left out. The
    record is the sandbox's file: read as data, at most RECORD_BYTES and RECORD_LINES,
    a list of at most RECORD_TESTS tests, and not at all if it is not a regular file (a
    link, a FIFO)."""
    events: list[dict[str, Any]] = []
    try:
        data, whole = read_start(record, RECORD_BYTES)
    except FileNotFoundError:
        return events, ""
    except (OSError, Refused) as why:
        return events, f"the run's record {why}: not read"
    lines = data.decode(errors="replace").splitlines()
    cut = "" if whole else f"the run's record was read up to its first {RECORD_BYTES >> 20} MiB"
    if len(lines) > RECORD_LINES:
        lines, cut = (
            lines[:RECORD_LINES],
            f"the run's record was read up to its {RECORD_LINES:,}th line",
        )
    for line in lines:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # 200,000 '[' raised RecursionError
            continue
        fields = EVENTS.get(event.get("event")) if isinstance(event, dict) else None
        if fields is None or not _has(event, fields):
            continue
        if event["event"] == "report" and not (
            all(isinstance(figure, dict) for figure in event["perf"])
            and isinstance(event.get("output", ""), str)
        ):  # the figures and output the class's tables read (red team round 2)
            continue
        if event["event"] == "collected":
            if len(event["tests"]) > RECORD_TESTS:  # none of them kept
                said = f"the run's record lists {len(event['tests']):,} tests, over the "
                cut = "; ".join(filter(None, [cut, said + f"{RECORD_TESTS:,} read: not read"]))
                continue
            if not all(_has(test, TESTED) for test in event["tests"]):
                continue
        events.append(event)
    return events, cut


def _has(value: Any, fields: dict[str, type]) -> bool:
    """Whether `value` is a JSON object with each of `fields`, of its type."""
    return isinstance(value, dict) and all(isinstance(value.get(k), t) for k, t in fields.items())


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
        text = read_end(log, LOG_BYTES).decode(errors="replace")
    except (OSError, Refused):
        return ""
    fault = text.find("Fatal Python error")
    return text[fault : fault + OUTPUT_TAIL] if fault >= 0 else text[-OUTPUT_TAIL:]


def run_pytest(
    kata: Kata,
    copy: Path,
    run: Path,
    record: Path,
    log: Path,
    config: GradeConfig,
    cap: memory_cap.Cap | None = None,
) -> tuple[int | None, bool]:
    """pytest on one kata in the copy (under `run`, the sandbox's folder), writing its
    record to `record` (in a folder of its own): (exit code or -signal, whether it timed out).

    In a session of its own, so that a timeout stops it and every kernel it forked; and,
    where util-linux's setpriv is found, with SIGKILL as its parent-death signal, so that
    a worker killed mid-job does not leave its pytest running beside the next grade."""
    env, cwd, records = graded_env(), str(copy), record.parent
    trusted = trusted_cache([kata], config)[0]
    own, node_cache = run / "cache", str(trusted)
    if (
        config.confined
    ):  # the grading's folder (the copy, the record, its cache), read-only the node's
        grading = Path(sandbox.GRADING)
        cwd, record = str(grading / copy.relative_to(run)), Path(sandbox.RECORD) / record.name
        own, node_cache = grading / "cache", sandbox.CACHE
        read_only = [sandbox.GRADING, sandbox.CACHE, sandbox.RECORD]
        hidden = {"hide": [f"{cwd}/solutions"], "read_only": read_only}
        env[CONFINE_ENV] = json.dumps(hidden)
    env.update(
        {
            "XDG_CACHE_HOME": str(own),
            module_cache.DIR_ENV: str(own / "modules"),
            module_cache.TRUSTED_ENV: node_cache,
        }
    )
    command = [sys.executable, "-m", "pytest", f"katas/{kata.id}", "-q", "--no-header"]
    command += ["-p", "xtc_katas.grade.pytest_record", f"--grade-record={record}"]
    if config.backend:
        command.append(f"--backend={config.backend}")
    if config.confined:
        index = Path(f"{trusted}{module_cache.TRUSTED_INDEX}")
        bound = {trusted: sandbox.CACHE, index: sandbox.CACHE + module_cache.TRUSTED_INDEX}
        writable = {run: sandbox.GRADING, records: sandbox.RECORD}
        command = sandbox.wrap(command, cwd, writable, bound)
    command = cap.wrap(command) if cap is not None else command
    setpriv = shutil.which("setpriv")
    if setpriv:
        command = [setpriv, "--pdeathsig", "KILL", *command]
    with log.open("wb") as out:
        code = _run_in_group(command, copy, env, out, config.timeout)
    if code is None:
        return None, True
    if config.confined and code > 128:  # bwrap's for its command killed by a signal
        code = 128 - code
    return code, False
