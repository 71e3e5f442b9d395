"""A learner's submission, read once on the instructor's machine: only its stub files.

A submission is a folder, a .zip or a git repository (read at a ref, HEAD by default),
holding the learner's copy of the suite: katas/NN_name/<module>.py somewhere inside
(at its top, or one or two folders down, as a zip of a checkout has it). Only the stub
files the manifest lists are taken; the grader sends them to a node, which grades them in
a clean copy of the instructor's suite. The learner's tests, conftest, solutions and
harness are never run. The few that are read, the graded katas' other .py files and the
top conftest.py, are compared with the suite's, so that a changed test file is reported
("graded with the suite's tests") instead of silently ignored.

A submission is untrusted data, read as such (docs/grading.md, the threat model): every
file through untrusted_files.py (a regular file only, no link followed, its size checked
before it is read: the zip's `file_size`, git's object size, `st_size`), a local
repository only if its objects are its own (no `.git` file pointing elsewhere, no
alternates, no link in its object store). What is refused is said in a note, and a
refused stub is that kata's verdict; whatever goes wrong reading one submission is its
own `problem`, never the class's.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import os
import re
import stat
import subprocess
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlparse

from xtc_katas import ROOT
from xtc_katas.grade.untrusted_files import Refused, kind, over, read_beneath, read_stream
from xtc_katas.kata.manifest import Kata, katas

#: A file bigger than this is not a stub: it is not read (a zip bomb, a data file).
MAX_FILE_BYTES = 1 << 20
#: A submission listing more files than this is refused, its listing stopped there: a
#: learner's copy of the suite holds hundreds. A repository of one tree named thousands of
#: times lists millions of paths, which the grader held in memory, outside any sandbox
#: (outside red team, round 4: 3,000,000 paths, the grader at 1.6 GB).
MAX_NAMES = 100_000
#: ... and so is one whose listing (git's) is longer than this: 4,000 paths of 200 KB each
#: (nested folders of long names, a 5 MB repository) took the grader to 1.6 GB (outside red
#: team, round 5). A copy of the suite lists under 100 KB.
MAX_LISTING_BYTES = 16 << 20
#: Notes on a kata's files the grade does not use, at most (then how many more there
#: are): a million files beside a stub were a million notes, a 62 MB class.csv.
MAX_NOTES = 10


def too_many() -> Refused:
    return Refused(f"refused: it lists more than {MAX_NAMES:,} files, or more than "
                   f"{MAX_LISTING_BYTES >> 20} MiB of paths (a copy of the suite lists hundreds "
                   "of files, under 100 KB): not read")  # fmt: skip


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
    #: Stub files found and not read ("katas/01_peak/peak.py" -> why: a link, a FIFO,
    #: too big): each one's kata is "refused", with this cause.
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def content_hash(self) -> str:
        """sha256 of what is graded: the stub files (and the problem, the refused, if any)."""
        digest = {path: hashlib.sha256(data).hexdigest() for path, data in self.files.items()}
        graded: dict[str, object] = {"files": digest, "problem": self.problem}
        if self.refused:
            graded["refused"] = self.refused
        text = json.dumps(graded, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


def stub_name(kata: Kata) -> str:
    """The stub's path inside any copy of the suite: katas/01_peak/peak.py."""
    return f"katas/{kata.id}/{kata.module}.py"


# -- where the files come from: (names relative to the source, a reader of one name) --

Listing = tuple[list[str], Callable[[str], bytes]]


def _entries(path: Path, relative: str) -> list[os.DirEntry[str]]:
    """What `path`/`relative` holds, but hidden names; [] if it is not a real folder."""
    where = path / relative if relative else path
    if relative and not stat.S_ISDIR(os.lstat(where).st_mode):
        return []
    with os.scandir(where) as found:
        entries = list(itertools.islice(found, MAX_NAMES + 1))
    if len(entries) > MAX_NAMES:
        raise too_many()
    return [e for e in entries if not e.name.startswith(".")]


