"""Freeze the plans a final device run times, per paper case, into results/h200/plans_final_<wl>.json.

Per case: the planner's top-K plans per strategy on the H200 config (so the validation can rank
several plans of one case), the fastest measured plan per strategy and instruction family of an
earlier run (`--previous`, bench JSONs), and the best fused_wgmma hand plans by
handplans.rough_fused_wgmma_us. Each entry is {"plan": ..., "source": why it is listed}; duplicates
are listed once (first reason wins). Runs here, no GPU:

    python3 scripts/freeze_final_plans.py --hw hw_configs/h200.yaml --top-k 3 --fused-wgmma 4 \
        --previous results/h200/final_paper_*.json

`--extend FILE...` instead keeps the frozen lists as they are and appends the plans of other
{case: [{plan, source}]} files (e.g. scripts/sim_search.py's picks) that they do not hold yet; with `--into PREFIX`
the lists scripts/device_final2.sh times (the conv chains' plans_estage.json among them) stay as they are and the
extended ones are written to results/h200/PREFIX<workload>.json (`PLANS_PREFIX=PREFIX` there times them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fusesim.codegen.handplans import fused_wgmma_candidates
from fusesim.gpu.bench import select_plans
from fusesim.hardware import load_hardware
from fusesim.plan import Plan
from fusesim.stored import read_json
from fusesim.workload import load_workload

WORKLOADS = ("gemm_chains", "gated_ffn", "conv_chains")


def _previous_best(files: list[str]) -> dict[str, list[Plan]]:
    """Per case, the fastest verified plan per (strategy, instruction) of earlier bench JSONs."""
    best: dict[tuple[str, str, str], tuple[float, Plan]] = {}
    for f in files:
        for c in read_json(f)["cases"]:
            for r in c.get("plans", []):
                t = (r.get("time") or {}).get("queued_median_us")
                if not r.get("plan") or not (r.get("verify") or {}).get("ok") or t is None:
                    continue
                p = Plan.from_dict(r["plan"])
                key = (c["case"], p.strategy, p.instruction)
                if key not in best or t < best[key][0]:
                    best[key] = (t, p)
    out: dict[str, list[Plan]] = {}
    for (case, _, _), (_, p) in sorted(best.items()):
        out.setdefault(case, []).append(p)
    return out


# what scripts/device_final2.sh times per workload: the final run's frozen lists, the conv chains the staged-E run's
WHOLE_RUN = {"gemm_chains": "plans_final_gemm_chains.json", "gated_ffn": "plans_final_gated_ffn.json",
             "conv_chains": "plans_estage.json"}


def extend(out_dir: str, files: list[str], into: str | None = None) -> int:
    """Append to each frozen list the plans of `files` it does not hold (first listing's reason); with `into`,
    the lists a whole run times (WHOLE_RUN) stay as they are and the extended ones go to `into`<workload>.json."""
    extra: dict[str, list[dict[str, Any]]] = {}
    for f in files:
        for case, rows in read_json(f).items():
            extra.setdefault(case, []).extend(rows)
    for wl in WORKLOADS:
        path = Path(out_dir) / (WHOLE_RUN[wl] if into else f"plans_final_{wl}.json")
        frozen: dict[str, list[dict[str, Any]]] = read_json(path)
        path = Path(out_dir) / f"{into}{wl}.json" if into else path
        added = 0
        for case, rows in frozen.items():
            seen = {Plan.from_dict(r["plan"]).to_json() for r in rows}
            for r in extra.get(case, []):
                key = Plan.from_dict(r["plan"]).to_json()
                if key not in seen:
                    seen.add(key)
                    rows.append(r)
                    added += 1
        path.write_text(json.dumps(frozen, indent=1) + "\n")
        print(f"{path}: {sum(map(len, frozen.values()))} plans ({added} added)")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", default="hw_configs/h200.yaml")
    ap.add_argument("--top-k", type=int, default=3, help="planner plans per strategy")
    ap.add_argument("--fused-wgmma", type=int, default=4, help="fused_wgmma hand plans per case")
    ap.add_argument("--previous", nargs="*", default=[], help="earlier bench JSONs")
    ap.add_argument("--out-dir", default="results/h200")
    ap.add_argument("--extend", nargs="*", default=[],
                    help="append these {case: [{plan, source}]} files' plans to the frozen lists instead")
    ap.add_argument("--into", default=None, metavar="PREFIX",
                    help="with --extend: extend the lists a whole run times into PREFIX<workload>.json (in --out-dir)")
    args = ap.parse_args()
    if args.extend:
        return extend(args.out_dir, args.extend, args.into)
    hw = load_hardware(args.hw)
    previous = _previous_best(args.previous)
    for wl in WORKLOADS:
        frozen: dict[str, list[dict[str, Any]]] = {}
        for ch in load_workload(f"workloads/paper_{wl}.yaml").cases:
            planner = [e["plan"] for e in select_plans(ch, hw, ("unfused", "smem", "dsm"), args.top_k, "planner")
                       if e["source"] == "planner"]
            listed = [(p, f"planner {p.strategy} #{[q for q in planner if q.strategy == p.strategy].index(p) + 1}")
                      for p in planner]
            listed += [(p, "fastest measured earlier") for p in previous.get(ch.case_id, [])]
            listed += [(p, "fused_wgmma hand") for p in fused_wgmma_candidates(ch, per_case=args.fused_wgmma)]
            seen: set[str] = set()
            rows = []
            for p, why in listed:
                key = p.to_json()
                if p.buildable and key not in seen:
                    seen.add(key)
                    rows.append({"plan": p.to_dict(), "source": why})
            frozen[ch.case_id] = rows
        path = Path(args.out_dir) / f"plans_final_{wl}.json"
        path.write_text(json.dumps(frozen, indent=1) + "\n")
        print(f"{path}: {sum(map(len, frozen.values()))} plans, "
              + ", ".join(f"{k} {len(v)}" for k, v in frozen.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
