"""im2col_decode_ns from the im2col trial (results/h200/im2col_trial.json): per plan, the measured
time of the per-copy decode minus the rows-decoded-once build (the same plan, verified, timed in
turn), against what one nanosecond of decode per copy adds in the simulator (its copies per thread
x the GEMM0 stages on each block's critical path, waves included); least squares through the origin.

    python3 scripts/im2col_fit.py [results/h200/im2col_trial.json] [--hw hw_configs/h200.yaml]
"""

from __future__ import annotations

import argparse
import statistics

from fusesim.capability import codegen_switches, generator_switches
from fusesim.hardware import load_hardware
from fusesim.plan import Plan
from fusesim.sim import simulate
from fusesim.stored import read_json


def unit_response_us(plan: Plan, hw) -> float:
    """Simulated extra time (us) of the per-copy decode at 1 ns per copy."""
    with generator_switches({**codegen_switches(), "im2col_rows_hoisted": False}):  # as the trial built it
        off = simulate(plan, hw.model_copy(update={"im2col_decode_ns": None})).time_ns
        on = simulate(plan, hw.model_copy(update={"im2col_decode_ns": 1.0})).time_ns
    return (on - off) / 1e3


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("trial", nargs="?", default="results/h200/im2col_trial.json")
    ap.add_argument("--hw", default="hw_configs/h200.yaml")
    args = ap.parse_args()
    hw = load_hardware(args.hw)
    rows = read_json(args.trial)["rows"]
    pts = []
    print(f"{'case':4s} {'plan':62s} {'old us':>7s} {'new us':>7s} {'delta':>6s} {'sim/ns':>7s}")
    for r in rows:
        if not all(v["ok"] for v in r["verify"].values()):
            continue
        plan = Plan.from_dict(r["plan"])
        old, new = r["us"]["per-copy decode"], r["us"]["rows decoded once"]
        x = unit_response_us(plan, hw)
        pts.append((x, old - new))
        print(f"{r['case']:4s} {r['summary'][:62]:62s} {old:7.2f} {new:7.2f} {old - new:6.2f} {x:7.4f}")
    sxx = sum(x * x for x, _ in pts)
    ns = sum(x * y for x, y in pts) / sxx if sxx else float("nan")
    resid = [y - ns * x for x, y in pts]
    print(f"\n{len(pts)} verified plans: im2col_decode_ns = {ns:.1f} (least squares through the origin; "
          f"residual median {statistics.median(resid):+.2f} us, max |{max(map(abs, resid)):.2f}| us)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
