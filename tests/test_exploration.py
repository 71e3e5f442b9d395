"""The learner's view of a search: progress bar with the best so far, top-10 table, plot."""

from xtc_katas.cli import search_view


def fake_search():
    percents = [2.0, 0.0, 45.5, 96.0, 50.0] + [10.0 + n for n in range(10)]
    for index, percent in enumerate(percents):
        yield index, len(percents), f"candidate {index}", percent


def test_run_keeps_every_result_and_shows_the_best_so_far(capsys):
    results = search_view.run(fake_search(), description="06_explore mlir")
    assert [r.index for r in results] == list(range(15))
    progress = capsys.readouterr().err  # tqdm writes to stderr
    assert "best 96.0% of peak: candidate 3" in progress and "15/15" in progress


def test_top_table_ranks_ten_with_the_speedup_over_the_baseline():
    results = search_view.run(fake_search())
    table = search_view.top_table(results, baseline_percent=2.0).splitlines()
    assert len(table) == 2 + 10
    assert table[2] == "| 1 | candidate 3 | 96.00% | 48.0x |"
    assert "candidate 1 " not in "\n".join(table), "a broken candidate (0%) is not top-10"


def test_top_table_explains_a_figure_above_the_peak():
    from xtc_katas.cli.search_view import Result

    table = search_view.top_table([Result(0, "lucky", 104.0)], baseline_percent=2.0)
    assert "| 1 | lucky | 104.00% (*) | 52.0x |" in table
    assert "(*) above the probe's peak" in table


def test_plot_writes_a_png(tmp_path):
    results = search_view.run(fake_search())
    path = search_view.plot(results, 2.0, tmp_path / "sub" / "search.png", "a search")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_show_counts_packed_fmas_as_vector_and_scalar_ones_apart():
    # A scalar FMA works on an xmm register too: it was once counted as a vector FMA.
    from xtc_katas.cli.show import mark_fmas
    from xtc_katas.measure.machine_description import ASSEMBLY

    listing = "\tvfmadd231ps %zmm1,%zmm2,%zmm3\n\tvfmadd213ss (%r13),%xmm0,%xmm1\n"
    marked = mark_fmas(listing, ASSEMBLY["x86_64"])
    assert "1 vector FMA instructions in this listing: 1 on zmm; 1 scalar FMAs" in marked
    assert marked.splitlines()[1].endswith("%xmm1"), "a scalar FMA is not marked as vector"
    neon = "\tfmla\tv0.4s, v1.4s, v2.s[0]\n\tfmadd\ts0, s1, s2, s0\n"
    marked = mark_fmas(neon, ASSEMBLY["aarch64"])
    assert "1 vector FMA instructions in this listing: 1 on .4s; 1 scalar FMAs" in marked
