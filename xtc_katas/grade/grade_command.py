"""`xtc-katas grade`: grade a class's submissions, fairly, on Dask.

    xtc-katas grade submissions/*.zip --out grades --katas 1-4
    xtc-katas grade --roster class.csv --scheduler tls://head:8786 --tls-dir certs/grader

Each submission's stub files are graded on one node in a clean copy of the suite
(grading_job.py); its grading.json (the grader's record) and results.json (Exercism's or
Gradescope's shape) go to OUT/<id>/, and the class's class.csv and class.html to OUT/.
A run grades only what changed: a submission whose key (its content, the suite's commit,
the katas and backend) is that of its stored grade is not graded again, unless asked
(--only, --rerun-failed); a grader error is always graded again.

This module is imported by `xtc-katas`'s dispatcher: it imports nothing heavy until it
runs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

#: Where the command was started: `xtc-katas` works from the suite's root, and the
#: submissions, roster and --out given on the command line are read from here.
try:
    LAUNCH_DIR = Path.cwd()
except OSError:  # started in a directory since removed
    LAUNCH_DIR = Path("/")


def add_parser(sub: Any) -> None:
    from xtc_katas.grade.cluster import worker_command

    grade = sub.add_parser(
        "grade",
        help="grade a class's submissions (folders, zips, git repositories) on Dask",
        description="Grade a class's submissions, each in a clean copy of this suite, one "
        "per node at a time (speed verdicts are races on the node that grades them). "
        "Writes OUT/<id>/results.json, OUT/class.csv and OUT/class.html. How-to: "
        "docs/grading.md.",
        epilog="On a cluster: `xtc-katas cluster certs DIR NODE...`, `dask scheduler "
        "--tls-ca-file DIR/scheduler/ca.pem ...` on one machine, and on each grading node: "
        + worker_command("tls://HEAD:8786")
        + ". Exit codes: 0 graded (the learners' fails included), 1 some grader errors "
        "(run again to grade them), 2 a refused cluster, a machine that cannot confine the "
        "gradings (see --unconfined), or a usage error (a path that does not exist).",
    )
    grade.add_argument(
        "submissions", nargs="*", help="folders, .zip files or git repositories (URL or path)"
    )
    grade.add_argument("--out", default="grades", help="where results go (default: ./grades)")
    grade.add_argument(
        "--scheduler",
        default="",
        help="a Dask scheduler's address, e.g. tls://head:8786 (or $DASK_SCHEDULER_ADDRESS); "
        "default: one worker on this machine",
    )
    grade.add_argument(
        "--tls-dir",
        help="the grader's certificate for a tls:// scheduler: DIR/grader of `xtc-katas "
        "cluster certs DIR NODE...`",
    )
    grade.add_argument(
        "--insecure",
        action="store_true",
        help="grade on a scheduler reached without TLS (tcp://): anyone who can reach it "
        "could change any grade, and every result says so",
    )
    grade.add_argument("--katas", default="", help="e.g. 1-4 or 1,2,5 (default: every kata)")
    grade.add_argument("--format", choices=("exercism", "gradescope"), default="exercism")
    grade.add_argument("--roster", help="a CSV with columns id, name, path")
    grade.add_argument("--ref", default="", help="the git ref to grade (default: HEAD)")
    grade.add_argument(
        "--rerun-failed", action="store_true", help="grade again those that did not pass"
    )
    grade.add_argument(
        "--only", action="append", metavar="ID", help="grade this submission again (repeatable)"
    )
    grade.add_argument("--backend", choices=("mlir", "tvm"), help="one backend (default: both)")
    grade.add_argument(
        "--unconfined",
        action="store_true",
        help="grade without bubblewrap's confinement, where it cannot run: the learners' code "
        "then runs with your rights, and every result says so",
    )
    grade.set_defaults(func=main)


def parse_katas(text: str) -> list[Any]:
    """ "1-4", "1,2,5", "02_graph" -> the katas, in the manifest's order."""
    from xtc_katas.kata.manifest import find, katas

    if not text.strip():
        return list(katas())
    chosen = set()
    for part in text.split(","):
        ends = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", part)
        if ends:
            first, last = find(ends.group(1)).number, find(ends.group(2)).number
            chosen |= {k.id for k in katas() if first <= k.number <= last}
        else:
            chosen.add(find(part).id)
    return [k for k in katas() if k.id in chosen]