def _folder(path: Path) -> Listing:
    """A folder: its katas/ trees at most two folders down (never a walk of a .venv). A
    link to a folder is never entered; a file of any type is listed, and read by
    untrusted_files, which refuses all but a regular file."""
    bases = [""]
    for depth in range(2):
        bases += [
            f"{base}{e.name}/"
            for base in bases
            if base.count("/") == depth
            for e in _entries(path, base)
            if e.is_dir(follow_symlinks=False)
        ]
    stubs = {kata.id: f"{kata.id}/{kata.module}.py" for kata in katas()}
    names = []
    for base in bases:
        if os.path.islink(path / base / "katas"):  # refused when read, with a note
            names += [f"{base}katas/{stub}" for stub in stubs.values()]
            continue
        if not os.path.isdir(path / base / "katas"):
            continue
        for kata in _entries(path, f"{base}katas"):
            if kata.is_symlink() and kata.name in stubs:
                names.append(f"{base}katas/{stubs[kata.name]}")
            elif kata.is_dir(follow_symlinks=False):
                inside = _entries(path, f"{base}katas/{kata.name}")
                names += [
                    f"{base}katas/{kata.name}/{f.name}" for f in inside if f.name[-3:] == ".py"
                ]
        if os.path.lexists(path / base / "conftest.py"):
            names.append(f"{base}conftest.py")
    if len(names) > MAX_NAMES:
        raise too_many()
    return sorted(names), lambda name: read_beneath(path, name, MAX_FILE_BYTES)


def _zip(path: Path) -> Listing:
    """A zip's members, each one's size checked before it is read (`file_size`) and its
    read stopped past the limit (a header that lied); a member stored as a link refused."""
    archive = zipfile.ZipFile(path)
    infos = {info.filename: info for info in archive.infolist() if not info.is_dir()}

    def member(name: str) -> bytes:
        info = infos[name]
        mode = info.external_attr >> 16
        if stat.S_IFMT(mode) and not stat.S_ISREG(mode):  # no type bits: a plain file
            raise Refused(f"is stored as {kind(mode)}, not a regular file")
        if info.file_size > MAX_FILE_BYTES:
            raise over(info.file_size, MAX_FILE_BYTES)
        with archive.open(info) as stream:
            return read_stream(stream, MAX_FILE_BYTES)

    return list(infos), member


#: A repository's URL: scheme://... or scp-like user@host:path.
URL = re.compile(r"^[\w+.-]+://|^[\w.-]+@[\w.-]+:")


def is_git(source: str) -> bool:
    """A URL, a path ending in .git, or a folder that holds a repository (a `.git`
    folder; a `.git` file or link too, to be refused when read)."""
    return (
        bool(URL.match(source)) or source.endswith(".git") or os.path.lexists(Path(source) / ".git")
    )


def local_repository(source: str) -> Path | None:
    """The folder of a repository given as a path or a file:// URL; None for a remote."""
    if source.startswith("file://"):
        return Path(urlparse(source).path)
    return None if URL.match(source) else Path(source)


def foreign_objects(folder: Path) -> str:
    """Why the repository at `folder` may hold objects that are not its own ("" if it
    does not): a `.git` file or link (`gitdir:` another repository), a `commondir`, an
    alternates file, or a link anywhere in its object store. Git would follow each one,
    and grade another learner's commit as this one's."""
    git_dir = folder / ".git"
    if os.path.lexists(git_dir):
        mode = os.lstat(git_dir).st_mode
        if stat.S_ISLNK(mode):
            return f".git is a symbolic link (to {os.readlink(git_dir)}): a repository elsewhere"
        if not stat.S_ISDIR(mode):
            return '.git is a file ("gitdir: ..."), naming a repository elsewhere'
    else:
        git_dir = folder  # a bare repository
    for name in ("commondir", "objects/info/alternates", "objects/info/http-alternates"):
        if os.path.lexists(git_dir / name):
            return f"its {name} names an object store outside the repository"
    objects = git_dir / "objects"
    if os.path.lexists(objects) and not stat.S_ISDIR(os.lstat(objects).st_mode):
        return "its objects folder is a link or a file: an object store outside the repository"
    for where, dirs, files in os.walk(objects):
        for name in dirs + files:
            if os.path.islink(os.path.join(where, name)):
                relative = os.path.relpath(os.path.join(where, name), folder)
                return f"{relative} is a symbolic link: an object store outside the repository"
    return ""


