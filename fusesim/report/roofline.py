"""Hierarchical roofline: one machine's ceilings and every case's unfused and fused points.

Ceilings: tensor peak per instruction family (horizontal), and one bandwidth diagonal per memory
level — HBM, L2, and DSM (the per-SM push bandwidth of the best cluster size times the SM count,
i.e. all SMs exchanging at once). A kernel is drawn once per level at its intensity for that
level (FLOPs / bytes moved at that level) and its achieved FLOP/s; the points of one kernel share
a height and are joined by a thin line. Reading it: a point far right of the HBM ridge yet far
below the peak is not HBM-bound — look at its L2 or DSM point. Fusion moves the HBM point right
(the intermediate no longer goes through global memory) and adds a DSM point.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from fusesim.report.figures import color_of, new_figure

LEVEL_MARKERS = {"hbm": "o", "l2": "s", "dsm": "^"}
LEVEL_NAMES = {"hbm": "HBM", "l2": "L2", "dsm": "DSM"}


@dataclass(frozen=True)
class Ceilings:
    """Peak compute (TFLOP/s per instruction family) and bandwidths (GB/s) of one machine."""

    name: str
    tensor_tflops: dict[str, float]
    bandwidth_gbps: dict[str, float]  # level -> GB/s

    @classmethod
    def of(cls, hw: Any, dtype: str = "bf16") -> Ceilings:
        peaks = {fam: float(getattr(r, dtype)) for fam, r in hw.tensor_tflops.items()}
        bws = {"hbm": float(hw.hbm_bandwidth_gbps), "l2": float(hw.l2_bandwidth_gbps)}
        if hw.dsm_push_bandwidth_gbps_per_sm:
            bws["dsm"] = max(hw.dsm_push_bandwidth_gbps_per_sm.values()) * hw.sm_count
        return cls(hw.name, peaks, bws)

    def attainable_tflops(self, intensity_flop_per_byte: float, level: str = "hbm") -> float:
        return min(max(self.tensor_tflops.values()), intensity_flop_per_byte * self.bandwidth_gbps[level] / 1e3)


@dataclass
class RooflinePoint:
    case: str
    strategy: str
    source: str  # predicted | simulated | measured
    flops: float
    time_us: float
    bytes_by_level: dict[str, float] = field(default_factory=dict)

    @property
    def tflops(self) -> float:
        return self.flops / (self.time_us * 1e-6) / 1e12

    def intensity(self, level: str) -> float | None:
        b = self.bytes_by_level.get(level)
        return self.flops / b if b else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and v == v else None


def points_from_rows(rows: Iterable[dict[str, Any]], source: str = "predicted") -> list[RooflinePoint]:
    """Sweep/evaluate rows (status ok) to points; `source` picks planner or simulator numbers."""
    out = []
    for r in rows:
        if r.get("status") != "ok" or not _num(r.get("flops")):
            continue
        if source == "simulated":
            t = _num(r.get("sim_time_us"))
            levels = {
                "hbm": (_num(r.get("sim_hbm_read_bytes")) or 0) + (_num(r.get("sim_hbm_write_bytes")) or 0),
                "l2": (_num(r.get("sim_l2_read_bytes")) or 0) + (_num(r.get("sim_l2_write_bytes")) or 0),
                "dsm": _num(r.get("sim_dsm_bytes")) or 0,
            }
        else:
            t = _num(r.get("pred_time_us"))
            levels = {k: _num(r.get(f"pred_{k}_bytes")) or 0 for k in ("hbm", "l2", "dsm")}
        if not t:
            continue
        out.append(RooflinePoint(str(r["case"]), str(r.get("strategy")), source, float(r["flops"]), t,
                                 {k: v for k, v in levels.items() if v}))
    return out


def roofline_rows(workload: str | Path, hw: str | Path, cases: Sequence[str] | None = None,
                  strategies: Sequence[str] = ("unfused", "smem", "dsm"),
                  evaluator: str = "fusesim.sweep.evaluate:evaluate_case_simulated") -> list[dict[str, Any]]:
    """Plan and simulate every selected case on one machine (the sweep's evaluation, no grid); by
    default each strategy's plan is the one `fusesim simulate` runs (its fastest simulated candidate)."""
    from fusesim.sweep.evaluate import chain_of, run_task
    from fusesim.sweep.spec import HardwarePoint, Task, _resolve
    from fusesim.workload import load_workload

    wpath = _resolve(str(workload), "workloads", None, "<roofline>", "workload")
    hpath = _resolve(str(hw), "hw_configs", None, "<roofline>", "hw")
    wl = load_workload(wpath)
    ids = [c.case_id for c in wl.select(list(cases) if cases else None)]
    rows = []
    for cid in ids:
        chain_of(wpath, cid)
        task = Task(HardwarePoint(hpath), (), wpath, wl.name, cid, tuple(strategies),
                    tuple(f"{cid}/{s}" for s in strategies), evaluator)
        rows.extend(run_task(task))
    return rows


def measured_points(measured: Iterable[Any], predicted: Sequence[RooflinePoint]) -> list[RooflinePoint]:
    """Measured kernels as points; without measured bytes they borrow the prediction's (same case
    and strategy, else the case's unfused prediction for PyTorch baselines), so they still place."""
    by_key = {(p.case, p.strategy): p for p in predicted}
    out = []
    for m in measured:
        ref = by_key.get((m.case, m.strategy)) or by_key.get((m.case, "unfused"))
        flops = m.flops or (ref.flops if ref else None)
        if not flops:
            continue
        levels = dict(ref.bytes_by_level) if ref else {}
        for lvl, v in (("hbm", m.hbm_bytes), ("l2", m.l2_bytes), ("dsm", m.dsm_bytes)):
            if v:
                levels[lvl] = v
        if "hbm" not in levels:
            continue
        out.append(RooflinePoint(m.case, m.strategy, "measured", flops, m.time_us, levels))
    return out


def plot_roofline(ceilings: Ceilings, points: Sequence[RooflinePoint], title: str | None = None,
                  levels: Sequence[str] = ("hbm", "l2", "dsm"), annotate: bool = True) -> Figure:
    fig = new_figure(8.0, 5.5)
    ax = fig.add_subplot(1, 1, 1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = [p.intensity(lv) for p in points for lv in levels if p.intensity(lv)]
    ys = [p.tflops for p in points]
    peak = max(ceilings.tensor_tflops.values())
    x_lo = min([*xs, 1.0]) / 3
    x_hi = max([*xs, 4 * peak * 1e3 / min(ceilings.bandwidth_gbps.values())]) * 3
    y_lo = min([*ys, peak / 1e3]) / 3
    # ceilings
    for fam, tf in sorted(ceilings.tensor_tflops.items(), key=lambda kv: -kv[1]):
        ax.axhline(tf, color="black", lw=1.2 if tf == peak else 0.8, ls="-" if tf == peak else ":")
        ax.text(x_hi / 1.2, tf * 1.05, f"{fam} peak {tf:.0f} TFLOP/s", ha="right", va="bottom", fontsize=7)
    level_styles = {"hbm": "-", "l2": "--", "dsm": "-."}
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, peak * 2)
    diagonals = []
    for lvl in levels:
        bw = ceilings.bandwidth_gbps.get(lvl)
        if not bw:
            continue
        ridge = peak * 1e3 / bw
        ax.plot([x_lo, ridge], [x_lo * bw / 1e3, peak], color="dimgray", lw=1.0, ls=level_styles.get(lvl, "-"))
        diagonals.append((lvl, bw))
    # label each diagonal at its own height so near-equal bandwidths do not print on top of each other
    (x0, y0), (x1, y1) = ax.transData.transform([(1.0, 1.0), (10.0, 10.0)])
    angle = math.degrees(math.atan2(y1 - y0, x1 - x0))
    for i, (lvl, bw) in enumerate(sorted(diagonals, key=lambda d: -d[1])):
        y_txt = peak / (6.0 * 2.2 ** i)
        ax.text(y_txt * 1e3 / bw, y_txt, f"{LEVEL_NAMES.get(lvl, lvl)} {bw / 1e3:.1f} TB/s", fontsize=7,
                rotation=angle, rotation_mode="anchor", ha="right", va="bottom", color="dimgray")
    # points
    for p in points:
        pts = [(lvl, p.intensity(lvl)) for lvl in levels if p.intensity(lvl)]
        if not pts:
            continue
        col = color_of(p.strategy)
        if len(pts) > 1:
            ax.plot([x for _, x in pts], [p.tflops] * len(pts), color=col, lw=0.5, alpha=0.5)
        for lvl, x in pts:
            filled = p.source != "measured"
            ax.scatter([x], [p.tflops], marker=LEVEL_MARKERS.get(lvl, "o"), s=30 if filled else 55,
                       facecolors=col if filled else "none", edgecolors="black" if not filled else col,
                       linewidths=0.6 if filled else 1.2, alpha=0.85, zorder=3)
        if annotate and p.strategy in ("dsm", "best") and p.source != "measured" and "hbm" in dict(pts):
            ax.annotate(p.case, (dict(pts)["hbm"], p.tflops), fontsize=6, xytext=(3, 2),
                        textcoords="offset points")
    ax.set_xlabel("Arithmetic intensity (FLOP / byte at that level)")
    ax.set_ylabel("Performance (TFLOP/s)")
    ax.set_title(title or f"Hierarchical roofline on {ceilings.name}")
    ax.grid(True, which="major", lw=0.3, alpha=0.5)
    strategies = sorted({p.strategy for p in points})
    handles = [Line2D([], [], color=color_of(s), marker="o", ls="", label=s) for s in strategies]
    handles += [Line2D([], [], color="gray", marker=LEVEL_MARKERS[lv], ls="", label=f"{LEVEL_NAMES[lv]} intensity")
                for lv in levels if lv in LEVEL_MARKERS]
    if any(p.source == "measured" for p in points):
        handles.append(Line2D([], [], color="black", marker="o", markerfacecolor="none", ls="", label="measured"))
    ax.legend(handles=handles, fontsize=7, loc="lower right", ncol=2)
    return fig
