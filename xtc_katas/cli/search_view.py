"""Show a learner's search the way the tutorial does: a progress bar, a top-10, a plot.

Katas 06 and 07 ask for generators of `(index, total, candidate, percent_of_peak)`.
`run` consumes one with a tqdm progress bar whose postfix is the best so far, then
`top_table` ranks the results against the baseline (the naive schedule's % of peak,
measured by the caller) and `plot` writes a PNG of every candidate's performance with
the baseline drawn across it. Nothing here measures: the numbers are the learner's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xtc_katas.measure.timing import ABOVE_PEAK, format_percent


@dataclass(frozen=True)
class Result:
    index: int
    candidate: str
    percent: float


def run(items: Iterable[tuple[int, int, Any, float]], description: str = "search") -> list[Result]:
    """Consume the generator with a progress bar showing the best candidate so far."""
    from tqdm import tqdm

    results: list[Result] = []
    best: Result | None = None
    with tqdm(desc=description, unit="candidate") as bar:
        for index, total, candidate, percent in items:
            bar.total = total
            result = Result(index, str(candidate), float(percent))
            results.append(result)
            if best is None or result.percent > best.percent:
                best = result
            shown = format_percent(best.percent, 1, "above the probe's peak")
            bar.set_postfix_str(f"best {shown} of peak: {best.candidate}")
            bar.update(1)
    return results


def top_table(results: list[Result], baseline_percent: float, top: int = 10) -> str:
    """The best `top` candidates as a Markdown table, with their speedup over the baseline."""
    ranked = sorted(results, key=lambda r: r.percent, reverse=True)[:top]
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


def plot(results: list[Result], baseline_percent: float, path: Path, title: str) -> Path:
    """A PNG: % of peak per candidate, in search order, with the baseline as a line."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed, none opened
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.5))
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
    ax.set_xlabel("candidate (search order)")
    ax.set_ylabel("% of peak")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_convergence(curves: dict[str, list[list[float]]], path: Path, title: str) -> Path:
    """A PNG: best value so far per evaluation, the median over seeds as a line and the
    spread between the quartiles as a band, one colour per optimizer (kata 12)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(9, 4.5))
    for name, runs in curves.items():
        values = np.array(runs)
        trials = np.arange(1, values.shape[1] + 1)
        (line,) = ax.plot(trials, np.median(values, axis=0), label=f"{name} (median)")
        low, high = np.percentile(values, [25, 75], axis=0)
        ax.fill_between(trials, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xlabel("evaluations (compiles)")
    ax.set_ylabel("best so far (cost model, 1.0 = its optimum)")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
