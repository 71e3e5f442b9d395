"""The code a lesson shows runs: every fenced block of the README and the lessons whose
language is `python` runs here against the installed XTC, and one marked `python partial`
(an excerpt: pseudocode, an interface, calls on a scheduler of other names) is parsed
(issue 48: kata 12's race snippet called race_against_random with an argument it does
not take, and only kata 04's and 05's examples were tested). Code goes in fences, each
with its language: an indented block would escape this test.

The words after `python` say what a block runs on:
- `sch=IxJxK`: `sch`, a fresh scheduler of that float32 matmul, and its `graph`, on each
  backend; the schedule it leaves must compile and compute right;
- `spec=IxJxK`: the block is a descript spec of that matmul, applied, compiled, checked;
- nothing: the block imports what it uses and runs as it is.
A `text` block right after one of the first two that starts with `loop` is the nest it
prints: `scheduler.get_loop_nest().root_node.pretty_print()` must print exactly that.
A word that names a shape check (`register_tile`: xtc_katas/checks/loop_nests.py's SHAPES)
says what the lesson calls the nest, and the check must accept it on every ISA: kata 05's
"register tile" was one the harness's own check rejected (teacher's report, main a678371).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt

from tools import lesson_blocks
from xtc_katas import ROOT
from xtc_katas.checks import loop_nests
from xtc_katas.checks.schedule import fresh_scheduler
from xtc_katas.kata.problems import Matmul
from xtc_katas.measure import numerics
from xtc_katas.measure.backends import KataBackend
from xtc_katas.measure.machine_description import NEON, X86
from xtc_katas.measure.workdir import Workdir

LESSONS = [ROOT / "README.md", *sorted(ROOT.glob("katas/*/README.md"))]
GIVEN = ("sch", "spec")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    info: list[str]
    code: str
    #: The `text` block that follows it, if it is a printed nest.
    nest: str | None = None

    def __str__(self) -> str:
        return f"{self.path.parent.name}:{self.line}"

    @property
    def given(self) -> tuple[str, Matmul] | None:
        for word in self.info[1:]:
            name, _, shape = word.partition("=")
            if name in GIVEN:
                return name, Matmul(*(int(n) for n in shape.split("x")))
        return None


def code_blocks(path: Path) -> tuple[list[Block], list[str]]:
    """The file's python blocks, and where code sits outside a fence with a language."""
    tokens = [t for t in MarkdownIt().parse(path.read_text()) if t.type in ("fence", "code_block")]
    blocks, unfenced = [], []
    for n, token in enumerate(tokens):
        line = token.map[0] + 1
        if token.type == "code_block" or not token.info.strip():
            unfenced.append(f"{path.relative_to(ROOT)}:{line}")
            continue
        info = token.info.split()
        if info[0] != "python":
            continue
        after = tokens[n + 1] if n + 1 < len(tokens) else None
        nest = None
        if after is not None and after.info.strip() == "text" and after.content.startswith("loop"):
            nest = after.content
        blocks.append(Block(path, line, info, token.content, nest))
    return blocks, unfenced


BLOCKS = [block for path in LESSONS for block in code_blocks(path)[0]]
SCHEDULED = [b for b in BLOCKS if b.given]
PLAIN = [b for b in BLOCKS if not b.given and "partial" not in b.info]
PARTIAL = [b for b in BLOCKS if "partial" in b.info]


def test_every_code_block_of_a_lesson_is_fenced_with_its_language():
    unfenced = [where for path in LESSONS for where in code_blocks(path)[1]]
    assert not unfenced, "fence these blocks and name their language (python, bash, text):\n" + (
        "\n".join(unfenced)
    )


@pytest.mark.parametrize("block", PARTIAL, ids=str)
def test_a_partial_block_parses(block):
    ast.parse(block.code, f"{block}")


def scheduled(block: Block, backend: KataBackend) -> tuple[Any, Any]:
    """A scheduled block on a fresh scheduler of its problem: its spec through descript,
    or its calls on `sch`. (impl, scheduler)."""
    from xtc.schedules.descript import descript_scheduler

    kind, problem = block.given
    impl, sch = fresh_scheduler(backend, problem)
    if kind == "spec":
        spec = ast.literal_eval(block.code)
        descript_scheduler(
            scheduler=sch, node_name=problem.scheduled_node, abstract_dims=problem.dims, spec=spec
        )
    else:
        exec(compile(block.code, str(block), "exec"), {"sch": sch, "graph": problem.graph()})
    return impl, sch


@pytest.mark.parametrize("block", SCHEDULED, ids=str)
def test_a_block_on_a_scheduler_compiles_computes_and_prints_its_nest(block, backend, tmp_path):
    problem = block.given[1]
    impl, sch = scheduled(block, backend)
    if block.nest is not None:
        printed = sch.get_loop_nest().root_node.pretty_print()
        assert printed.strip() == block.nest.strip(), printed
    module = Workdir(tmp_path).compile(impl, sch.schedule())
    numerics.assert_computes(module, problem, backend.name, ("random",))


