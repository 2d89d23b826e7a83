"""Let the simulator pick each paper case's plan from a pool wider than the final run's, and freeze
what a device run must time to check the picks.

Per case the pool is the final run's frozen plans (results/h200/plans_final_*.json) plus the
planner's top-K buildable plans per strategy, every gemm_wgmma unfused variant
(handplans.wgmma_candidates) and up to `--fused-wgmma` fused_wgmma plans
(handplans.fused_wgmma_candidates). Every plan is simulated on the calibrated H200 file; nothing is
measured here. Written to `--out` (a bench `--plans file:` JSON): per case the simulator's top
`--picks` plans of the pool, and the final run's measured-best plan of the case, so that one
device run times the picks next to the plan they must beat (run-to-run variation between device
machines is about the size of the differences in question). Runs here, no GPU:

    python3 scripts/sim_search.py --out results/h200/plans_sim_search.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fusesim.codegen.handplans import fused_wgmma_candidates, wgmma_candidates
from fusesim.gpu.bench import planner_plans
from fusesim.hardware import load_hardware
from fusesim.plan import Plan
from fusesim.planner.search import simulated_rank
from fusesim.report.measured import load_measured
from fusesim.sim import simulate
from fusesim.stored import glob_json
from fusesim.workload import load_workload

WORKLOADS = ("gemm_chains", "gated_ffn", "conv_chains")


def measured_final(pattern: str = "results/h200/final_paper_*.json") -> dict[str, list[tuple[float, Plan]]]:
    """Per case, (measured us, plan) of every verified kernel of the files `pattern` matches (by default the
    final run's; an H100's, named *_h100.json, left out)."""
    out: dict[str, list[tuple[float, Plan]]] = {}
    for m in load_measured([f for f in glob_json(pattern) if "_h100" not in f.name]).items:
        if m.plan_dict is not None:
            out.setdefault(m.case, []).append((m.time_us, Plan.from_dict(m.plan_dict)))
    return out


def pool(ch, hw, frozen: list[Plan], top_k: int, fused_wgmma: int) -> list[tuple[Plan, str]]:
    listed = [(p, "final run") for p in frozen]
    got, _why = planner_plans(ch, hw, ("unfused", "smem", "dsm"), top_k)
    listed += [(p, f"planner {s}") for s, ps in got.items() for p in ps]
    listed += [(p, "gemm_wgmma variant") for p in wgmma_candidates(ch)]
    listed += [(p, "fused_wgmma hand") for p in fused_wgmma_candidates(ch, per_case=fused_wgmma)]
    seen: set[str] = set()
    out = []
    for p, why in listed:
        key = p.to_json()
        if p.buildable and key not in seen:
            seen.add(key)
            out.append((p, why))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="hw_configs/h200_calibrated.yaml")
    ap.add_argument("--top-k", type=int, default=8, help="planner plans per strategy")
    ap.add_argument("--fused-wgmma", type=int, default=40, help="fused_wgmma hand plans per case")
    ap.add_argument("--picks", type=int, default=2, help="the simulator's best plans per case to time")
    ap.add_argument("--out", default="results/h200/plans_sim_search.json")
    args = ap.parse_args()
    hw = load_hardware(args.hw)
    final = measured_final()
    frozen_out: dict[str, list[dict[str, Any]]] = {}
    report = []
    for wl in WORKLOADS:
        for ch in load_workload(f"workloads/paper_{wl}.yaml").cases:
            measured = final.get(ch.case_id, [])
            meas_of = {p.to_json(): t for t, p in measured}
            scored = sorted(((simulate(p, hw).time_us, p, why)
                             for p, why in pool(ch, hw, [p for _t, p in measured], args.top_k, args.fused_wgmma)),
                            key=lambda x: simulated_rank(x[0] * 1e3, x[1]))
            best_t, best_p = min(measured, key=lambda x: x[0])
            rows = [{"plan": p.to_dict(), "source": f"simulator pick #{i + 1} ({why}, {t:.2f} us simulated)"}
                    for i, (t, p, why) in enumerate(scored[:args.picks])]
            if all(r["plan"] != best_p.to_dict() for r in rows):
                rows.append({"plan": best_p.to_dict(), "source": f"final run's measured best ({best_t:.2f} us then)"})
            frozen_out[ch.case_id] = rows
            t0, p0, why0 = scored[0]
            report.append((ch.case_id, len(scored), t0, why0, meas_of.get(p0.to_json()), best_t, p0.summary()))
    Path(args.out).write_text(json.dumps(frozen_out, indent=1) + "\n")
    print(f"{args.out}: {sum(map(len, frozen_out.values()))} plans")
    print("| case | pool | simulator's pick: simulated us | from | its final-run time | final-run best | plan |")
    print("| --- | ---: | ---: | --- | ---: | ---: | --- |")
    for cid, n, t0, why, meas, best, summ in report:
        print(f"| {cid} | {n} | {t0:.2f} | {why} | {'-' if meas is None else f'{meas:.2f}'} | {best:.2f} | {summ} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
