"""Lint of what a learner reads: the lessons and the README quote the manifest's caps, the
one bar rule, and only figures that stand in a table of the same file, captioned with the
machine, backend and problem they were measured on (issue 37: prose figures had drifted
from their own tables)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from xtc_katas import ROOT
from xtc_katas.checks.speed_rule import ABOVE_PREVIOUS, CLEARS, HEADROOM, PAYS, RULE
from xtc_katas.kata.manifest import katas

KATAS = katas()
IDS = [k.id for k in KATAS]
LESSONS = [ROOT / "README.md", *(k.folder() / "README.md" for k in KATAS)]

# --- figures in prose come from a table of the same file ----------------------------------

NUMBER = r"\d+(?:\.\d+)?"
RANGE = rf"{NUMBER}(?:\s?[–-]\s?{NUMBER})?"
#: A measured figure: "2.6–2.9×", "38x", "2%", "24.0 GFMA/s", "0.2 ms". "4×16" is a shape
#: (a digit follows the sign) and "2 × 4" arithmetic (a space before the sign).
FIGURE = re.compile(
    rf"(?<![\w.–-])({RANGE})(×|x(?![\w])|%|\s(?:GFMA/s|GFLOP/s|ms|µs|us|ns)\b)(?!\d)"
)
#: The speed rule's constants (speed_rule.py) and "100% of peak" are not measurements.
RULE_CONSTANTS = {f"{HEADROOM:g}", f"{ABOVE_PREVIOUS:g}", f"{CLEARS:.2f}", f"{PAYS:.2f}", "100"}
BACKENDS = re.compile(r"\b(MLIR|TVM|numpy)\b")
SHAPE = re.compile(r"\d+\s?[×x]\s?\d+\s?[×x]\s?\d+|\d+³")


def machines() -> list[str]:
    """The short names of docs/cpus.md's table: how the lessons name a machine."""
    lines = (ROOT / "docs" / "cpus.md").read_text().splitlines()
    rows = table_rows([line for line in lines if line.lstrip().startswith("|")])
    header, *body = rows
    column = next(n for n, cell in enumerate(header) if cell.lower() == "short name")
    return [row[column].strip("`* ") for row in body if len(row) > column]


def table_rows(lines: list[str]) -> list[list[str]]:
    """The cells of a markdown table's rows, its separator row left out."""
    rows = []
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not set("".join(cells)) <= set("-: "):
            rows.append(cells)
    return rows


def normal(figure: str) -> str:
    return re.sub(r"\s", "", figure).replace("-", "–")


@dataclass
class Table:
    caption: str
    header: list[str]
    cells: list[list[str]]

    def holds(self, figure: str) -> bool:
        token = re.compile(rf"(?<![\d.]){re.escape(figure)}(?![\d])")
        return any(token.search(normal(cell)) for row in self.cells for cell in row)

    def caption_mistakes(self, unit: str, names: list[str]) -> list[str]:
        said = " ".join([self.caption, *self.header])
        missing = []
        if not self.caption.startswith("Table:"):
            return ["a caption line 'Table: ...' right above it"]
        if not any(name in self.caption for name in names):
            missing.append("its machine (a short name of docs/cpus.md)")
        if unit in ("×", "x", "%"):
            if not BACKENDS.search(said):
                missing.append("its backend (MLIR, TVM or numpy)")
            if not SHAPE.search(said):
                missing.append("its problem shape (4×32×512, 512³...)")
        return missing


def split_lesson(text: str) -> tuple[list[tuple[int, str]], list[Table]]:
    """The lesson's prose lines (numbered) and its tables, fenced code left out."""
    prose, tables, fenced = [], [], False
    lines = text.splitlines()
    n = 0
    while n < len(lines):
        line = lines[n]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.lstrip().startswith("|"):
            start = n
            while n < len(lines) and lines[n].lstrip().startswith("|"):
                n += 1
            above = next((lines[m] for m in range(start - 1, -1, -1) if lines[m].strip()), "")
            header, *cells = table_rows(lines[start:n]) or [[]]
            tables.append(Table(above.strip(), header, cells))
            continue
        elif not fenced:
            prose.append((n + 1, line))
        n += 1
    return prose, tables


