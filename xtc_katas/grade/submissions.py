"""A learner's submission, read once on the instructor's machine: only its stub files.

A submission is a folder, a .zip or a git repository (read at a ref, HEAD by default),
holding the learner's copy of the suite: katas/NN_name/<module>.py somewhere inside
(at its top, or one or two folders down, as a zip of a checkout has it). Only the stub
files the manifest lists are taken; the grader sends them to a node, which grades them in
a clean copy of the instructor's suite. The learner's tests, conftest, solutions and
harness are never run. The few that are read, the graded katas' other .py files and the
top conftest.py, are compared with the suite's, so that a changed test file is reported
("graded with the suite's tests") instead of silently ignored.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import subprocess
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.kata.manifest import Kata, katas

#: A file bigger than this is not a stub: it is not read (a zip bomb, a data file).
MAX_FILE_BYTES = 1 << 20


@dataclass(frozen=True)
class Submission:
    """What is sent to a node: the stub files found, and what the instructor should know."""

    id: str
    name: str
    source: str
    #: "katas/01_peak/peak.py" -> its bytes, for each graded kata whose stub was found.
    files: dict[str, bytes]
    #: Files read and not used (a changed test file, an added conftest), said in words.
    notes: tuple[str, ...] = ()
    #: Why nothing could be read (not found, a broken zip, no katas/ folder): the
    #: learner's verdict, not the grader's failure.
    problem: str = ""

    @property
    def content_hash(self) -> str:
        """sha256 of what is graded: the stub files (and the problem, if any)."""
        digest = {path: hashlib.sha256(data).hexdigest() for path, data in self.files.items()}
        text = json.dumps({"files": digest, "problem": self.problem}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def stub_name(kata: Kata) -> str:
    """The stub's path inside any copy of the suite: katas/01_peak/peak.py."""
    return f"katas/{kata.id}/{kata.module}.py"


# -- where the files come from: (names relative to the source, a reader of one name) --

Listing = tuple[list[str], Callable[[str], bytes]]


def _folder(path: Path) -> Listing:
    """A folder: its katas/ trees at most two folders down (never a walk of a .venv)."""
    names = []
    for depth in ("", "*/", "*/*/"):
        for found in path.glob(f"{depth}katas/*/*.py"):
            names.append(found.relative_to(path).as_posix())
        names += [p.relative_to(path).as_posix() for p in path.glob(f"{depth}conftest.py")]
    return names, lambda name: (path / name).read_bytes()


def _zip(path: Path) -> Listing:
    archive = zipfile.ZipFile(path)
    names = [info.filename for info in archive.infolist() if not info.is_dir()]
    return names, archive.read


def _git(source: str, ref: str, scratch: Path) -> tuple[list[str], Callable[[str], bytes], str]:
    """A clone (no checkout, no hooks run) read at `ref` with git itself; and the commit."""

    def git(*args: str) -> bytes:
        done = subprocess.run(
            ["git", "-c", "safe.directory=*", *args],
            capture_output=True,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0"},
            timeout=300,
        )
        if done.returncode != 0:
            lines = done.stderr.decode(errors="replace").strip().splitlines()
            raise OSError(f"git {args[0]}: {lines[-1] if lines else done.returncode}")
        return done.stdout

    clone = scratch / "clone"
    git("clone", "--quiet", "--no-checkout", source, str(clone))
    listed = git("-C", str(clone), "ls-tree", "-r", "-z", "--name-only", f"{ref}^{{commit}}")
    names = [name for name in listed.decode().split("\0") if name]
    commit = git("-C", str(clone), "rev-parse", f"{ref}^{{commit}}").decode().strip()
    return names, lambda name: git("-C", str(clone), "show", f"{ref}:{name}"), commit


#: A repository's URL: scheme://... or scp-like user@host:path.
URL = re.compile(r"^[\w+.-]+://|^[\w.-]+@[\w.-]+:")


def is_git(source: str) -> bool:
    """A URL, a path ending in .git, or a folder that holds a repository."""
    return bool(URL.match(source)) or source.endswith(".git") or (Path(source) / ".git").exists()


def _root(names: Sequence[str]) -> str | None:
    """The shortest prefix under which the suite's katas/ tree lies ("" at the top)."""
    known = {kata.id for kata in katas()}
    prefixes = [
        m.group(1)
        for name in names
        if (m := re.match(r"^(.*?)katas/([^/]+)/[^/]+$", name)) and m.group(2) in known
    ]
    return min(prefixes, key=len) if prefixes else None


