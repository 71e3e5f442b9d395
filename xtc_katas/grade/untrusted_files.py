"""Reading files someone else controls: a learner's submission, a sandbox's record and log.

One reader for all of them, so that no caller can forget a rule: a file is read only if
it is a regular file reached without following any symbolic link (each folder of its path
opened with O_NOFOLLOW beneath the root the caller trusts, the file itself too), its size
is checked before a byte is read (`st_size`), and the read itself stops past the limit (a
file that grows, a size that lied). A symbolic link, a FIFO (which would block the reader
forever), a device (/dev/zero never ends) or a socket is refused with `Refused`, whose
text says what the file was; the caller turns it into a note, never a crash.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import IO

#: What a non-regular file is, in words, by its type bits.
KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a folder",
}


class Refused(ValueError):
    """A file that is not read: not a regular file, reached through a link, or too big."""


def kind(mode: int) -> str:
    """A file's type, as a note names it."""
    return KINDS.get(stat.S_IFMT(mode), "not a regular file")


def size_text(size: int) -> str:
    return f"{size / (1 << 20):.1f} MiB" if size >= 1 << 20 else f"{size:,} bytes"


def over(size: int, limit: int) -> Refused:
    return Refused(f"is {size_text(size)}, over the {size_text(limit)} a file may have")


def read_stream(stream: IO[bytes], limit: int) -> bytes:
    """At most `limit` bytes of `stream`; Refused if it holds more."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"holds more than the {size_text(limit)} a file may have")
    return data


def _read_fd(fd: int, limit: int) -> bytes:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"is {kind(info.st_mode)}, not a regular file")
    if info.st_size > limit:
        raise over(info.st_size, limit)
    with os.fdopen(os.dup(fd), "rb") as stream:
        return read_stream(stream, limit)


def _open_no_follow(name: str, dir_fd: int | None, folder: bool) -> int:
    """`name` opened without following a link, and without blocking on a FIFO; a folder
    must be one. The type is checked with lstat first: a device is never opened."""
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if folder != stat.S_ISDIR(info.st_mode) or (not folder and not stat.S_ISREG(info.st_mode)):
        raise Refused(f"is {kind(info.st_mode)}" + ("" if folder else ", not a regular file"))
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    return os.open(name, flags | (os.O_DIRECTORY if folder else 0), dir_fd=dir_fd)


def read_beneath(root: Path, relative: str, limit: int) -> bytes:
    """The file at `relative` (a/b/c.py) under the folder `root` (the caller's, followed
    as given), each of its folders and itself opened without following a link; Refused
    naming the part that is a link, a FIFO, a device, or too big."""
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Refused("is not a path inside the submission")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            try:
                opened = _open_no_follow(part, fd, folder=not last)
            except Refused as why:
                where = "/".join(parts[: depth + 1])
                raise Refused(f"{where} {why}" if not last else str(why)) from None
            os.close(fd)
            fd = opened
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def read_end(path: Path, limit: int) -> bytes:
    """The last `limit` bytes of the regular file `path` (not followed if a link): the
    end of a log that may have grown to any size."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = _open_no_follow(path.name, folder, folder=False)
    finally:
        os.close(folder)
    try:
        size = os.fstat(fd).st_size
        os.lseek(fd, max(0, size - limit), os.SEEK_SET)
        with os.fdopen(os.dup(fd), "rb") as stream:
            return stream.read(limit)
    finally:
        os.close(fd)


def read_start(path: Path, limit: int) -> tuple[bytes, bool]:
    """The first `limit` bytes of the regular file `path` (not followed if a link), and
    whether they are all of it."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        fd = _open_no_follow(path.name, folder, folder=False)
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as stream:
        data = stream.read(limit + 1)
    return data[:limit], len(data) <= limit