def figure_mistakes(text: str, exempt: set[str], names: list[str], where: str) -> list[str]:
    """Each prose figure that no table of the file holds, or whose table does not say
    where it was measured, with its line."""
    prose, tables = split_lesson(text)
    mistakes = []
    for number, line in prose:
        for found in FIGURE.finditer(line):
            figure, unit = normal(found.group(1)), found.group(2).strip()
            if figure in exempt:
                continue
            holding = [t for t in tables if t.holds(figure)]
            if not holding:
                mistakes.append(
                    f"{where}:{number}: {found.group(0).strip()!r} is in no table of this "
                    "file: quote figures from a table that names machine, backend and shape"
                )
                continue
            faults = [t.caption_mistakes(unit, names) for t in holding]
            if all(faults):
                mistakes.append(
                    f"{where}:{number}: the table holding {found.group(0).strip()!r} lacks "
                    + "; ".join(min(faults, key=len))
                )
    return mistakes


def exempt_of(path) -> set[str]:
    caps = {
        f"{value:g}"
        for kata in KATAS
        if path.parent == kata.folder()
        for task in kata.tasks
        for value in task.caps.values()
    }
    return RULE_CONSTANTS | caps


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.parent.name)
def test_every_figure_a_lesson_quotes_stands_in_its_tables(path):
    where = str(path.relative_to(ROOT))
    mistakes = figure_mistakes(path.read_text(), exempt_of(path), machines(), where)
    assert not mistakes, "\n".join(mistakes)


LESSON = """\
On MLIR the step gains 2.6–2.9× and reads 12% of peak; a 4×16 tile holds 2 × 4 = 8.

Table: speedup over naive, 4×32×512, MLIR, Zen 3.

| step | speedup |
|---|---|
| tile | 2.6–2.9 |
| peak | 12 |
"""


def test_a_figure_from_the_lessons_table_passes_and_one_that_drifted_is_named():
    assert figure_mistakes(LESSON, set(), ["Zen 3"], "L") == []
    drifted = LESSON.replace("gains 2.6–2.9×", "gains 2.6–3.0×")
    (mistake,) = figure_mistakes(drifted, set(), ["Zen 3"], "L")
    assert mistake.startswith("L:1: '2.6–3.0×' is in no table")


@pytest.mark.parametrize(
    "caption, missing",
    [
        ("Table: speedup over naive, 4×32×512, MLIR.", "its machine"),
        ("Table: speedup over naive, MLIR, Zen 3.", "its problem shape"),
        ("Table: speedup over naive, 4×32×512, Zen 3.", "its backend"),
        ("Speedup over naive, 4×32×512, MLIR, Zen 3.", "a caption line"),
    ],
)
def test_a_table_that_does_not_say_where_it_was_measured_is_named(caption, missing):
    text = LESSON.replace("Table: speedup over naive, 4×32×512, MLIR, Zen 3.", caption)
    mistakes = figure_mistakes(text, set(), ["Zen 3"], "L")
    assert mistakes and all(missing in m for m in mistakes), mistakes


def test_shapes_arithmetic_and_the_rules_constants_are_not_figures():
    text = f"A 4×16 tile, 2 × 4 = 8, a 4x32 tile; the bar is {HEADROOM}× the reference, "
    text += f"{CLEARS:.2f}× clear."
    assert figure_mistakes(text, RULE_CONSTANTS, ["Zen 3"], "L") == []
    assert [m.group(0) for m in FIGURE.finditer("38x naive, 24.0 GFMA/s, 0.2 ms, 4x16")] == [
        "38x",
        "24.0 GFMA/s",
        "0.2 ms",
    ]


def test_every_machine_has_a_short_name():
    names = machines()
    assert len(names) == len(set(names)) and all(names), names


# --- one bar rule -------------------------------------------------------------------------


def _words(text):
    return " ".join(text.replace("*", "").split())


