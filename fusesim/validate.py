"""Predicted vs measured: join each measured kernel with the simulation of the same plan.

The simulator's parameters come from the hardware file: calibrated by microbenchmarks, from the
spec, or -- for the few global corrections the generated kernels need (hardware fields
`cp_async_groups_in_flight`, `cp_async_refill_ns`, `kernel_start_us`, `l2_reduction_bandwidth_gbps`)
-- fitted by
`fit_globals` on the *fit* half of the cases only (`case_split`: odd case numbers), one value
for all kernels within physical bounds. Scores are reported for both halves; the *score* half
(even case numbers) never influenced a parameter. Metrics: latency MAPE, Pearson r, within-case
Spearman rank correlation, per-counter error (DRAM read/write, L2, DSM bytes from Nsight Compute
where recorded), and whether the predicted-best plan of each case is the measured-best (and how
much it loses when not).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fusesim.capability import FRAGMENT_EPILOGUE, generator_switches
from fusesim.errors import InputError
from fusesim.hardware import Hardware
from fusesim.plan import Plan
from fusesim.planner.search import simulated_rank
from fusesim.stored import read_json

# measured counter -> simulator byte keys summed (report.measured reads ncu's dram read+write as one)
COUNTERS = {
    "dram": ("hbm_bytes", ("hbm_read", "hbm_write")),
    "dram_read": ("hbm_read_bytes", ("hbm_read",)),
    "dram_write": ("hbm_write_bytes", ("hbm_write",)),
    "l2": ("l2_bytes", ("l2_read", "l2_write")),
    "dsm": ("dsm_bytes", ("dsm",)),
}


@dataclass
class Row:
    case: str
    label: str  # strategy, or the plan summary when a case has several plans of one strategy
    measured_us: float
    predicted_us: float
    measured_bytes: dict[str, float] = field(default_factory=dict)
    predicted_bytes: dict[str, float] = field(default_factory=dict)
    source: str = ""
    kernels: int = 1  # kernels the plan launches (each pays hw.kernel_start_us)
    plan: Plan | None = field(default=None, repr=False)  # the simulated plan (for error breakdowns)
    gpu: str = ""  # the GPU the measurement's file names ("" when it does not)

    @property
    def error(self) -> float:
        return (self.predicted_us - self.measured_us) / self.measured_us


def join(measured: str | Path | list[str], hw: Hardware, split: str | None = None) -> list[Row]:
    """Simulate the exact plan of every measured kernel that records one (library baselines and
    unverified kernels carry no plan and are skipped); `split` (FIT or SCORE): only that half."""
    from fusesim.report.measured import load_measured
    from fusesim.sim import simulate

    found = load_measured(measured)
    kernels = [m for m in found.items if m.plan_dict is not None and (split is None or case_split(m.case) == split)]
    if not kernels:
        where = measured if isinstance(measured, str | Path) else ", ".join(map(str, measured))
        why = f" ({'; '.join(found.warnings)})" if found.warnings else ""  # unreadable, or not a result file
        raise InputError(str(where), None, f"no measured kernels with a recorded plan{why}")
    rows = []
    for m in kernels:
        plan = Plan.from_dict(m.plan_dict)  # type: ignore[arg-type]
        # simulate the kernel that ran: a file that records no generator switches predates them
        with generator_switches(m.codegen or FRAGMENT_EPILOGUE):
            sim = simulate(plan, hw, code_bytes=m.code_bytes)
        got = {name: float(getattr(m, attr)) for name, (attr, _) in COUNTERS.items() if getattr(m, attr)}
        predicted = {name: float(sum(sim.bytes.get(k, 0) for k in keys)) for name, (_, keys) in COUNTERS.items()}
        rows.append(Row(plan.case_id, m.plan or plan.summary(), m.time_us, sim.time_ns / 1e3, got, predicted,
                        Path(m.source).name, len(plan.kernels), plan, m.gpu))
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


def predicted_best(rows: Sequence[Row]) -> Row:
    """The row the simulator ranks first, in the planner's order (`planner.search.simulated_rank`)."""
    return min(rows, key=lambda r: simulated_rank(r.predicted_us * 1e3, r.plan) if r.plan is not None else
               (round(r.predicted_us * 1e3, 3), 0))


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
            pred_best = predicted_best(rs)
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


# ---- fit / score split and the global corrections --------------------------------------------------
FIT, SCORE = "fit", "score"


def case_split(case_id: str) -> str:
    """FIT for odd-numbered cases (C1, G3, S5, ...), SCORE for even ones: the halves never mix."""
    digits = re.findall(r"\d+", case_id)
    return FIT if digits and int(digits[-1]) % 2 else SCORE


def split_rows(rows: list[Row]) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {FIT: [], SCORE: []}
    for r in rows:
        out[case_split(r.case)].append(r)
    return out


