"""Freeze what a device run must time to measure a change to the wgmma templates on the conv chains.

Per conv case (by default those with k1 > 1: the implicit im2col) and strategy: the simulator's fastest
wgmma plans (`plan_case(rank="simulated")` on the calibrated H200 file, the pool `fusesim simulate`
ranks), and the fastest measured plan of that strategy in the runs `--measured` names (by default the
final run, where mma.sync was the only family that could build a 3x3 chain), so that one device run
times both. Nothing is measured here. Then, as scripts/device_sim_search.sh says:

    python3 scripts/freeze_im2col_plans.py --out results/h200/plans_im2col.json
    PLANS=results/h200/plans_im2col.json PREFIX=im2col_paper_ WORKLOADS=conv_chains scripts/device_sim_search.sh $OUT

The staged-E run (scripts/device_estage.sh) froze every conv case against the final and im2col runs (its
results/h200/plans_estage.json, 96 plans, predates the rule that a measured best already among the picks is
not listed again: 12 of its rows repeat a pick):

    python3 scripts/freeze_im2col_plans.py --all-cases --per-strategy 3 --measured 'results/h200/final_paper_*.json' \
      'results/h200/wgmma_im2col_paper_*.json' --out results/h200/plans_estage.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fusesim.hardware import load_hardware
from fusesim.planner import plan_case
from fusesim.workload import load_workload

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeze_verdict_plans import STRATEGIES, final_run  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="hw_configs/h200_calibrated.yaml")
    ap.add_argument("--per-strategy", type=int, default=4, help="wgmma plans per case and strategy")
    ap.add_argument("--all-cases", action="store_true", help="every conv case, not only those with k1 > 1")
    ap.add_argument("--measured", nargs="+", default=["results/h200/final_paper_*.json"],
                    help="bench runs whose fastest plan per case and strategy is timed again")
    ap.add_argument("--out", default="results/h200/plans_im2col.json")
    args = ap.parse_args()
    hw = load_hardware(args.hw)
    best, _ = final_run(tuple(args.measured))
    frozen: dict[str, list[dict[str, Any]]] = {}
    for ch in load_workload("workloads/paper_conv_chains.yaml").cases:
        if not args.all_cases and (ch.conv is None or ch.conv.k1 == 1):
            continue
        rows: list[dict[str, Any]] = []
        for s in STRATEGIES:
            ranked = plan_case(ch, hw, strategies=(s,), top_k=200, require_buildable=True, rank="simulated").plans.get(s, [])
            wg = [sp for sp in ranked if sp.plan.instruction == "wgmma"][:args.per_strategy]
            for i, sp in enumerate(wg):
                rows.append({"plan": sp.plan.to_dict(),
                             "source": f"simulated wgmma {s} #{i + 1} ({sp.simulated_ns / 1e3:.2f} us simulated)"})
            t, p = best.get((ch.case_id, s), (0.0, None))
            if p is not None and all(r["plan"] != p.to_dict() for r in rows):  # a listed pick is not listed twice
                rows.append({"plan": p.to_dict(), "source": f"measured fastest {s} ({p.instruction}, {t:.2f} us then)"})
        frozen[ch.case_id] = rows
    Path(args.out).write_text(json.dumps(frozen, indent=1) + "\n")
    print(f"{args.out}: {sum(map(len, frozen.values()))} plans over {len(frozen)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
