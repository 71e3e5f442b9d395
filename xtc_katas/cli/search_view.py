"""What the measuring commands (explore, report, show) share, and the view of a search.

Katas 06 and 07 ask for generators of `(index, total, candidate, percent_of_peak)`.
`run` consumes one with a tqdm progress bar whose postfix is the best so far, then
`top_table` ranks the results against the baseline (the naive schedule's % of peak,
measured by the caller) and `plot` writes a PNG of every candidate's performance with
the baseline drawn across it. The numbers are the learner's: nothing here times a kernel.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xtc_katas.measure.timing import ABOVE_PEAK, format_percent
from xtc_katas.measure.workdir import Workdir


@contextlib.contextmanager
def scratch(command: str) -> Iterator[Workdir]:
    """A temporary directory to compile in, the working directory meanwhile (TVM writes
    ./tmpXXXX/ where it compiles): one Workdir for the run, so dump_files never repeat."""
    cwd = Path.cwd()
    with tempfile.TemporaryDirectory(prefix=f"xtc-katas-{command}-") as path:
        os.chdir(path)
        try:
            yield Workdir(Path(path))
        finally:
            os.chdir(cwd)


def print_peak() -> float:
    """The peak every % of peak divides by, printed with where it came from (and XTC's
    evaluate_flops when the two differ by more than 5%)."""
    from xtc_katas.measure import machine_peak

    peak = machine_peak.peak_fmas_per_s()
    print("\n".join(machine_peak.summary_lines()))
    return peak


@dataclass(frozen=True)
class Result:
    index: int
    candidate: str
    percent: float


def run(items: Iterable[tuple[int, int, Any, float]], description: str = "search") -> list[Result]:
    """Consume the generator with a progress bar showing the best candidate so far."""
    from tqdm import tqdm

    results: list[Result] = []
    with tqdm(desc=description, unit="candidate") as bar:
        for index, total, candidate, percent in items:
            bar.total = total
            results.append(Result(index, str(candidate), float(percent)))
            best = max(results, key=lambda r: r.percent)
            shown = format_percent(best.percent, 1, "above the probe's peak")
            bar.set_postfix_str(f"best {shown} of peak: {best.candidate}")
            bar.update(1)
    return results


def top_table(results: list[Result], baseline_percent: float) -> str:
    """The ten best candidates as a Markdown table, with their speedup over the baseline."""
    ranked = sorted(results, key=lambda r: r.percent, reverse=True)[:10]
    lines = [
        f"| rank | candidate | % of peak | vs baseline ({baseline_percent:.2f}%) |",
        "|---|---|---|---|",
    ]
    for rank, r in enumerate(ranked, 1):
        speedup = f"{r.percent / baseline_percent:.1f}x" if baseline_percent > 0 else "-"
        lines.append(
            f"| {rank} | {r.candidate} | {format_percent(r.percent, 2, '*')} | {speedup} |"
        )
    if any(r.percent > 100 for r in ranked):
        lines.append(f"\n(*) {ABOVE_PEAK}")
    return "\n".join(lines)


def figure(size: tuple[float, float] = (9, 4.5)) -> tuple[Any, Any]:
    """A matplotlib figure and its axes, drawn for a file: no display needed, none opened."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)


def save(fig: Any, ax: Any, path: Path, title: str, xlabel: str, ylabel: str) -> Path:
    """Label the axes, title and legend, write `fig` to `path` as a PNG, close it."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot(results: list[Result], baseline_percent: float, path: Path, title: str) -> Path:
    """A PNG: % of peak per candidate, in search order, with the baseline as a line."""
    fig, ax = figure()
    ax.bar([r.index for r in results], [r.percent for r in results], color="tab:blue")
    ax.axhline(baseline_percent, color="tab:red", linestyle="--", label="naive baseline")
    if results:
        best = max(results, key=lambda r: r.percent)
        ax.annotate(
            f"best: {best.candidate}",
            (best.index, best.percent),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
        )
    return save(fig, ax, path, title, "candidate (search order)", "% of peak")


def plot_convergence(curves: dict[str, list[list[float]]], path: Path, title: str) -> Path:
    """A PNG: best value so far per evaluation, the median over seeds as a line and the
    spread between the quartiles as a band, one colour per optimizer (kata 12)."""
    import numpy as np

    fig, ax = figure()
    for name, runs in curves.items():
        values = np.array(runs)
        trials = np.arange(1, values.shape[1] + 1)
        (line,) = ax.plot(trials, np.median(values, axis=0), label=f"{name} (median)")
        low, high = np.percentile(values, [25, 75], axis=0)
        ax.fill_between(trials, low, high, color=line.get_color(), alpha=0.2)
    ylabel = "best so far (cost model, 1.0 = its optimum)"
    return save(fig, ax, path, title, "evaluations (compiles)", ylabel)