def _shifted_mape(rows: list[Row], start_us: float) -> float:
    return sum(abs((r.predicted_us + start_us * r.kernels) / r.measured_us - 1) for r in rows) / len(rows)


def best_kernel_start_us(rows: list[Row], upper_us: float, step_us: float = 0.05) -> tuple[float, float]:
    """The per-kernel start cost in [0, upper_us] minimising MAPE over `rows` simulated without one
    (it delays every kernel by the same amount, so it adds kernels x value to each time)."""
    best = (0.0, _shifted_mape(rows, 0.0))
    for i in range(1, int(upper_us / step_us) + 1):
        m = _shifted_mape(rows, i * step_us)
        if m < best[1]:
            best = (i * step_us, m)
    return best


def fit_globals(measured: str | Path | list[str], hw: Hardware, trials: Sequence[dict[str, Any]],
                progress: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Choose the global corrections on the FIT cases only: each trial (hardware field -> value,
    None = the simulator's default) is simulated over the fit half, and `kernel_start_us` is chosen
    for each within [0, hw.launch_overhead_us] (an empty kernel's own launch bounds what a real
    kernel may add). Returns every trial with its fit MAPE and the best one."""
    sources = [str(measured)] if isinstance(measured, str | Path) else [str(m) for m in measured]
    scored = []
    for trial in trials:
        trial_hw = hw.model_copy(update={**trial, "kernel_start_us": None})
        rows = join(sources, trial_hw, FIT)
        start, mape = best_kernel_start_us(rows, hw.launch_overhead_us)
        scored.append({**trial, "kernel_start_us": round(start, 2), "fit_mape": mape, "fit_kernels": len(rows)})
        if progress is not None:
            progress(scored[-1])
    return {"best": min(scored, key=lambda t: t["fit_mape"]), "trials": scored}


# ---- the fusion verdict: is the best fused plan faster than the best unfused one? ------------------
VERDICT_TIE = 0.03  # a measured fused / unfused speedup within 3% of 1 is a tie: either verdict stands


@dataclass(frozen=True)
class Verdict:
    """One case's answer to "should it be fused?": the fastest verified plan per strategy measured in
    one bench run against the plan per strategy the planner picks (`plan_case(rank=)`), simulated."""

    case: str
    measured_us: dict[str, float]
    simulated_us: dict[str, float]
    simulated_plans: dict[str, str]

    @staticmethod
    def _speedup(us: dict[str, float]) -> float | None:
        fused = [us[s] for s in ("smem", "dsm") if s in us]
        return us["unfused"] / min(fused) if fused and "unfused" in us else None

    @property
    def measured_speedup(self) -> float | None:
        """Best unfused time / best fused time, as measured (> 1: fusing pays)."""
        return self._speedup(self.measured_us)

    @property
    def simulated_speedup(self) -> float | None:
        return self._speedup(self.simulated_us)

    @property
    def agrees(self) -> bool | None:
        """Fuse or not, the same answer as the GPU (a measured tie accepts either)."""
        m, s = self.measured_speedup, self.simulated_speedup
        if m is None or s is None:
            return None
        return abs(m - 1) <= VERDICT_TIE or (m > 1) == (s > 1)


def fusion_verdicts(bench_files: Sequence[str | Path], hw: Hardware, rank: str = "simulated") -> list[Verdict]:
    """Per case of `fusesim bench` files (one run): the measured and the planner's fusion verdict, the
    planner's kernels simulated as the generator the run recorded built them."""

    from fusesim.commands.bench import best_rows
    from fusesim.workload import Chain

    out = []
    for f in bench_files:
        data = read_json(f)
        cases = data.get("cases", [])
        with generator_switches(data.get("codegen") or FRAGMENT_EPILOGUE):
            for c, best in zip(cases, best_rows(cases), strict=True):
                out.append(planner_verdict(c["case"], dict(best["by_strategy_us"]), Chain.from_dict(c["chain"]), hw,
                                           rank))
    return out


def planner_verdict(case: str, measured_us: dict[str, float], chain: Any, hw: Hardware,
                    rank: str = "simulated") -> Verdict:
    """One case's Verdict: `measured_us` per strategy against the plan per strategy the planner picks
    (`plan_case(rank=)`), simulated with the generator switches in effect."""
    from fusesim.planner import plan_case
    from fusesim.sim import simulate

    sim_us, plans = {}, {}
    for s in ("unfused", "smem", "dsm"):
        picked = plan_case(chain, hw, strategies=(s,), top_k=1, rank=rank).plans.get(s)
        if not picked:
            continue
        sp = picked[0]  # ranked by simulation, its time is known; by the cost model, simulate it
        ns = sp.simulated_ns if sp.simulated_ns is not None else simulate(sp.plan, hw).time_ns
        sim_us[s] = ns / 1e3
        plans[s] = f"{sp.plan.summary()}, {sp.plan.instruction}"
    return Verdict(case, measured_us, sim_us, plans)
