"""Compile the kernels a device run will need HERE, into a cache folder that the run carries.

A device machine's minutes are scarce; nvcc on this machine produces the same sm_90a .so files
(static CUDA runtime), keyed by source hash, so the device finds them built.
Usage: FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --hw hw_configs/h200.yaml --top-k 1 WORKLOAD...
       FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --from-bench results/h200/planner_*.json
(--from-bench: the plans recorded in bench JSONs, e.g. to profile them again with Nsight Compute;
 --plans-file: {case: [plan, ...]} files that `fusesim bench --plans file:...` reads;
 --sanitize, --oddshapes, --representatives: the plans of fusesim.gpu.sanitize, fusesim.gpu.oddshapes
 and the GPU tests; --stage DIR: also copy the built kernels into DIR, to be carried as
 `tar -cJf .fscarry/cache.tar.xz -C PARENT .fscache` with DIR = PARENT/.fscache, rather than the whole cache;
 --strip: strip the staged .so files' symbols but the dynamic ones, 27% less carried after xz; what loads them
 (ctypes, by their exported fs_* functions) and fusesim.codegen.binary (the embedded cubins) read them the same.)
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

from fusesim.codegen.build import stage_artifacts
from fusesim.gpu.bench import build_all, select_plans
from fusesim.hardware import load_hardware
from fusesim.plan import Plan
from fusesim.stored import read_json
from fusesim.workload import load_workload


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("workloads", nargs="*")
    ap.add_argument("--hw")
    ap.add_argument("--from-bench", nargs="*", default=[], help="bench JSONs whose recorded plans to build")
    ap.add_argument("--plans-file", nargs="*", default=[], help="{case: [plans]} JSONs (bench --plans file:)")
    ap.add_argument("--sanitize", action="store_true", help="also the compute-sanitizer run's plans")
    ap.add_argument("--oddshapes", action="store_true", help="also fusesim.gpu.oddshapes' plans")
    ap.add_argument("--representatives", action="store_true", help="also the GPU tests' plans (one per family and form)")
    ap.add_argument("--top-k", type=int, default=1)
    ap.add_argument("--plans", default="planner")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--stage", help="copy the built kernels into this folder too")
    ap.add_argument("--strip", action="store_true", help="strip --strip-unneeded the staged .so files")
    args = ap.parse_args()
    plans = [Plan.from_dict(r["plan"]) for f in args.from_bench for c in read_json(f)["cases"]
             for r in c.get("plans", []) if r.get("plan")]
    plans += [Plan.from_dict(d.get("plan", d)) for f in args.plans_file
              for listed in read_json(f).values() for d in listed]
    if args.sanitize:
        from fusesim.gpu.sanitize import family_plans

        plans += list(family_plans().values())
    if args.oddshapes:
        from fusesim.gpu.oddshapes import all_plans

        plans += all_plans()
    if args.representatives:
        from fusesim.codegen.handplans import representative_plans

        plans += list(representative_plans().values())
    if args.workloads and not args.hw:
        ap.error("--hw is required with workloads")
    hw = load_hardware(args.hw) if args.hw else None
    for wl in args.workloads:
        for ch in load_workload(wl).cases:
            plans += [e["plan"] for e in select_plans(ch, hw, ("unfused", "smem", "dsm"), args.top_k, args.plans)]
    t0 = time.time()
    results = build_all(plans, args.jobs)
    failed = [(p.case_id, p.strategy, err[:200]) for p, (art, err) in zip(plans, results, strict=True) if art is None]
    print(f"{len(plans)} plans, {len(plans) - len(failed)} built in {time.time() - t0:.0f} s; failed: {failed}")
    if args.stage:  # ptxas's performance notes travel along
        print(f"{stage_artifacts({art for art, _err in results if art}, args.stage)} kernels staged in {args.stage}")
        if args.strip:
            staged = sorted(str(p) for p in Path(args.stage).glob("*.so"))
            subprocess.run(["strip", "--strip-unneeded", *staged], check=True)
            print(f"{len(staged)} staged .so files stripped")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