def _git(source: str, ref: str, scratch: Path) -> tuple[list[str], Callable[[str], bytes], str]:
    """A clone (no checkout, no hooks run) read at `ref` with git itself; and the commit.
    A local repository is cloned only if its objects are its own (foreign_objects). Each
    file's mode and size are git's (ls-tree --long) before it is read: a link or a
    submodule is refused, and so is a blob over the limit."""

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

    folder = local_repository(source)
    if folder is not None and (why := foreign_objects(folder)):
        raise Refused(f"refused: {why}")
    clone = scratch / "clone"
    git("clone", "--quiet", "--no-checkout", source, str(clone))
    if why := foreign_objects(clone):  # what a clone of a remote one brought along
        raise Refused(f"refused: {why}")
    blobs: dict[str, tuple[str, str, int]] = {}
    for line in _listed(clone, ref):
        if "\t" in line:
            meta, name = line.split("\t", 1)
            mode, _, oid, size = meta.split()
            blobs[name] = (mode, oid, int(size) if size.isdigit() else -1)

    def blob(name: str) -> bytes:
        mode, oid, size = blobs[name]
        if mode == "120000":
            raise Refused("is a symbolic link, not a regular file")
        if not mode.startswith("100"):
            raise Refused(f"is not a file (git's mode {mode}: a submodule)")
        if size > MAX_FILE_BYTES:
            raise over(size, MAX_FILE_BYTES)
        return git("-C", str(clone), "cat-file", "blob", oid)

    commit = git("-C", str(clone), "rev-parse", f"{ref}^{{commit}}").decode().strip()
    return list(blobs), blob, commit


def _listed(clone: Path, ref: str) -> list[str]:
    """git ls-tree's lines for `ref`, read as they come: past MAX_NAMES, git is stopped
    and the submission refused (never the whole listing in memory)."""
    command = ["git", "-c", "safe.directory=*", "-C", str(clone), "ls-tree", "-r", "-z",
               "--long", f"{ref}^{{commit}}"]  # fmt: skip
    with tempfile.TemporaryFile() as errors:
        git = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors)
        assert git.stdout is not None
        lines, left, read = [], b"", 0
        with git:
            while chunk := git.stdout.read(1 << 16):
                read += len(chunk)
                *done, left = (left + chunk).split(b"\0")
                lines += [line.decode(errors="replace") for line in done]
                if len(lines) > MAX_NAMES or read > MAX_LISTING_BYTES:
                    git.kill()
                    raise too_many()
        if git.returncode != 0:
            errors.seek(0)
            said = errors.read(4096).decode(errors="replace").strip().splitlines()
            raise OSError(f"git ls-tree: {said[-1] if said else git.returncode}")
    return lines


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
    source: str,
    graded: Sequence[Kata],
    ref: str = "",
    sub_id: str = "",
    name: str = "",
    notes: Sequence[str] = (),
) -> Submission:
    """The submission at `source` (folder, .zip or git repository at `ref`), with
    `notes` (what the grader says of it: an id that collided). Whatever goes wrong
    reading it is its `problem`, never an exception: the class is always graded."""
    sub_id = sub_id or default_id(source)
    name = name or sub_id
    nothing = Submission(sub_id, name, source, {}, tuple(notes))
    with tempfile.TemporaryDirectory(prefix="xtc-katas-submission-") as scratch:
        try:
            mode = os.stat(source).st_mode if not URL.match(source) else 0
            if is_git(source):
                names, reader, commit = _git(source, ref or "HEAD", Path(scratch))
                sub = _collect(nothing, names, reader, graded)
                return _uncommitted(sub, commit, ref or "HEAD", names, graded)
            elif stat.S_ISDIR(mode):
                names, reader = _folder(Path(source))
            elif not stat.S_ISREG(mode):
                return replace(nothing, problem=f"{kind(mode)}: neither a folder, a zip nor a "
                               "git repository")  # fmt: skip
            elif zipfile.is_zipfile(source):
                names, reader = _zip(Path(source))
            else:
                return replace(nothing, problem="neither a folder, a zip nor a git repository")
            return _collect(nothing, names, reader, graded)
        except FileNotFoundError:
            return replace(nothing, problem=f"not found: {source}")
        except Refused as why:
            return replace(nothing, problem=str(why))
        except (OSError, zipfile.BadZipFile, subprocess.TimeoutExpired) as exc:
            return replace(nothing, problem=f"could not be read: {exc}")
        except Exception as exc:  # MemoryError, RecursionError, a library's bug: its verdict
            return replace(nothing, problem=f"could not be read ({type(exc).__name__}: {exc})")


