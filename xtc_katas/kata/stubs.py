"""Recognise an untouched stub without running anything, and keep the learner's versions.

A stub function's body is a docstring and `raise NotImplementedError`. Spotting that from
the source lets a test fail at once with the friendly message, before it builds graphs,
imports a backend (1-2 s) or compiles a baseline (checks/learner.py): the red run of an
untouched kata stays near-instant. CI's --check-stubs run switches this off, so every test
really calls the stub and must fail because of it.
"""

from __future__ import annotations

import ast
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from xtc_katas import ROOT
from xtc_katas.kata.failures import KataFailure
from xtc_katas.kata.manifest import Kata


def is_stub_definition(node: ast.stmt) -> bool:
    """A function definition whose body is a docstring and `raise NotImplementedError`."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    if len(body) != 1 or not isinstance(body[0], ast.Raise) or body[0].exc is None:
        return False
    exc = body[0].exc
    target = exc.func if isinstance(exc, ast.Call) else exc
    return isinstance(target, ast.Name) and target.id == "NotImplementedError"


@dataclass(frozen=True)
class Loaded:
    """What the module's source defines at its top level (`functions`: every name it
    binds) and which of its functions are still the untouched stub: read without running
    it, so that a red run fails at once, before any process starts."""

    functions: frozenset[str]
    untouched: frozenset[str]

    @classmethod
    def read(cls, path: Path) -> Loaded:
        tree = ast.parse(path.read_text(), filename=str(path))  # a SyntaxError says where
        names, untouched = set(), set()
        for node in tree.body:  # in order: the last definition of a name is the one
            if isinstance(node, ast.FunctionDef):
                bound = {node.name}
            else:
                bound = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                bound |= {a.asname or a.name for a in getattr(node, "names", ())}
            names |= bound
            untouched -= bound
            if isinstance(node, ast.FunctionDef) and is_stub_definition(node):
                untouched.add(node.name)
        return cls(frozenset(names), frozenset(untouched))


def source_is_untouched(kata: Kata, source: str) -> bool:
    """Whether a version of the stub module's source has every task function untouched."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return False
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    return all(
        task.function in functions and is_stub_definition(functions[task.function])
        for task in kata.tasks
    )


def functions_checked_by(kata: Kata, test_name: str) -> list[str]:
    """The kata functions a test without a `task` marker checks: by contract, their
    names are in the test's name (the plugin binds each test once, at collection)."""
    named = [task.function for task in kata.tasks if task.function in test_name]
    # "schedule_conv" inside "schedule_conv_parallel" names the longer one only.
    return [f for f in named if not any(f != other and f in other for other in named)]


class FunctionMissing(KataFailure):
    """The learner's module lacks a function a test checks: renamed or deleted."""

    def __init__(self, kata: Kata, function: str) -> None:
        stub = kata.stub_path().relative_to(kata.stub_path().parents[2])
        super().__init__(
            f"{kata.id}: {stub} has no function {function}: renamed or deleted? The tests "
            f"call {function}() by that name (the stub's signature is in "
            f"solutions/{kata.id}/ once you pass, and in `git show HEAD:{stub}`).\n"
            f"  edit {stub}, then run: pytest katas/{kata.id}"
        )


def backup_stub(kata: Kata, root: Path = ROOT) -> Path | None:
    """Copy the kata's stub as it is now to the backups folder, where `reset` and the
    notebook's save keep the learner's previous versions; its path (None: no stub).

    One file per call, named by kata, module and second (a second save in the same second
    gets a suffix): whatever overwrites the stub next, the learner's version stays."""
    stub = kata.stub_path(root)
    if not stub.exists():
        return None
    folder = root / ".xtc-katas" / "backups"
    folder.mkdir(parents=True, exist_ok=True)
    base = f"{kata.id}-{stub.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    backup, count = folder / f"{base}.py", 1
    while True:  # "x": created here or not at all, so two saves never share a backup
        try:
            with backup.open("xb") as out, stub.open("rb") as source:
                shutil.copyfileobj(source, out)
            break
        except FileExistsError:
            count += 1
            backup = folder / f"{base}-{count}.py"
    shutil.copystat(stub, backup)
    return backup
