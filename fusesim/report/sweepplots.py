"""Plots of sweep results: speedup-vs-parameter lines and two-parameter heatmaps.

Two metrics answer the two questions a hardware sweep asks:
- `speedup`: target strategy over baseline on the same machine (e.g. dsm over unfused) — how much
  fusion is worth on that machine.
- `gain`: target strategy's time at a reference point (default: the first value of the x axis;
  or `reference={axis: value, ...}`) divided by its time at each point — how much the hardware
  change itself buys that strategy.
Axes that are neither plotted nor `fixed` are held at their first value (said in the title).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure

from fusesim.errors import InputError
from fusesim.report.figures import new_figure
from fusesim.sweep.store import read_rows


@dataclass
class SweepTable:
    columns: list[str]
    rows: list[dict[str, Any]]
    axes: list[str]  # the varied columns, in grid order

    def values(self, axis: str) -> list[Any]:
        seen: dict[str, Any] = {}
        for r in self.rows:
            seen.setdefault(repr(r.get(axis)), r.get(axis))
        vals = list(seen.values())
        try:
            return sorted(vals)
        except TypeError:
            return vals

    def cases(self) -> list[str]:
        """Case ids in natural order (C1, C2, ..., G1, G2, ..., G10): rows are in completion order."""
        return sorted(dict.fromkeys(str(r["case"]) for r in self.rows), key=natural_key)


def natural_key(text: str) -> tuple:
    """'G10' after 'G9': digit runs compare as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def load_sweep(path: str | Path) -> SweepTable:
    p = Path(path)
    if not p.is_file():
        raise InputError(str(path), None, "no such sweep results file")
    columns, rows = read_rows(p)
    if "hw_base" not in columns or "workload" not in columns:
        raise InputError(str(path), None, "not a fusesim sweep CSV (no hw_base/workload columns)")
    axes = columns[columns.index("hw_base") + 1:columns.index("workload")]
    return SweepTable(columns, rows, axes)


def time_column(table: SweepTable, time: str = "auto") -> str:
    if time != "auto":
        return time
    return "sim_time_us" if any(isinstance(r.get("sim_time_us"), int | float) for r in table.rows) \
        else "pred_time_us"


def _fixed(table: SweepTable, plotted: Sequence[str], fixed: dict[str, Any] | None) -> dict[str, Any]:
    out = {}
    for a in table.axes:
        if a in plotted:
            continue
        if fixed and a in fixed:
            out[a] = fixed[a]
        else:
            vals = table.values(a)
            out[a] = vals[0] if vals else None
    return out


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else None