def _uncommitted(
    sub: Submission, commit: str, ref: str, names: list[str], graded: Sequence[Kata]
) -> Submission:
    """`sub` read from a local repository's commit, with a note naming the stub files
    whose working copy differs from that commit: changes not committed are not graded
    (the grade is the commit's, which the learner and the instructor can both point to).
    The working files are compared byte for byte: no git command runs in the learner's
    repository (its config could name a program for git to run)."""
    root = _root(names)
    folder = local_repository(sub.source)
    if folder is None or root is None or not folder.is_dir():
        return sub
    changed = []
    for kata in graded:
        stub = stub_name(kata)
        try:
            working = read_beneath(folder, root + stub, MAX_FILE_BYTES)
        except (OSError, Refused):
            continue  # no working copy to compare, or not one to read
        if working != sub.files.get(stub):
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
    sub: Submission, names: list[str], reader: Callable[[str], bytes], graded: Sequence[Kata]
) -> Submission:
    root = _root(names)
    if root is None:
        wanted = ", ".join(stub_name(k) for k in graded)
        return replace(
            sub, problem=f"no katas/ folder in it: nothing to grade (looked for {wanted})"
        )
    present = set(names)
    files: dict[str, bytes] = {}
    refused: dict[str, str] = {}
    notes: list[str] = list(sub.notes)
    for kata in graded:
        stub = stub_name(kata)
        if root + stub in present:
            try:
                files[stub] = reader(root + stub)
            except Refused as why:
                refused[stub] = f"{root + stub} {why}: not read, not graded"
                notes.append(refused[stub])
        others = [n[len(root) :] for n in names if n.startswith(f"{root}katas/{kata.id}/")]
        unused = _unused(sorted(set(others) - {stub}), root, reader)
        more = len(unused) - MAX_NOTES
        notes += unused[:MAX_NOTES] + (
            [f"and {more} more such notes on katas/{kata.id}/"] if more > 0 else []
        )
    if root + "conftest.py" in present:
        notes += _unused(["conftest.py"], root, reader)
    return replace(sub, files=files, notes=tuple(notes), refused=refused)


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
            continue
        try:
            theirs = reader(root + name)
        except Refused as why:
            notes.append(f"{root + name} {why}: not read (the suite's is graded)")
            continue
        if theirs != suite.read_bytes():
            notes.append(
                f"{name} differs from the suite's (edited, or an older copy): graded with "
                "the suite's"
            )
    return notes


#: Ids that are not names: a results folder named so is --out itself, its parent, or
#: one of the class's own files there (which the folder would stop being written).
NOT_IDS = {"", ".", "..", "class.csv", "class.html"}


def default_id(source: str) -> str:
    """alice.zip, ./alice/, git@host:alice/katas.git -> a name for its results folder."""
    last = re.split(r"[/:]", source.rstrip("/"))[-1] or "submission"
    for suffix in (".zip", ".git"):
        last = last.removesuffix(suffix)
    return re.sub(r"[^\w.-]", "_", last) or "submission"


@dataclass(frozen=True)
class Entry:
    """One submission to read: where it is, who it is from, and what the grader says of
    its id (a collision, a refused one)."""

    source: str
    id: str = ""
    name: str = ""
    notes: tuple[str, ...] = ()


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
    """Each entry with an id of its own: a second "alice" becomes "alice-2", and both
    say so (which is whose, the grader cannot know: the instructor is told). An id that
    is not a name (".", "..": a folder above --out; "class.csv") is refused: "submission"
    instead."""
    wanted = []
    for entry in entries:
        base = re.sub(r"[^\w.-]", "_", entry.id or default_id(entry.source))
        notes = entry.notes
        if base in NOT_IDS:
            notes += (f"the id {base!r} (from {entry.source}) is refused: not a name",)
            base = "submission"
        wanted.append((base, notes))
    sources: dict[str, list[str]] = defaultdict(list)
    for (base, _), entry in zip(wanted, entries, strict=True):
        sources[base].append(entry.source)
    seen: dict[str, int] = {}
    unique = []
    for (base, notes), entry in zip(wanted, entries, strict=True):
        seen[base] = seen.get(base, 0) + 1
        chosen = base if seen[base] == 1 else f"{base}-{seen[base]}"
        if len(sources[base]) > 1:
            ids = ", ".join([base] + [f"{base}-{n}" for n in range(2, len(sources[base]) + 1)])
            notes += (
                f"id collision: {len(sources[base])} submissions are {base!r} "
                f"({', '.join(sources[base])}), graded as {ids}: this one ({entry.source}) "
                f"is {chosen}",
            )
        unique.append(Entry(entry.source, chosen, entry.name or chosen, notes))
    return unique