def read(
    source: str, graded: Sequence[Kata], ref: str = "", sub_id: str = "", name: str = ""
) -> Submission:
    """The submission at `source` (folder, .zip or git repository at `ref`)."""
    sub_id = sub_id or default_id(source)
    name = name or sub_id
    with tempfile.TemporaryDirectory(prefix="xtc-katas-submission-") as scratch:
        try:
            if is_git(source):
                names, reader, commit = _git(source, ref or "HEAD", Path(scratch))
                sub = _collect(sub_id, name, source, names, reader, graded)
                return _uncommitted(sub, commit, ref or "HEAD", names, graded)
            elif Path(source).is_dir():
                names, reader = _folder(Path(source))
            elif zipfile.is_zipfile(source):
                names, reader = _zip(Path(source))
            elif Path(source).exists():
                return Submission(sub_id, name, source, {}, problem="neither a folder, a zip "
                                  "nor a git repository")  # fmt: skip
            else:
                return Submission(sub_id, name, source, {}, problem=f"not found: {source}")
            return _collect(sub_id, name, source, names, reader, graded)
        except (OSError, zipfile.BadZipFile, subprocess.TimeoutExpired) as exc:
            return Submission(sub_id, name, source, {}, problem=f"could not be read: {exc}")


def _uncommitted(
    sub: Submission, commit: str, ref: str, names: list[str], graded: Sequence[Kata]
) -> Submission:
    """`sub` read from a local repository's commit, with a note naming the stub files
    whose working copy differs from that commit: changes not committed are not graded
    (the grade is the commit's, which the learner and the instructor can both point to).
    The working files are compared byte for byte: no git command runs in the learner's
    repository (its config could name a program for git to run)."""
    root = _root(names)
    folder = Path(sub.source)
    if URL.match(sub.source) or root is None or not folder.is_dir():
        return sub
    changed = []
    for kata in graded:
        stub = stub_name(kata)
        working = folder / (root + stub)
        if working.is_file() and working.read_bytes()[:MAX_FILE_BYTES] != sub.files.get(stub):
            changed.append(root + stub)
    if not changed:
        return sub
    files = ", ".join(changed)
    if ref == "HEAD":
        note = f"graded commit {commit[:12]}; uncommitted changes to {files} were not graded"
    else:
        note = (
            f"graded commit {commit[:12]} ({ref}); the folder's {files} differ from it "
            "(changes after it, committed or not): not graded"
        )
    return replace(sub, notes=(*sub.notes, note))


def _collect(
    sub_id: str,
    name: str,
    source: str,
    names: list[str],
    reader: Callable[[str], bytes],
    graded: Sequence[Kata],
) -> Submission:
    root = _root(names)
    if root is None:
        wanted = ", ".join(stub_name(k) for k in graded)
        return Submission(
            sub_id, name, source, {}, problem=f"no katas/ folder in it: nothing to grade "
            f"(looked for {wanted})"
        )  # fmt: skip
    present = set(names)
    files: dict[str, bytes] = {}
    notes: list[str] = []
    for kata in graded:
        stub = stub_name(kata)
        if root + stub in present:
            files[stub] = reader(root + stub)[:MAX_FILE_BYTES]
        others = [n[len(root) :] for n in names if n.startswith(f"{root}katas/{kata.id}/")]
        notes += _unused(sorted(set(others) - {stub}), root, reader)
    if root + "conftest.py" in present:
        notes += _unused(["conftest.py"], root, reader)
    return Submission(sub_id, name, source, files, tuple(notes))


def _unused(names: list[str], root: str, reader: Callable[[str], bytes]) -> list[str]:
    """Notes on the learner's files that the grade does not use, where they differ from
    the suite's: the grade is the suite's tests' verdict, and the instructor is told."""
    notes = []
    for name in names:
        if not name.endswith(".py"):
            continue
        suite = ROOT / name
        if not suite.is_file():
            notes.append(f"{name} is not in the suite: ignored")
        elif reader(root + name) != suite.read_bytes():
            notes.append(
                f"{name} differs from the suite's (edited, or an older copy): graded with "
                "the suite's"
            )
    return notes


def default_id(source: str) -> str:
    """alice.zip, ./alice/, git@host:alice/katas.git -> a name for its results folder."""
    last = re.split(r"[/:]", source.rstrip("/"))[-1] or "submission"
    for suffix in (".zip", ".git"):
        last = last.removesuffix(suffix)
    return re.sub(r"[^\w.-]", "_", last) or "submission"


@dataclass(frozen=True)
class Entry:
    """One submission to read: where it is, and who it is from."""

    source: str
    id: str = ""
    name: str = ""


def roster(path: Path) -> list[Entry]:
    """A roster CSV with columns id, name, path (paths relative to the CSV's folder)."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    entries = []
    for number, row in enumerate(rows, start=2):
        if not row.get("id") or not row.get("path"):
            raise ValueError(f"{path}:{number}: a roster row needs an id and a path")
        where = row["path"] if URL.match(row["path"]) else str(path.parent / row["path"])
        entries.append(Entry(where, row["id"], row.get("name") or row["id"]))
    return entries


def unique_ids(entries: Sequence[Entry]) -> list[Entry]:
    """Each entry with an id of its own: a second "alice" becomes "alice-2"."""
    seen: dict[str, int] = {}
    unique = []
    for entry in entries:
        base = re.sub(r"[^\w.-]", "_", entry.id or default_id(entry.source))
        seen[base] = seen.get(base, 0) + 1
        chosen = base if seen[base] == 1 else f"{base}-{seen[base]}"
        unique.append(Entry(entry.source, chosen, entry.name or chosen))
    return unique