def speedups(table: SweepTable, target: str = "dsm", baseline: str = "unfused", metric: str = "speedup",
             x: str | None = None, time: str = "auto", reference: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One record per (axes values, case): the metric value, or None where a side is missing."""
    tcol = time_column(table, time)
    times: dict[tuple[Any, ...], float | None] = {}
    for r in table.rows:
        key = (*[repr(r.get(a)) for a in table.axes], str(r["case"]), r.get("strategy"))
        times[key] = _num(r.get(tcol)) if r.get("status") == "ok" else None
    out = []
    x_ref = table.values(x)[0] if metric == "gain" and x else None
    seen = set()
    for r in table.rows:
        axes_key = tuple(repr(r.get(a)) for a in table.axes)
        k = (*axes_key, str(r["case"]))
        if k in seen:
            continue
        seen.add(k)
        t_target = times.get((*k, target))
        if metric == "gain":
            if x is None and not reference:
                raise ValueError("metric 'gain' needs the x axis or a reference point")
            ref = reference if reference else {x: x_ref}
            ref_key = tuple(repr(ref[a]) if a in ref else repr(r.get(a)) for a in table.axes)
            t_ref = times.get((*ref_key, str(r["case"]), target))
            value = t_ref / t_target if t_ref and t_target else None
        elif metric == "speedup":
            t_base = times.get((*k, baseline))
            value = t_base / t_target if t_base and t_target else None
        elif metric == "time":
            value = t_target
        else:
            raise ValueError(f"unknown metric {metric!r}")
        out.append({**{a: r.get(a) for a in table.axes}, "case": str(r["case"]), "value": value})
    return out


def _ylabel(metric: str, target: str, baseline: str, x: str | None, tcol: str, ref: str = "") -> str:
    src = "simulated" if tcol.startswith("sim") else "predicted"
    if metric == "speedup":
        return f"Speedup of {target} over {baseline} (x, {src})"
    if metric == "gain":
        return f"{target} speedup vs {ref or 'first ' + str(x)} (x, {src})"
    return f"{target} time (µs, {src})"


def _log2_axis(vals: Sequence[Any]) -> bool:
    nums = [v for v in vals if isinstance(v, int | float) and not isinstance(v, bool)]
    return len(nums) == len(vals) and len(nums) > 1 and min(nums) > 0 and max(nums) / min(nums) >= 4


def _fmt_fixed(fixed: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in fixed.items())


def plot_speedup_lines(table: SweepTable, x: str, target: str = "dsm", baseline: str = "unfused",
                       metric: str = "speedup", cases: Sequence[str] | None = None,
                       fixed: dict[str, Any] | None = None, time: str = "auto",
                       title: str | None = None, reference: dict[str, Any] | None = None) -> Figure:
    if x not in table.axes:
        raise InputError(None, "x", f"{x!r} is not a swept axis (axes: {', '.join(table.axes)})")
    hold = _fixed(table, [x], fixed)
    recs = [r for r in speedups(table, target, baseline, metric, x, time, reference)
            if all(repr(r[a]) == repr(v) for a, v in hold.items())]
    by_case: dict[str, list[tuple[Any, float]]] = defaultdict(list)
    for r in recs:
        if (not cases or r["case"] in cases) and r["value"] is not None:
            by_case[r["case"]].append((r[x], r["value"]))
    fig = new_figure(7.5, 4.5)
    ax = fig.add_subplot(1, 1, 1)
    xs = table.values(x)
    numeric = _log2_axis(xs)
    drawn = 0
    for case in (cases or table.cases()):
        pts = sorted(by_case.get(case, []), key=lambda p: xs.index(p[0]) if p[0] in xs else 0)
        if not pts:
            continue
        px = [p[0] if numeric else xs.index(p[0]) for p in pts]
        # ten colours, then the next line style: 26 paper cases stay tellable apart
        ax.plot(px, [p[1] for p in pts], marker="os^"[drawn // 10 % 3], ms=3, lw=1,
                ls=("-", "--", ":")[drawn // 10 % 3], color=f"C{drawn % 10}", label=case)
        drawn += 1
    if numeric:
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        crowded = any(b / a < 1.3 for a, b in zip(xs, xs[1:], strict=False))
        ax.set_xticklabels([f"{v:g}" for v in xs], rotation=45 if crowded else 0)
        ax.minorticks_off()
    else:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(v) for v in xs])
    ax.axhline(1.0, color="black", lw=0.6, ls=":")
    ax.set_xlabel(x)
    tcol = time_column(table, time)
    ax.set_ylabel(_ylabel(metric, target, baseline, x, tcol, _fmt_fixed(reference or {})))
    ax.set_title(title or (f"{metric} vs {x}" + (f" ({_fmt_fixed(hold)})" if hold else "")), fontsize=10)
    ax.grid(True, lw=0.3, alpha=0.5)
    if by_case:
        ax.legend(fontsize=7, ncol=2 if len(by_case) > 10 else 1, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def geomean(vals: Sequence[float]) -> float | None:
    vals = [v for v in vals if v and v > 0]
    return math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals else None


def plot_heatmap(table: SweepTable, x: str, y: str, target: str = "dsm", baseline: str = "unfused",
                 metric: str = "speedup", cases: Sequence[str] | None = None,
                 fixed: dict[str, Any] | None = None, time: str = "auto", title: str | None = None,
                 reference: dict[str, Any] | None = None) -> Figure:
    """Geometric mean over cases of the metric at each (x, y); cells annotated with their value."""
    for a, name in ((x, "x"), (y, "y")):
        if a not in table.axes:
            raise InputError(None, name, f"{a!r} is not a swept axis (axes: {', '.join(table.axes)})")
    hold = _fixed(table, [x, y], fixed)
    recs = [r for r in speedups(table, target, baseline, metric, x, time, reference)
            if all(repr(r[a]) == repr(v) for a, v in hold.items()) and (not cases or r["case"] in cases)]
    xs, ys = table.values(x), table.values(y)
    cell: dict[tuple[int, int], list[float]] = defaultdict(list)
    for r in recs:
        if r["value"] is not None and r[x] in xs and r[y] in ys:
            cell[(ys.index(r[y]), xs.index(r[x]))].append(r["value"])
    grid = [[geomean(cell.get((i, j), [])) for j in range(len(xs))] for i in range(len(ys))]
    data = [[v if v is not None else float("nan") for v in row] for row in grid]
    fig = new_figure(6.5, 4.8)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(data, origin="lower", aspect="auto", cmap="viridis")
    present = [v for row in grid for v in row if v is not None]
    mid = (min(present) + max(present)) / 2 if present else 0.0
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, "n/a" if v is None else f"{v:.2f}", ha="center", va="center", fontsize=8,
                    color="black" if v is not None and v > mid else "white")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([f"{v:g}" if isinstance(v, float) else str(v) for v in xs])
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([f"{v:g}" if isinstance(v, float) else str(v) for v in ys])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    tcol = time_column(table, time)
    cb = fig.colorbar(im, ax=ax)
    cb.set_label("geomean " + _ylabel(metric, target, baseline, x, tcol, _fmt_fixed(reference or {})), fontsize=8)
    n_cases = len({r["case"] for r in recs})
    ax.set_title(title or (f"{metric} over {n_cases} cases" + (f" ({_fmt_fixed(hold)})" if hold else "")),
                 fontsize=10)
    return fig


def plot_sweep(path: str | Path, x: str | None = None, y: str | None = None, target: str = "dsm",
               baseline: str = "unfused", metric: str = "speedup", time: str = "auto") -> Figure:
    """The default picture of a sweep CSV: a heatmap of the first two axes, else lines over the one.

    An explicit `x` without `y` draws lines over x (other axes held at their first value)."""
    table = load_sweep(path)
    if not table.axes:
        raise InputError(str(path), None, "the sweep varies nothing; nothing to plot against")
    ran = sorted({str(r.get("strategy")) for r in table.rows if r.get("status") == "ok"})
    wanted = [("--target", target)] + ([("--baseline", baseline)] if metric == "speedup" else [])
    for flag, strategy in wanted:  # an empty figure said nothing about why
        if strategy not in ran:
            raise InputError(str(path), flag, f"no ok rows of strategy {strategy!r} in this sweep "
                             f"(it has {', '.join(ran) or 'none'})")
    if x is None:  # nothing chosen: a heatmap of the first two axes when there are two
        x = table.axes[0]
        y = y or (table.axes[1] if len(table.axes) > 1 else None)
    if y:
        return plot_heatmap(table, x, y, target, baseline, metric, time=time)
    return plot_speedup_lines(table, x, target, baseline, metric, time=time)
