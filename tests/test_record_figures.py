"""What the record keeps of a figure: some are the learner's own return values (kata 03's
percent_of_peak_of, the searches' figures), which may be anything. The outside red team's
round 3 returned 7.25 million nested lists and made a 281 MB grading.json; the grading
through the real LocalCluster is tests/test_grade_redteam_outside3.py's."""

from xtc_katas.plugin.fixtures import FIGURE_ENTRIES, FIGURE_TEXT, _figure


def test_numbers_and_short_texts_are_kept_as_they_are():
    for figure in (None, True, 0, -3, 2.5, float("inf"), "silver", {"2x16 tile": 41.5}):
        assert _figure(figure) == figure


def test_anything_else_is_its_type_and_big_ones_are_cut():
    nested = []
    for _ in range(24):
        nested = [nested]
    assert _figure([nested] * 290_000) == "<list>"
    assert _figure(10**40) == "<int of 133 bits>"
    assert _figure(object()) == "<object>"
    assert _figure("x" * 10_000) == "x" * FIGURE_TEXT
    table = _figure({f"{n:04d}" + "x" * 1000: [n] for n in range(1000)})
    assert len(table) == FIGURE_ENTRIES
    assert all(len(name) <= FIGURE_TEXT and value == "<list>" for name, value in table.items())
    assert _figure({"a": {"b": 1.0}}) == {"a": "<dict>"}  # one table, no deeper
