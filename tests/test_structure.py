"""The harness's shape, kept as drawn in README.md's layout: layers, no circle, shallow.

Packages by floor, highest first, each importing only the floors below it:

    cli       the learner's commands and the instructor's `grade`
    notebook  the learner's loop in a marimo app     grade: a class graded on Dask
              (neither imports the other)
    plugin    pytest's side
    checks    judge a learner's code (shape, search, the one speed rule and its races)
    measure   build, run and time a kernel
    kata      what a kata is and where the learner stands (manifest, problems, progress)

The maintainers' tools/ sit outside the package, which never imports them (the wheel
does not ship them). The floors, that rule and "no circle" are import-linter's contracts
in pyproject.toml; what it
cannot say is checked here: how deep the imports go, and that no two modules share a
name. Every `import` counts, function-level ones included; those under
`if TYPE_CHECKING:` do not, as Python never runs them.
"""

from __future__ import annotations

import functools

import grimp
from importlinter.cli import lint_imports

from xtc_katas import ROOT

PACKAGE = ROOT / "xtc_katas"
MAX_LEVELS = 7


def test_the_import_contracts_are_kept() -> None:
    code = lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, "a contract of [tool.importlinter] is broken: see the output above"


@functools.cache
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("xtc_katas", exclude_type_checking_imports=True, cache_dir=None)


def levels(module: str, chain: tuple[str, ...] = ()) -> int:
    """1 for a module that imports no harness module; else 1 + its deepest import."""
    assert module not in chain, "import circle: " + " -> ".join((*chain, module))
    imported = graph().find_modules_directly_imported_by(module)
    return 1 + max((levels(m, (*chain, module)) for m in imported), default=0)


def test_at_most_seven_levels_of_imports() -> None:
    deepest = max(graph().modules, key=levels)
    assert levels(deepest) <= MAX_LEVELS, f"{deepest} sits {levels(deepest)} levels deep"


def test_no_two_harness_modules_share_a_name() -> None:
    stems = [p.stem for p in PACKAGE.rglob("*.py") if p.stem not in ("__init__", "__main__")]
    assert len(stems) == len(set(stems)), sorted(s for s in stems if stems.count(s) > 1)