def test_the_readme_the_lessons_and_the_code_state_one_bar_rule():
    # A learner read "cap 17, bar 18.3" while the README said the bar never exceeds the
    # cap (issue 22): every text that states the rule quotes speed_rule.RULE (the README
    # through a generated block: tests/test_lesson_code.py).
    rule = _words(RULE)
    texts = [ROOT / "README.md", *sorted((ROOT / "katas").glob("*/README.md"))]
    assert rule in _words(texts[0].read_text())
    for path in texts:
        text = _words(path.read_text())
        if f"{ABOVE_PREVIOUS:g}" in text:  # states the previous-step part of the rule
            assert rule in text, f"{path.relative_to(ROOT)}: quote speed_rule.RULE"


# --- caps quoted in a lesson are the manifest's --------------------------------------------


#: A lesson's table of caps: a header cell that says "cap", and which backends it quotes.
def lesson_cap_mistakes(kata, text, where="README.md"):
    """Caps quoted in a lesson's tables that differ from the manifest's, each with its
    line: a column whose header says "cap (MLIR / TVM)" holds "a / b"; one whose header
    says "TVM (cap)" holds "... (cap)". A row names its task, or its step's number (kata
    10's "1 blocking")."""
    import re

    mistakes = []
    header = None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        column = next((n for n, h in enumerate(header) if "cap" in h.lower()), None)
        if column is None or column >= len(cells):
            continue
        label = cells[0].strip("`* ")
        step = re.match(r"(\d+)\b", label)
        task = kata.task(label) or (
            kata.tasks[int(step.group(1)) - 1]
            if step and 0 < int(step.group(1)) <= len(kata.tasks)
            else None
        )
        if task is None:
            mistakes.append(f"{where}:{number}: the row {label!r} names no task of {kata.id}")
            continue
        title = header[column].lower()
        backends = [b for b in ("mlir", "tvm") if b in title]
        cell = cells[column]
        if "(cap)" in title:
            found = re.search(r"\(([^)]*)\)\s*$", cell)
            cell = found.group(1) if found else ""
        values = [float(v) for v in re.findall(r"\d+(?:\.\d+)?", cell)]
        caps = dict(task.caps)
        expected = [caps.get(b) for b in backends]
        if values != expected:
            mistakes.append(
                f"{where}:{number}: {task.function}'s cap is quoted as {cells[column]!r}; the "
                f"manifest ({kata.id} › {task.function}'s cap) has "
                + ", ".join(f"{b} = {c}" for b, c in zip(backends, expected, strict=True))
            )
    return mistakes


#: Caps quoted in a lesson's prose: "the caps 32× (MLIR) / 38× (TVM)", "the cap (TVM
#: 0.65×, MLIR 0.34×)", "the cap of 0.75" (the same on both backends).
CAP = r"(\d+(?:\.\d+)?)"
PROSE_CAPS = (
    (rf"\bcap\w*[^.|]*?{CAP}×\s+\(MLIR\)\s*/\s*{CAP}×\s+\(TVM\)", ("mlir", "tvm")),
    (rf"\bcap\w*[^.|]*?\(TVM\s+{CAP}×,\s+MLIR\s+{CAP}×\)", ("tvm", "mlir")),
    (rf"\bcap of {CAP}\b", ("mlir", "tvm")),
)


def lesson_prose_cap_mistakes(kata, text, where="README.md"):
    """Caps a lesson's sentences quote that are no task's of the kata, each with its line."""
    import re

    caps = [dict(task.caps) for task in kata.tasks if task.caps]
    mistakes = []
    for pattern, backends in PROSE_CAPS:
        for found in re.finditer(pattern, text):
            values = [float(v) for v in found.groups()]
            values += values * (len(backends) - len(values))  # "cap of X": both backends
            quoted = dict(zip(backends, values, strict=True))
            if not any(all(c.get(b) == v for b, v in quoted.items()) for c in caps):
                line = text.count("\n", 0, found.start()) + 1
                mistakes.append(
                    f"{where}:{line}: {' '.join(found.group(0).split())!r} quotes caps "
                    f"{quoted} that no task of {kata.id} has (katas/manifest.toml)"
                )
    return mistakes


