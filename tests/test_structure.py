"""The harness's shape, kept as drawn in README.md's layout: layers, no circle, shallow.

Packages by role, each importing only the ones below it:

    kata      what a kata is and where the learner stands (manifest, problems, failures)
    measure   build, run and time a kernel
    checks    judge a learner's code (shape, search, the one speed rule and its races)
    plugin    pytest's side           cli: the learner's command     tools: maintainers'
    notebook  the learner's loop in a marimo app (started by cli)

Read from the source (every `import`, function-level ones included; annotations-only
imports under `if TYPE_CHECKING:` left out, as Python never runs them).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from xtc_katas import ROOT

PACKAGE = ROOT / "xtc_katas"
MAX_LEVELS = 7

#: Which of the harness's packages each one may import (its own included).
ALLOWED = {
    "": {""},
    "kata": {"", "kata"},
    "measure": {"", "kata", "measure"},
    "checks": {"", "kata", "measure", "checks"},
    "plugin": {"", "kata", "measure", "checks", "plugin"},
    "cli": {"", "kata", "measure", "checks", "cli", "notebook"},
    # the notebook mode: shows what the cli's commands show, runs pytest in a subprocess;
    # its screenshot tool (maintainers') works in a repository copy (tools.repo_copy)
    "notebook": {"", "kata", "measure", "checks", "cli", "tools", "notebook"},
    "tools": {"", "kata", "measure", "checks", "tools"},
    "__main__": {"", "cli"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def runtime_imports(path: Path, modules: set[str]) -> set[str]:
    """The harness modules `path` imports when it runs."""
    tree = ast.parse(path.read_text())
    skipped = {
        id(child)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        for stmt in node.body
        for child in ast.walk(stmt)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                child = f"{node.module}.{alias.name}"
                found.add(child if child in modules else node.module)
    return {name for name in found if name in modules}


@functools.cache
def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: runtime_imports(p, set(paths)) - {name} for name, p in paths.items()}


def package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def levels(module: str, chain: tuple[str, ...] = ()) -> int:
    """1 for a module that imports no harness module; else 1 + its deepest import."""
    assert module not in chain, "import circle: " + " -> ".join((*chain, module))
    return 1 + max((levels(m, (*chain, module)) for m in graph()[module]), default=0)


def test_no_import_circle_and_at_most_seven_levels() -> None:
    deepest = max(graph(), key=levels)
    assert levels(deepest) <= MAX_LEVELS, f"{deepest} sits {levels(deepest)} levels deep"


def test_each_package_imports_only_the_layers_below_it() -> None:
    wrong = [
        f"{module} imports {imported}"
        for module, imports in sorted(graph().items())
        for imported in sorted(imports)
        if package(imported) not in ALLOWED[package(module)]
    ]
    assert not wrong, "\n".join(wrong)


def test_no_two_harness_modules_share_a_name() -> None:
    stems = [p.stem for p in PACKAGE.rglob("*.py") if p.stem not in ("__init__", "__main__")]
    assert len(stems) == len(set(stems)), sorted(s for s in stems if stems.count(s) > 1)


def test_the_checker_sees_a_circle_and_the_layers() -> None:
    """The structure tests above can fail: fed a graph with a circle, levels() refuses."""
    graph()["xtc_katas.kata.manifest"].add("xtc_katas.plugin.binding")
    try:
        try:
            levels("xtc_katas.plugin.binding")
        except AssertionError as exc:
            assert "import circle" in str(exc)
        else:
            raise AssertionError("levels() did not see the planted circle")
    finally:
        graph()["xtc_katas.kata.manifest"].discard("xtc_katas.plugin.binding")
    assert package("xtc_katas.plugin") not in ALLOWED["kata"]
