"""The editor's side of the stub file: load it, save it back, notice edits from elsewhere.

The stub on disk is the one source of truth, read by the terminal loop and the notebook
alike, so both give the same verdicts. The notebook remembers the digest of what it
loaded and refuses to save over a file that changed since (another editor's save is
never silently overwritten) or text that does not parse (it would fail every test of
the kata); the previous version goes to the backups folder, as `xtc-katas reset` does.
The write is a rename of a temporary file: a watcher (`xtc-katas watch`) never reads half
a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.kata import stubs
from xtc_katas.kata.manifest import Kata


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Loaded:
    """The stub's text as the editor loaded (or last saved) it, and its digest then."""

    path: Path
    text: str
    digest: str


class SaveRefused(ValueError):
    """A save that would lose work or break the kata; the message says what to do."""


def load(kata: Kata, root: Path = ROOT) -> Loaded:
    path = kata.stub_path(root)
    data = path.read_bytes()
    return Loaded(path, data.decode(), digest(data))


def changed_on_disk(loaded: Loaded) -> bool:
    """True when the file is no longer what the editor loaded (another editor saved it,
    `reset` restored it, or it was deleted)."""
    try:
        return digest(loaded.path.read_bytes()) != loaded.digest
    except OSError:
        return True


def _changed(kata: Kata, path: Path, root: Path) -> SaveRefused:
    return SaveRefused(
        f"{kata.id}: not saved: {path.relative_to(root)} changed on disk since the "
        "notebook loaded it (another editor, `xtc-katas reset`, a git command). "
        "Press reload to see the file's version, then redo your edit; copy your "
        "text somewhere first if you want to keep it."
    )


def save(kata: Kata, loaded: Loaded, text: str, root: Path = ROOT) -> tuple[Loaded, Path | None]:
    """Write `text` to the stub: (what is now loaded, the backup of the previous version).
    SaveRefused, the file untouched, when `text` does not parse or the file changed."""
    path = kata.stub_path(root)
    try:
        compile(text, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        raise SaveRefused(
            f"{kata.id}: not saved: {path.name} has a syntax error at {where}. Fix it in "
            f"the editor and save again (the file on disk is unchanged).\n\n"
            f"SyntaxError: {exc.msg}\n    {(exc.text or '').rstrip()}"
        ) from exc
    if changed_on_disk(loaded):
        raise _changed(kata, path, root)
    if text == loaded.text:
        return loaded, None
    backup = stubs.backup_stub(kata, root)
    data = text.encode()
    fd, scratch = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(scratch, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        if changed_on_disk(loaded):  # again, just before: a save racing ours loses nothing
            raise _changed(kata, path, root)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise
    return Loaded(path, text, digest(data)), backup