@pytest.mark.parametrize(
    "block",
    [pytest.param(b, marks=[pytest.mark.slow] * ("race" in b.code)) for b in PLAIN],
    ids=str,
)
def test_a_plain_block_runs(block, monkeypatch):
    from xtc_katas.checks import optimizer_race

    # kata 12's snippet races on fewer seeds: the module's own are set back after it
    monkeypatch.setattr(optimizer_race, "SEEDS", optimizer_race.SEEDS)
    exec(compile(block.code, str(block), "exec"), {"__name__": "lesson"})


#: The ISAs a lesson's nest must fit: the lessons' AVX-512, and AVX2 and NEON learners'.
ISAS = {"avx2": dict(X86)["avx2"], "avx512": dict(X86)["avx512f"], "neon": NEON}


def lead_in(block: Block) -> str:
    """The paragraph right before the block: what the lesson calls it."""
    before = "\n".join(block.path.read_text().splitlines()[: block.line - 1]).rstrip()
    return " ".join(before.split("\n\n")[-1].split())


def shapes_named(block: Block) -> list[str]:
    return [word for word in block.info[1:] if word in loop_nests.SHAPES]


def test_a_nest_a_lesson_calls_a_register_tile_names_the_check():
    unmarked = [str(b) for b in SCHEDULED if "register tile" in lead_in(b) and not shapes_named(b)]
    assert not unmarked, f"add `register_tile` after the block's `python spec=...`: {unmarked}"


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("block", [b for b in SCHEDULED if shapes_named(b)], ids=str)
def test_a_nest_passes_the_shape_check_its_lesson_names(block, isa, monkeypatch):
    problem = block.given[1]
    _, sch = scheduled(block, KataBackend("mlir"))
    monkeypatch.setattr(loop_nests, "machine", lambda: ISAS[isa])
    mistakes = loop_nests.shape_mistakes(
        tuple(shapes_named(block)), sch.get_loop_nest(), problem, "mlir"
    )
    assert mistakes == [], f"{block} on {isa}: the harness's own check rejects it: {mistakes}"


def test_each_kind_of_block_is_found():
    assert SCHEDULED and PLAIN and PARTIAL, (SCHEDULED, PLAIN, PARTIAL)


# --- blocks generated from the code (tools/lesson_blocks.py) -------------------


def test_every_generated_block_is_what_the_code_generates_now():
    # The rule's numbers (speed_rule.py) and the reference's loop nests: a stale block is
    # named with its file and line.
    stale = [where for path in lesson_blocks.texts() for where in lesson_blocks.stale(path)[1]]
    assert not stale, (
        "stale generated blocks (`python -m tools.lesson_blocks` rewrites them):\n"
        + "\n".join(stale)
    )


def test_a_changed_rule_names_the_file_that_quotes_it(monkeypatch):
    from xtc_katas.checks import speed_rule

    readme = ROOT / "README.md"
    assert lesson_blocks.stale(readme)[1] == []
    monkeypatch.setattr(speed_rule, "RULE", speed_rule.RULE.replace("0.7", "0.8"))
    new, (where,) = lesson_blocks.stale(readme)
    assert where.startswith("README.md:") and where.endswith(": rule")
    assert speed_rule.RULE in new


def test_a_nest_that_no_longer_matches_the_code_names_its_lesson(monkeypatch):
    lesson = ROOT / "katas" / "10_gemm" / "README.md"
    monkeypatch.setitem(lesson_blocks.GENERATORS, "start", lambda *args: "```text\nloop i\n```\n")
    _, stale = lesson_blocks.stale(lesson)
    assert stale and stale[0].startswith("katas/10_gemm/README.md:")
    assert stale[0].endswith("start 10_gemm gemm_blocking tvm")


def normalized(nest: str) -> str:
    return "\n".join(line.rstrip() for line in nest.strip().splitlines())


def inline_nests() -> dict[str, str]:
    """Every loop nest a lesson prints: a `text` block that starts with `loop`."""
    return {
        f"{path.relative_to(ROOT)}:{token.map[0] + 1}": normalized(token.content)
        for path in LESSONS
        for token in MarkdownIt().parse(path.read_text())
        if token.type == "fence" and token.info.strip() == "text"
        if token.content.startswith("loop")
    }


@pytest.mark.parametrize("lanes", [16, 8])
def test_no_lesson_prints_the_nest_of_a_reference_solution(lanes):
    # Issue 50: an answer is shown only after a pass (`xtc-katas solution N`). A lesson's
    # nest is the one a task starts from, or the technique on another example.
    answers = {
        normalized(text): task for task, text in lesson_blocks.reference_nests(lanes).items()
    }
    shown = inline_nests()
    assert len(shown) >= 6, shown
    given = [f"{where}: {answers[nest]}" for where, nest in shown.items() if nest in answers]
    assert not given, "these lessons print a reference's nest (show another):\n" + "\n".join(given)


def test_a_reference_nest_in_a_lesson_is_found(monkeypatch):
    nests = inline_nests()
    assert "loop i\n  loop j\n    loop k\n      ..." in nests.values()
    planted = {"04_scheduling schedule_vectorize mlir": "loop i\n  loop j\n    loop k\n      ...\n"}
    monkeypatch.setattr(lesson_blocks, "reference_nests", lambda lanes: planted)
    with pytest.raises(AssertionError, match="04_scheduling schedule_vectorize mlir"):
        test_no_lesson_prints_the_nest_of_a_reference_solution(16)