@pytest.mark.parametrize("kata", KATAS, ids=IDS)
def test_caps_quoted_in_a_lesson_are_the_manifests(kata):
    path = kata.folder() / "README.md"
    text, where = path.read_text(), str(path.relative_to(ROOT))
    mistakes = lesson_cap_mistakes(kata, text, where) + lesson_prose_cap_mistakes(kata, text, where)
    assert not mistakes, "\n".join(mistakes)


#: A made-up lesson of kata 04 that quotes its caps right, in the forms the lint reads.
CAPS_04 = """\
| task | cap (MLIR / TVM) |
|---|---|
| schedule_split | 15 / 17 |

The register tile's caps 32× (MLIR) / 38× (TVM) keep a fast machine from asking more.
"""


@pytest.mark.parametrize(
    "quoted, typo",
    [
        ("caps 32× (MLIR) / 38× (TVM)", "caps 32× (MLIR) / 39× (TVM)"),
        ("The register tile's caps", "The register tile's cap of 33. Its caps"),
    ],
    ids=["pair", "cap of"],
)
def test_a_cap_quoted_in_a_lessons_prose_that_differs_is_named(quoted, typo):
    kata = KATAS[3]
    assert not lesson_prose_cap_mistakes(kata, CAPS_04)
    (mistake,) = lesson_prose_cap_mistakes(kata, CAPS_04.replace(quoted, typo, 1))
    assert mistake.startswith("README.md:5: ") and "no task of" in mistake


def test_a_lesson_cap_that_differs_from_the_manifest_is_named_with_its_line():
    kata = KATAS[3]
    assert not lesson_cap_mistakes(kata, CAPS_04)
    text = CAPS_04.replace("| schedule_split | 15 / 17 |", "| schedule_split | 15 / 18 |")
    (mistake,) = lesson_cap_mistakes(kata, text)
    assert mistake.startswith("README.md:3: schedule_split's cap is quoted as '15 / 18'")
    assert "mlir = 15, tvm = 17" in mistake


# --- one machine's story per lesson, in at most 1,650 words (issue 48) -------------------

KATA_LESSONS = [k.folder() / "README.md" for k in KATAS]
MOST_WORDS = 1650


def machine_mistakes(text: str, names: list[str], where: str) -> list[str]:
    """A lesson names one machine in its header (above its first section) and takes its
    tables from it; another machine appears only in a paragraph naming both (a contrast)."""
    header = text.split("\n## ", 1)[0]
    named = [n for n in names if n in header]
    if len(named) != 1:
        return [f"{where}: its header names {named or 'no machine'}: name one of docs/cpus.md"]
    (machine,) = named
    mistakes = []
    for paragraph in re.split(r"\n\s*\n", text):
        others = [n for n in names if n != machine and n in paragraph]
        line = text.count("\n", 0, text.find(paragraph)) + 1
        if others and machine not in paragraph:
            mistakes.append(
                f"{where}:{line}: {', '.join(others)} in a lesson told on {machine}: move it to "
                "docs/calibration/, or name both where the contrast is the point"
            )
        if paragraph.lstrip().startswith("Table:") and machine not in paragraph.split("\n")[0]:
            mistakes.append(f"{where}:{line}: a table not measured on {machine}")
    return mistakes


@pytest.mark.parametrize("path", KATA_LESSONS, ids=lambda p: p.parent.name)
def test_a_lesson_tells_one_machines_story_in_at_most_1650_words(path):
    text, where = path.read_text(), str(path.relative_to(ROOT))
    mistakes = machine_mistakes(text, machines(), where)
    words = len(text.split())
    if words > MOST_WORDS:
        mistakes.append(f"{where}: {words} words, more than {MOST_WORDS}: cut")
    assert not mistakes, "\n".join(mistakes)


def test_another_machine_without_its_contrast_is_named():
    lesson = "# Kata\n\nThe reference machine: Zen 5.\n\n## The idea\n\nOn Zen 3 it spills.\n"
    (mistake,) = machine_mistakes(lesson, ["Zen 3", "Zen 5"], "L")
    assert mistake.startswith("L:7: Zen 3 in a lesson told on Zen 5")
    assert (
        machine_mistakes(
            lesson.replace("On Zen 3", "On Zen 3, not Zen 5,"), ["Zen 3", "Zen 5"], "L"
        )
        == []
    )