def job_key(content_hash: str, config: Any, insecure: bool = False) -> str:
    """What a grade depends on: the submission's content, the suite, katas and backend."""
    text = f"{content_hash}|{config.suite}|{','.join(config.katas)}|{config.backend}"
    text += "" if config.confined else "|unconfined"
    text += "|insecure" if insecure else ""
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def grader_error(sub: Any, error: BaseException, config: Any) -> dict[str, Any]:
    """The record of a submission the grader failed to grade: its every task "not graded"
    (never the learner's fail), with the error; graded again on the next run."""
    from xtc_katas.kata.manifest import find

    cause = f"{type(error).__name__}: {error}"
    node: dict[str, Any] = {}
    last = getattr(error, "last_worker", None)  # KilledWorker: the last worker that died
    if last is not None:
        node = {"worker": getattr(last, "address", str(last))}
    katas = []
    for kata_id in config.katas:
        kata = find(kata_id)
        tasks = {t.function: "not graded" for t in kata.tasks}
        katas.append(
            {
                "kata": kata.id,
                "verdict": "not graded",
                "cause": "the grader's error",
                "tasks": tasks,
                "tasks_passed": 0,
                "seconds": 0.0,
            }
        )
    return {
        "id": sub.id,
        "name": sub.name,
        "source": sub.source,
        "submission_hash": sub.content_hash,
        "suite_commit": config.suite,
        "grading_status": "grader error",
        "status": "error",
        "message": f"not graded: the grader failed, not the submission ({cause}); "
        "it is graded again on the next run",
        "notes": list(sub.notes),
        "katas": katas,
        "tests": [],
        "node": node,
        "config": {},
        "graded_at": 0.0,
        "seconds": 0.0,
    }


def needs_grading(stored: dict[str, Any] | None, key: str, rerun_failed: bool) -> bool:
    """Whether a submission is graded (again): no stored grade, or one made for another
    key (its content, the suite, the katas or the backend changed), or by a grader that
    failed; or, with --rerun-failed, one that did not pass."""
    return (
        stored is None
        or stored.get("key") != key
        or stored.get("grading_status") != "graded"
        or (rerun_failed and stored.get("status") != "pass")
    )


class Unconfinable(RuntimeError):
    """Grading would run the learners' code unconfined, and --unconfined was not given."""


@dataclass
class Outcome:
    """What a run did: the submissions it graded, those it kept, and the grader's errors."""

    graded: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    grader_errors: list[str] = field(default_factory=list)


def _stored(out: Path, sub_id: str) -> dict[str, Any] | None:
    try:
        return json.loads((out / sub_id / "grading.json").read_text())
    except (OSError, ValueError):
        return None


def write_results(out: Path, doc: dict[str, Any], fmt: str) -> None:
    """OUT/<id>/grading.json (the grader's record) and results.json (in `fmt`)."""
    from xtc_katas.grade.result_formats import render
    from xtc_katas.grade.submissions import NOT_IDS

    if doc["id"] in NOT_IDS or "/" in doc["id"]:  # never beside --out
        raise ValueError(f"{doc['id']!r} is not an id")
    folder = out / doc["id"]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "grading.json").write_text(json.dumps(doc, indent=1, default=str))
    (folder / "results.json").write_text(json.dumps(render(doc, fmt), indent=1, default=str))


