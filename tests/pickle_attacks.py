"""Two planted submissions of issue 55: a learner's function that writes a pickle gadget
on its worker's pipe to the harness, in place of its answer. The harness of 46a9953
unpickled it (PlainUnpickler) and ran it; now it decodes a wire message (wire.py) and
refuses them. Each returns a stub of kata 04 whose `schedule_interchange` attacks,
`sentinel` the file the gadget would create in the harness; tests/test_wire.py runs them,
and a planted class of the grader can take them as they are.
"""

from __future__ import annotations

import pickle


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
