"""Freeze what a device run must time to check the fusion verdict out of sample (benchmarks/verdict.py).

Per paper case and strategy: the plan `fusesim simulate` runs (`plan_case(rank="simulated")` on the
calibrated H200 file), and the final run's fastest measured plan of that strategy (so that one device
run times both; run-to-run variation between device machines is a few percent). Nothing is measured
here. Written to `--out`, a bench `--plans file:` JSON; then, as scripts/device_sim_search.sh says:

    python3 scripts/freeze_verdict_plans.py --out results/h200/plans_verdict.json
    FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_verdict.json
    PLANS=results/h200/plans_verdict.json PREFIX=verdict_paper_ scripts/device_sim_search.sh $OUT  # device
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fusesim.hardware import load_hardware
from fusesim.plan import Plan
from fusesim.planner import plan_case
from fusesim.report.measured import load_measured
from fusesim.stored import glob_json
from fusesim.workload import load_workload

WORKLOADS = ("gemm_chains", "gated_ffn", "conv_chains")
STRATEGIES = ("unfused", "smem", "dsm")


def final_run(patterns: tuple[str, ...] = ("results/h200/final_paper_*.json",)
              ) -> tuple[dict[tuple[str, str], tuple[float, Plan]], set[str]]:
    """(case, strategy) -> (measured us, plan) of the fastest verified plan of the runs `patterns` match
    (by default the final run); every plan they timed."""
    out: dict[tuple[str, str], tuple[float, Plan]] = {}
    timed: set[str] = set()
    for m in load_measured(sorted(f for pat in patterns for f in glob_json(pat))).items:
        if m.plan_dict is None:
            continue
        p = Plan.from_dict(m.plan_dict)
        timed.add(p.to_json())
        key = (m.case, p.strategy)
        if key not in out or m.time_us < out[key][0]:
            out[key] = (m.time_us, p)
    return out, timed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="hw_configs/h200_calibrated.yaml")
    ap.add_argument("--out", default="results/h200/plans_verdict.json")
    args = ap.parse_args()
    hw = load_hardware(args.hw)
    best, timed = final_run()
    frozen: dict[str, list[dict[str, Any]]] = {}
    new = 0
    for wl in WORKLOADS:
        for ch in load_workload(f"workloads/paper_{wl}.yaml").cases:
            rows: list[dict[str, Any]] = []
            for s in STRATEGIES:
                picked = plan_case(ch, hw, strategies=(s,), top_k=1, require_buildable=True, rank="simulated").plans.get(s)
                if picked:
                    sp = picked[0]
                    rows.append({"plan": sp.plan.to_dict(),
                                 "source": f"rank=simulated {s} pick ({sp.simulated_ns / 1e3:.2f} us simulated)"})
                if (ch.case_id, s) in best:
                    t, p = best[(ch.case_id, s)]
                    if all(r["plan"] != p.to_dict() for r in rows):
                        rows.append({"plan": p.to_dict(), "source": f"final run's fastest {s} ({t:.2f} us then)"})
                    elif picked:
                        rows[-1]["source"] += f", the final run's fastest {s} ({t:.2f} us then)"
                new += bool(picked) and picked[0].plan.to_json() not in timed
            frozen[ch.case_id] = rows
    Path(args.out).write_text(json.dumps(frozen, indent=1) + "\n")
    print(f"{args.out}: {sum(map(len, frozen.values()))} plans, {new} picks the final run did not time")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
