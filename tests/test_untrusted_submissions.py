"""A submission is untrusted data (grade/submissions.py, grade/untrusted_files.py): each
way the grader was made to read what it should not, or to read forever, refused with a
note naming the file and why, without a cluster (tests/test_grade_redteam.py grades
them through one).

Every case here was landed on main at 46a9953: the grader, as root, followed a stub's
link to the reference, graded another learner's repository through a `.git` file, read
/dev/zero and a FIFO until it died or forever, unpacked a zip bomb in memory, and wrote
one id's grades one folder above --out.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from tools import planted
from xtc_katas import ROOT
from xtc_katas.grade import class_report, grading_job, memory_cap, submissions
from xtc_katas.grade.submissions import Entry, read, unique_ids
from xtc_katas.grade.untrusted_files import Refused, read_beneath
from xtc_katas.kata.manifest import find

GRAPH = find(2)
STUB = f"katas/{GRAPH.id}/graph.py"


def folder(tmp_path: Path, name: str = "learner") -> Path:
    return planted.write(tmp_path / name, {GRAPH.id: planted.partly_solved(GRAPH)})


def refused_because(sub: submissions.Submission) -> str:
    assert STUB not in sub.files, "read, and should not have been"
    return sub.refused[STUB]


def git(repo: Path, *args: str) -> str:
    identity = ["-c", "user.name=learner", "-c", "user.email=learner@example.org"]
    done = subprocess.run(["git", "-C", str(repo), *identity, *args], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return done.stdout.strip()


def repository(tmp_path: Path, name: str, source: str) -> Path:
    repo = planted.write(tmp_path / name, {GRAPH.id: source})
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "mine")
    return repo


@pytest.mark.parametrize(
    "target", ["/proc/self/cwd/solutions/02_graph/graph.py", "SOLUTION", "/dev/zero"]
)
def test_a_stub_that_is_a_link_is_not_followed(tmp_path: Path, target: str) -> None:
    learner = folder(tmp_path)
    stub = learner / STUB
    stub.unlink()
    stub.symlink_to(str(GRAPH.solution_path(ROOT)) if target == "SOLUTION" else target)
    sub = read(str(learner), [GRAPH])
    why = refused_because(sub)
    assert why == f"{STUB} is a symbolic link, not a regular file: not read, not graded"
    assert why in sub.notes
    verdict, tests = grading_job.grade_kata(GRAPH, sub, tmp_path, grading_job.GradeConfig(
        katas=(GRAPH.id,)), tmp_path)  # fmt: skip
    assert verdict["verdict"] == "refused" and verdict["cause"] == why
    assert all(t["status"] == "error" and t["message"] == why for t in tests)
    assert grading_job.overall([verdict], sub, list(sub.notes))[0] == "error"


def test_a_kata_folder_that_is_a_link_is_not_entered(tmp_path: Path) -> None:
    learner = folder(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (learner / "katas" / GRAPH.id).rename(elsewhere)
    (learner / "katas" / GRAPH.id).symlink_to(elsewhere)
    assert "katas/02_graph is a symbolic link" in refused_because(read(str(learner), [GRAPH]))


def test_a_fifo_stub_is_refused_without_blocking(tmp_path: Path) -> None:
    learner = folder(tmp_path)
    (learner / STUB).unlink()
    os.mkfifo(learner / STUB)  # nobody writes it: an open without O_NONBLOCK blocks forever
    assert "is a FIFO (named pipe), not a regular file" in refused_because(
        read(str(learner), [GRAPH])
    )
    fifo = tmp_path / "alice.zip"
    os.mkfifo(fifo)
    assert "a FIFO (named pipe): neither a folder" in read(str(fifo), [GRAPH]).problem


def test_sizes_are_checked_before_reading(tmp_path: Path) -> None:
    learner = folder(tmp_path)
    with (learner / STUB).open("r+b") as stub:  # sparse: 1.5 GiB of size, no disk
        stub.truncate(3 << 29)
    assert "is 1536.0 MiB, over the 1.0 MiB a file may have" in refused_because(
        read(str(learner), [GRAPH])
    )
    test_file = learner / "katas" / GRAPH.id / "test_graph.py"
    test_file.symlink_to("/dev/zero")  # a kata's test file, compared with the suite's
    notes = read(str(learner), [GRAPH]).notes
    assert f"{STUB.rsplit('/', 1)[0]}/test_graph.py is a symbolic link" in " ".join(notes)


def test_a_zip_bomb_is_refused_by_its_declared_size(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(STUB, b"\0" * (64 << 20))  # 64 MiB in ~64 KiB
        link = zipfile.ZipInfo(f"katas/{GRAPH.id}/test_graph.py")
        link.external_attr = 0o120777 << 16  # stored as a symbolic link, as `zip -y` does
        archive.writestr(link, "/dev/zero")
    assert bomb.stat().st_size < 1 << 20
    sub = read(str(bomb), [GRAPH])
    assert "is 64.0 MiB, over the 1.0 MiB" in refused_because(sub)
    assert any("test_graph.py is stored as a symbolic link" in note for note in sub.notes)


def test_the_reader_stops_past_its_limit_and_never_follows_a_folder_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "f.py").write_bytes(b"x" * 10)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert read_beneath(tmp_path, "real/f.py", 10) == b"x" * 10
    with pytest.raises(Refused, match="is 10 bytes, over the 9 bytes"):
        read_beneath(tmp_path, "real/f.py", 9)
    with pytest.raises(Refused, match=r"^link is a symbolic link$"):
        read_beneath(tmp_path, "link/f.py", 10)
    with pytest.raises(Refused, match="not a path inside"):
        read_beneath(tmp_path / "real", "../real/f.py", 10)


def test_a_git_file_alternates_and_links_in_the_object_store_are_refused(tmp_path: Path) -> None:
    other = repository(tmp_path, "other", planted.partly_solved(GRAPH))
    stub = planted.partly_solved(GRAPH, set())
    pointer = tmp_path / "pointer"
    (pointer / "katas").mkdir(parents=True)
    (pointer / ".git").write_text(f"gitdir: {other / '.git'}\n")
    sub = read(str(pointer), [GRAPH])
    assert sub.files == {} and '.git is a file ("gitdir: ...")' in sub.problem
    borrower = repository(tmp_path, "borrower", stub)
    alternates = borrower / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{other / '.git' / 'objects'}\n")
    sub = read(str(borrower), [GRAPH])
    assert "objects/info/alternates names an object store outside" in sub.problem
    alternates.unlink()
    assert read(str(borrower), [GRAPH]).files[STUB] == stub.encode()  # its own again
    pack = borrower / ".git" / "objects" / "pack"
    pack.rmdir()
    pack.symlink_to(other / ".git" / "objects" / "pack")
    assert ".git/objects/pack is a symbolic link" in read(str(borrower), [GRAPH]).problem
    linked = repository(tmp_path, "linked", stub)
    (linked / STUB).unlink()
    (linked / STUB).symlink_to(GRAPH.solution_path(ROOT))
    git(linked, "commit", "-qam", "a link")
    assert "is a symbolic link" in refused_because(read(str(linked), [GRAPH]))


def test_a_failure_reading_one_submission_is_its_own_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    learner = folder(tmp_path)

    def exhausted(*args: object) -> None:
        raise MemoryError("zipfile's buffer")

    monkeypatch.setattr(submissions, "_collect", exhausted)
    sub = read(str(learner), [GRAPH])
    assert sub.problem == "could not be read (MemoryError: zipfile's buffer)"


def test_ids_that_are_not_names_are_refused_and_a_collision_is_named() -> None:
    dots, bob, bob_zip = Entry("subs/...zip"), Entry("subs/bob"), Entry("subs/bob.zip")
    chosen = unique_ids([dots, bob, bob_zip, Entry("subs/class.csv.zip")])
    assert [e.id for e in chosen] == ["submission", "bob", "bob-2", "submission-2"]
    assert "the id 'class.csv' (from subs/class.csv.zip) is refused" in chosen[3].notes[0]
    chosen = chosen[:3]
    assert chosen[0].notes[0] == "the id '..' (from subs/...zip) is refused: not a name"
    assert "2 submissions are 'submission' (subs/...zip, subs/class.csv.zip)" in chosen[0].notes[1]
    for entry in chosen[1:]:
        (note,) = entry.notes
        assert note.startswith("id collision: 2 submissions are 'bob' (subs/bob, subs/bob.zip)")
    assert chosen[2].notes[0].endswith("this one (subs/bob.zip) is bob-2")


def test_the_same_work_under_two_ids_is_flagged(tmp_path: Path) -> None:
    def doc(sub_id: str, digest: str, verdict: str) -> dict[str, object]:
        kata = {"kata": GRAPH.id, "verdict": verdict, "tasks_passed": 0, "tasks": {},
                "cause": ""}  # fmt: skip
        return {"id": sub_id, "name": sub_id, "status": "pass", "grading_status": "graded",
                "katas": [kata], "node": {}, "message": "", "submission_hash": digest,
                "tests": []}  # fmt: skip

    docs = [doc("ann", "a" * 64, "passed"), doc("ben", "a" * 64, "passed"),
            doc("cy", "b" * 64, "not attempted"), doc("di", "b" * 64, "not attempted")]  # fmt: skip
    flagged = class_report.flags(docs, {"ann": ("an id collision",)})
    assert flagged == {
        "ann": ["an id collision", "the same submission as ben (submission_hash aaaaaaaaaaaa)"],
        "ben": ["the same submission as ann (submission_hash aaaaaaaaaaaa)"],
    }  # the untouched stubs of cy and di are the same, and no one's work
    class_report.write_csv(tmp_path / "class.csv", docs, [GRAPH], flagged)
    assert "the same submission as ben" in (tmp_path / "class.csv").read_text()
    assert "the same submission as ann" in class_report.table(docs, [GRAPH], flagged)


def test_the_record_is_read_as_data_with_a_cap(tmp_path: Path) -> None:
    line = json.dumps({"event": "start", "nodeid": "katas/x::test"}) + "\n"
    record = tmp_path / "record.jsonl"
    record.write_text(line * 3)
    assert grading_job._events(record) == ([json.loads(line)] * 3, "")
    with record.open("r+b") as sparse:  # a 1 GiB record: 16 MiB of it read
        sparse.truncate(1 << 30)
    events, cut = grading_job._events(record)
    assert len(events) == 3 and cut == "the run's record was read up to its first 16 MiB"
    record.write_text(line * (grading_job.RECORD_LINES + 5))
    events, cut = grading_job._events(record)
    assert len(events) == grading_job.RECORD_LINES and "up to its 20,000th line" in cut
    record.unlink()
    record.symlink_to("/dev/zero")
    events, cut = grading_job._events(record)
    assert (
        events == [] and cut == "the run's record is a symbolic link, not a regular file: not read"
    )
    record.unlink()
    os.mkfifo(record)
    assert "a FIFO" in grading_job._events(record)[1]


def test_a_record_listing_more_tests_than_a_kata_has_is_not_kept_and_the_verdict_says_so(
    tmp_path: Path,
) -> None:
    """The outside red team's record bomb (issue 55): ~342,000 tests in one 16 MiB line
    took the grader to 3.1 GB, each kept in grading.json; a malformed test is no test."""
    test = {"nodeid": "katas/x::t", "kata": "", "tasks": [], "backend": ""}
    record = tmp_path / "record.jsonl"
    many = {"event": "collected", "tests": [test] * (grading_job.RECORD_TESTS + 1)}
    record.write_text(json.dumps(many) + "\n" + json.dumps({"event": "finish", "exitstatus": 0}))
    events, cut = grading_job._events(record)
    assert [e["event"] for e in events] == ["finish"]
    assert cut == "the run's record lists 2,001 tests, over the 2,000 read: not read"
    bad = {"event": "collected", "tests": [test, {"nodeid": 1}]}
    record.write_text(json.dumps(bad) + "\n")
    assert grading_job._events(record) == ([], "")
    fine = {"event": "collected", "tests": [test] * grading_job.RECORD_TESTS}
    record.write_text(json.dumps(fine) + "\n")
    assert grading_job._events(record) == ([fine], "")


def test_a_grading_has_a_total_memory_cap_where_the_node_allows_one() -> None:
    cap = memory_cap.create(256 << 20)
    if cap.path is None:
        pytest.skip(f"this node allows no cap: {cap.how}")
    try:
        command = cap.wrap(["python3", "-c", "held = bytearray(600 << 20)"])
        done = subprocess.run(command, capture_output=True, timeout=60)
        assert done.returncode == -9 and cap.hit(), (done, cap.how)
    finally:
        cap.remove()
    assert not cap.path.exists()


def test_a_record_line_nested_deep_or_with_figures_not_objects_is_left_out(tmp_path: Path):
    """The outside red team's round 2 wrote 200,000 '[' (RecursionError, which stopped the
    reading: a grader error at every run) and a figure that was a string (the whole class
    stopped in result_formats.speed): each such line is left out, the rest read."""
    from xtc_katas.grade import result_formats

    good = {"event": "report", "nodeid": "t", "when": "call", "outcome": "passed"}
    good |= {"message": "", "perf": [{"speedup": 2.0}]}
    lines = ["[" * 200_000, json.dumps({**good, "perf": ["not a figure"]})]
    lines += [json.dumps({**good, "output": 3}), json.dumps(good)]
    record = tmp_path / "record.jsonl"
    record.write_text("\n".join(lines) + "\n")
    assert grading_job._events(record) == ([good], "")
    figures = result_formats.speed([{"speedup": "9", "reference_speedup": 2.0, "over": 3}])
    assert figures is not None
    assert (figures["speedup"], figures["reference"], figures["over"]) == (None, 2.0, "naive")


def test_files_beside_a_stub_get_a_bounded_count_of_notes_and_too_many_refuse_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A note per unused file, at most MAX_NOTES and how many more; past MAX_NAMES files
    the submission is refused unread (outside red team, round 4: a million such files
    were a million notes, and a repository listing millions of paths took the grader to
    1.6 GB)."""
    kata = find(1)
    folder = planted.write(tmp_path / "sub", {kata.id: kata.stub_path(ROOT).read_text()})
    for n in range(40):
        (folder / "katas" / kata.id / f"extra{n}.py").write_text("x = 1\n")
    notes = read(str(folder), [kata]).notes
    assert len(notes) == submissions.MAX_NOTES + 1, notes
    assert notes[-1] == f"and {40 - submissions.MAX_NOTES} more such notes on katas/{kata.id}/"
    monkeypatch.setattr(submissions, "MAX_NAMES", 30)
    for source in (folder, _committed(folder)):
        sub = read(str(source), [kata])
        assert not sub.files and "it lists more than 30 files" in sub.problem, sub.problem


def _committed(folder: Path) -> Path:
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=a", "-c", "user.email=a@b",
                 "commit", "-qm", "mine"]):  # fmt: skip
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    return folder
