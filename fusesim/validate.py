"""Predicted vs measured: join each measured kernel with the simulation of the same plan.

No fitted correction is applied: the simulator's parameters come from the hardware file
(calibrated by microbenchmarks), so every measured kernel is a held-out score, none is used for
fitting. Metrics: latency MAPE, Pearson r, within-case Spearman rank correlation, per-counter
error (DRAM read/write, L2, DSM bytes from Nsight Compute where recorded), and whether the
predicted-best plan of each case is the measured-best (and how much it loses when not).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusesim.errors import InputError
from fusesim.hardware import Hardware
from fusesim.plan import Plan

# measured ncu counter name -> simulator byte key(s) summed
COUNTERS = {
    "dram_read": ("dram__bytes_read.sum", ("hbm_read",)),
    "dram_write": ("dram__bytes_write.sum", ("hbm_write",)),
    "l2": ("lts__t_bytes.sum", ("l2_read", "l2_write")),
    "dsm": ("l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum", ("dsm",)),
}


@dataclass
class Row:
    case: str
    label: str  # strategy / plan rank
    measured_us: float
    predicted_us: float
    measured_bytes: dict[str, float] = field(default_factory=dict)
    predicted_bytes: dict[str, float] = field(default_factory=dict)
    source: str = ""

    @property
    def error(self) -> float:
        return (self.predicted_us - self.measured_us) / self.measured_us


def _find_plan(rec: dict[str, Any]) -> dict[str, Any] | None:
    for key in ("plan", "plan_dict"):
        if isinstance(rec.get(key), dict):
            return rec[key]
    return None


def _measured_time_us(rec: dict[str, Any]) -> float | None:
    for key in ("time_us", "median_us", "kernel_us", "measured_us"):
        v = rec.get(key)
        if isinstance(v, int | float) and v > 0:
            return float(v)
    t = rec.get("timing")
    if isinstance(t, dict):
        return _measured_time_us(t)
    return None


def _measured_counters(rec: dict[str, Any]) -> dict[str, float]:
    ncu = rec.get("ncu") or {}
    out: dict[str, float] = {}
    for name, (metric, _) in COUNTERS.items():
        for key in (metric, name, f"{name}_bytes"):
            if isinstance(ncu.get(key), int | float):
                out[name] = float(ncu[key])
                break
    return out


def measured_kernels(folder: str | Path) -> list[tuple[str, dict[str, Any]]]:
    """Every record with a plan and a measured time from the bench JSON files in `folder`."""
    folder = Path(folder)
    files = sorted(folder.glob("*.json")) if folder.is_dir() else [folder]
    if not files or not files[0].exists():
        raise InputError(str(folder), None, "no measured JSON files")
    out = []
    for f in files:
        try:
            data = json.loads(f.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(str(f), None, f"JSON syntax error at line {exc.lineno}: {exc.msg}") from None
        stack: list[Any] = [data]
        while stack:  # walk the document: bench files nest records under cases/plans
            node = stack.pop()
            if isinstance(node, dict):
                if _find_plan(node) is not None and _measured_time_us(node) is not None and node.get("ok", True):
                    out.append((f.name, node))
                    continue
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(reversed(node))
    return out


def join(folder: str | Path, hw: Hardware) -> list[Row]:
    from fusesim.sim import simulate

    rows = []
    for src, rec in measured_kernels(folder):
        plan = Plan.from_dict(_find_plan(rec))  # type: ignore[arg-type]
        sim = simulate(plan, hw)
        measured = _measured_counters(rec)
        predicted = {name: float(sum(sim.bytes.get(k, 0) for k in keys)) for name, (_, keys) in COUNTERS.items()}
        label = str(rec.get("label") or rec.get("variant") or plan.strategy)
        rows.append(Row(plan.case_id, label, _measured_time_us(rec), sim.time_ns / 1e3,  # type: ignore[arg-type]
                        measured, predicted, src))
    return rows


def _rank(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for t in range(i, j + 1):
            ranks[order[t]] = (i + j) / 2
        i = j + 1
    return ranks


def pearson(xs: list[float], ys: list[float]) -> float:
    n = len(xs)
    if n < 2:
        return float("nan")
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sx = math.sqrt(sum((x - mx) ** 2 for x in xs))
    sy = math.sqrt(sum((y - my) ** 2 for y in ys))
    return sxy / (sx * sy) if sx and sy else float("nan")


def spearman(xs: list[float], ys: list[float]) -> float:
    return pearson(_rank(xs), _rank(ys))


def summarize(rows: list[Row]) -> dict[str, Any]:
    if not rows:
        return {"kernels": 0}
    mape = sum(abs(r.error) for r in rows) / len(rows)
    by_case: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_case[r.case].append(r)
    spearmans, best = [], []
    for case, rs in sorted(by_case.items()):
        if len(rs) >= 2:
            s = spearman([r.predicted_us for r in rs], [r.measured_us for r in rs])
            if not math.isnan(s):
                spearmans.append(s)
            pred_best = min(rs, key=lambda r: r.predicted_us)
            meas_best = min(rs, key=lambda r: r.measured_us)
            best.append({"case": case, "predicted_best": pred_best.label, "measured_best": meas_best.label,
                         "loss": pred_best.measured_us / meas_best.measured_us - 1.0})
    counters = {}
    for name in COUNTERS:
        errs = [abs(r.predicted_bytes[name] - r.measured_bytes[name]) / r.measured_bytes[name]
                for r in rows if r.measured_bytes.get(name)]
        if errs:
            counters[name] = {"kernels": len(errs), "mean_abs_err": sum(errs) / len(errs), "max_abs_err": max(errs)}
    return {
        "kernels": len(rows),
        "mape": mape,
        "pearson": pearson([r.predicted_us for r in rows], [r.measured_us for r in rows]),
        "spearman_within_case_mean": sum(spearmans) / len(spearmans) if spearmans else None,
        "cases_with_ranking": len(best),
        "best_within_3pct": sum(b["loss"] <= 0.03 for b in best) / len(best) if best else None,
        "best": best,
        "counters": counters,
        "fitted_parameters": [],
    }