def grade_class(
    entries: Sequence[Any],
    out: Path,
    katas: Sequence[Any],
    backend: str = "",
    scheduler: str = "",
    fmt: str = "exercism",
    ref: str = "",
    rerun_failed: bool = False,
    only: Sequence[str] = (),
    timeout: float | None = None,
    confined: bool = True,
    tls_dir: Path | None = None,
    insecure: bool = False,
) -> Outcome:
    """Grade the submissions `entries` (submissions.Entry) into `out`; see the module's
    docstring. `timeout`: seconds per kata (grading_job.KATA_TIMEOUT by default);
    `confined`: each kata's run in bubblewrap (grade/sandbox.py), refused where it cannot
    run (Unconfinable); `tls_dir`, `insecure`: how `scheduler` is reached (cluster.security)."""
    from tqdm import tqdm

    from xtc_katas.grade import class_report, cluster, grading_job, sandbox, submissions

    entries = submissions.unique_ids(entries)
    unknown = sorted(set(only) - {e.id for e in entries})
    if unknown:
        known = ", ".join(e.id for e in entries)
        raise LookupError(f"--only {', '.join(unknown)}: no such submission (they are: {known})")
    subs = [submissions.read(e.source, katas, ref, e.id, e.name, e.notes) for e in entries]
    config = grading_job.GradeConfig(
        katas=tuple(k.id for k in katas),
        backend=backend,
        suite=grading_job.suite_id(),
        timeout=timeout or grading_job.KATA_TIMEOUT,
        confined=confined,
    )
    outcome = Outcome()
    to_grade = []
    keys = {sub.id: job_key(sub.content_hash, config, insecure) for sub in subs}
    for sub in subs:
        key = keys[sub.id]
        if (sub.id in only) if only else needs_grading(_stored(out, sub.id), key, rerun_failed):
            # a nonce: a grade asked again is run again, never Dask's remembered one
            to_grade.append((f"grade-{sub.id}-{key[:16]}-{uuid.uuid4().hex[:8]}", sub))
        else:
            outcome.unchanged.append(sub.id)
    if to_grade and confined and (why := sandbox.unavailable()):
        raise Unconfinable(
            f"cannot confine the gradings on this machine: {why}. Install it (./run.sh "
            "does, as root), or grade with --unconfined: the learners' code then runs with "
            "your rights, and every result says so"
        )
    out.mkdir(parents=True, exist_ok=True)
    if to_grade:
        with cluster.connect(scheduler, tls_dir, insecure) as (client, scratch):
            slots = cluster.check(client)
            if scratch is not None:
                config = grading_job.GradeConfig(**{**vars(config), "scratch": str(scratch)})
            print(
                f"grading {len(to_grade)} of {len(subs)} submissions on {slots} node(s) "
                f"({len(outcome.unchanged)} unchanged), katas {', '.join(config.katas)}",
                file=sys.stderr,
                flush=True,
            )
            counts: Counter[str] = Counter()
            with tqdm(total=len(to_grade), unit="submission", file=sys.stderr) as bar:

                def done(sub: Any, doc: dict[str, Any]) -> None:
                    doc["key"] = keys[sub.id]
                    cluster.say_how_reached(doc, insecure)
                    write_results(out, doc, fmt)
                    graded = doc["grading_status"] == "graded"
                    (outcome.graded if graded else outcome.grader_errors).append(sub.id)
                    counts[doc["status"] if graded else "grader error"] += 1
                    bar.set_postfix_str(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
                    bar.update()

                job = partial(grading_job.grade, config=config)
                on_error = partial(grader_error, config=config)
                cluster.run(client, to_grade, slots, job, on_error, done)
    docs = [doc for sub in subs if (doc := _stored(out, sub.id)) is not None]
    for doc in docs:
        write_results(out, doc, fmt)
    flagged = class_report.flags(docs, {e.id: e.notes for e in entries})
    class_report.write_csv(out / "class.csv", docs, katas, flagged)
    class_report.write_html(out / "class.html", docs, katas, config.suite, flagged)
    return outcome


def _path(text: str) -> str:
    """A path given on the command line, read from where the command was started."""
    from xtc_katas.grade.submissions import URL

    return text if URL.match(text) else str(LAUNCH_DIR / text)


def main(args: argparse.Namespace) -> int:
    from xtc_katas.grade import submissions
    from xtc_katas.grade.cluster import Insecure, UnfairCluster

    entries = submissions.roster(Path(_path(args.roster))) if args.roster else []
    entries += [submissions.Entry(_path(s)) for s in args.submissions]
    if not entries:
        print("xtc-katas grade: no submission given (paths, or --roster)", file=sys.stderr)
        return 2
    missing = [e.source for e in entries if not submissions.URL.match(e.source)
               and not Path(e.source).exists()]  # fmt: skip
    if missing:
        print(f"xtc-katas grade: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    out = Path(_path(args.out))
    try:
        outcome = grade_class(
            entries,
            out,
            parse_katas(args.katas),
            backend=args.backend or "",
            scheduler=args.scheduler,
            fmt=args.format,
            ref=args.ref,
            rerun_failed=args.rerun_failed,
            only=args.only or (),
            confined=not args.unconfined,
            tls_dir=Path(_path(args.tls_dir)) if args.tls_dir else None,
            insecure=args.insecure,
        )
    except (UnfairCluster, Unconfinable, Insecure) as exc:
        print(f"xtc-katas grade: {exc}", file=sys.stderr)
        return 2
    print(
        f"{len(outcome.graded)} graded, {len(outcome.unchanged)} unchanged (not graded again), "
        f"{len(outcome.grader_errors)} grader errors: {out / 'class.html'}, "
        f"{out / 'class.csv'}, {out}/<id>/results.json"
    )
    if outcome.grader_errors:
        print(
            f"the grader failed on {', '.join(outcome.grader_errors)} (not the learners' "
            "fault): run the same command again to grade them",
            file=sys.stderr,
        )
    return 1 if outcome.grader_errors else 0
