"""Two estimates of the same kernels side by side: error statistics and a log-log scatter.

Used for planner-vs-simulator (both predict the same Plan) and, when measured data exists,
prediction-vs-measurement. MAPE is relative to `reference` (the one believed closer to truth).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from matplotlib.figure import Figure

from fusesim.report.figures import color_of, new_figure


@dataclass(frozen=True)
class ErrorStats:
    n: int
    mape_pct: float
    pearson_r: float
    max_abs_pct: float
    median_ratio: float  # estimate / reference

    def line(self) -> str:
        return (f"n={self.n}  MAPE {self.mape_pct:.1f}%  Pearson r {self.pearson_r:.3f}  "
                f"max |err| {self.max_abs_pct:.0f}%  median estimate/reference {self.median_ratio:.2f}")


def error_stats(estimate: Sequence[float], reference: Sequence[float]) -> ErrorStats:
    pairs = [(e, r) for e, r in zip(estimate, reference, strict=True) if e and r and e > 0 and r > 0]
    if not pairs:
        return ErrorStats(0, math.nan, math.nan, math.nan, math.nan)
    errs = [abs(e - r) / r * 100 for e, r in pairs]
    ratios = sorted(e / r for e, r in pairs)
    n = len(pairs)
    if n > 1:
        me = sum(e for e, _ in pairs) / n
        mr = sum(r for _, r in pairs) / n
        cov = sum((e - me) * (r - mr) for e, r in pairs)
        var = math.sqrt(sum((e - me) ** 2 for e, _ in pairs) * sum((r - mr) ** 2 for _, r in pairs))
        pearson = cov / var if var else math.nan
    else:
        pearson = math.nan
    return ErrorStats(n, sum(errs) / n, pearson, max(errs), ratios[n // 2])


def plot_agreement(estimate: Sequence[float], reference: Sequence[float], labels: Sequence[str],
                   groups: Sequence[str], estimate_name: str, reference_name: str, unit: str = "µs",
                   title: str | None = None) -> Figure:
    """Log-log scatter, one colour per group (strategy), the y = x line and +-20% bands."""
    fig = new_figure(6.0, 5.5)
    ax = fig.add_subplot(1, 1, 1)
    vals = [v for v in (*estimate, *reference) if v and v > 0]
    lo, hi = (min(vals) / 1.5, max(vals) * 1.5) if vals else (1.0, 10.0)
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.plot([lo, hi], [lo * 1.2, hi * 1.2], color="gray", lw=0.5, ls=":")
    ax.plot([lo, hi], [lo / 1.2, hi / 1.2], color="gray", lw=0.5, ls=":")
    for g in dict.fromkeys(groups):
        xs = [r for r, gg in zip(reference, groups, strict=True) if gg == g]
        ys = [e for e, gg in zip(estimate, groups, strict=True) if gg == g]
        ax.scatter(xs, ys, s=22, color=color_of(g), label=g, alpha=0.85)
    for e, r, lab in zip(estimate, reference, labels, strict=True):
        if e and r and (e / r > 1.5 or r / e > 1.5):
            ax.annotate(lab, (r, e), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel(f"{reference_name} ({unit})")
    ax.set_ylabel(f"{estimate_name} ({unit})")
    stats = error_stats(estimate, reference)
    ax.set_title(title or f"{estimate_name} vs {reference_name}: MAPE {stats.mape_pct:.1f}%", fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    ax.grid(True, which="major", lw=0.3, alpha=0.5)
    return fig
