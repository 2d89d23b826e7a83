"""Freeze every fused_wgmma plan the hand-plan space holds for the paper's small cases that no H200 run
has timed yet, so that one device run measures the whole space instead of the simulator's picks.

Per paper case whose roofline floor is under 10 us (the 17 the issue asks to run under 8 us): every
buildable fused_wgmma candidate (`handplans.fused_wgmma_candidates`, all cluster shapes, tile widths
and gating modes, each with the deepest ring that fits) that no committed H200 run timed
(results/h200/*paper_*.json, H100 files aside), each with the time the calibrated H200 file simulates,
and the fastest plan of the latest whole run (`--control`, final5) as the control the sweep must beat
in the same run (run-to-run variation is a few percent). Nothing is measured here:

    python3 scripts/freeze_sweep_plans.py --out results/h200/plans_sweep_small.json
    NCU=0 PLANS=results/h200/plans_sweep_small.json PREFIX=sweep_small_paper_ scripts/device_sim_search.sh $OUT

`--faster GLOB` instead writes the plans of such a run that beat their case's control in it (verified, queued
median), for `scripts/freeze_final_plans.py --extend`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from sim_search import WORKLOADS, measured_final

from fusesim.codegen.handplans import fused_wgmma_candidates
from fusesim.hardware import load_hardware
from fusesim.sim import simulate
from fusesim.stored import glob_json, read_json
from fusesim.workload import load_workload

SMALL_FLOOR_NS = 10_000.0  # the split: cases with an HBM floor above 10 us stream weights


def write_faster(pattern: str, out: str) -> int:
    """{case: [{plan, source}]} of the plans of the sweep run `pattern` matches that beat their case's control."""
    files = glob_json(pattern)
    if not files:
        raise SystemExit(f"--faster {pattern}: no such files")
    faster: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        for c in read_json(f)["cases"]:
            timed = [(r["time"]["queued_median_us"], r) for r in c["plans"]
                     if (r.get("verify") or {}).get("ok") and (r.get("time") or {}).get("queued_median_us")]
            control = [t for t, r in timed if r["source"].startswith("control")]
            if not control:
                continue
            faster[c["case"]] = [{"plan": r["plan"], "source": f"the small-case sweep: {t:.2f} us against its control's "
                                  f"{control[0]:.2f} ({Path(f).name})"}
                                 for t, r in sorted(timed, key=lambda x: x[0])
                                 if t < control[0] and not r["source"].startswith("control")]
    faster = {k: v for k, v in faster.items() if v}
    Path(out).write_text(json.dumps(faster, indent=1) + "\n")
    print(f"{out}: " + (", ".join(f"{k} {len(v)}" for k, v in faster.items()) or "none"))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="hw_configs/h200_calibrated.yaml")
    ap.add_argument("--control", default="results/h200/final5_paper_*.json", help="the whole run whose best is the control")
    ap.add_argument("--out", default="results/h200/plans_sweep_small.json")
    ap.add_argument("--faster", default=None, metavar="GLOB", help="instead: the plans of that sweep run that beat "
                    "their control")
    args = ap.parse_args()
    if args.faster:
        return write_faster(args.faster, args.out)
    hw = load_hardware(args.hw)
    seen = {p.to_json() for runs in measured_final("results/h200/*paper_*.json").values() for _t, p in runs}
    control = measured_final(args.control)
    frozen: dict[str, list[dict[str, Any]]] = {}
    for wl in WORKLOADS:
        for ch in load_workload(f"workloads/paper_{wl}.yaml").cases:
            if ch.floor_ns(hw) > SMALL_FLOOR_NS:
                continue
            best_t, best_p = min(control[ch.case_id], key=lambda x: x[0])
            rows = [{"plan": best_p.to_dict(), "source": f"control: the control run's fastest ({best_t:.2f} us then)"}]
            new = [(simulate(p, hw).time_us, p) for p in fused_wgmma_candidates(ch, per_case=10**6)
                   if p.to_json() not in seen]
            rows += [{"plan": p.to_dict(), "source": f"fused_wgmma sweep, untimed before ({t:.2f} us simulated)"}
                     for t, p in sorted(new, key=lambda x: x[0])]
            frozen[ch.case_id] = rows
            print(f"{ch.case_id}: control {best_t:.2f} us, {len(new)} untimed plans")
    Path(args.out).write_text(json.dumps(frozen, indent=1) + "\n")
    print(f"{args.out}: {sum(map(len, frozen.values()))} plans")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
