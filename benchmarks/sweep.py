"""Sweep throughput: rows per second with 1 and 2 local workers and a Dask LocalCluster.

    python benchmarks/sweep.py                 # a slice of the grid per executor, then the estimate
    python benchmarks/sweep.py --full          # also run the whole 1,170-row grid with 2 workers
    python benchmarks/sweep.py --json out.json

The grid is sweeps/dsm_bandwidth_x_cluster.yaml: 15 machines (cluster limit 2..32 x DSM x1/x2/x4)
x the 26 paper cases x 3 strategies = 1,170 rows, the real planner + simulator per row. Every
measurement runs `fusesim sweep` in a fresh process (the planner memoizes plans per process, so
a warm process would flatter later runs) on its own slice of the grid and its own output file;
the wall time includes worker-pool or Dask-cluster start-up, as a user would see it.

Measured twice on the 2-core development VM, shared with three other engineers' jobs (commits
89caf98 and 9802881; the spread between the two runs is the machine's load, not the code):

    1 worker (in process)          135 rows:  12.5-13.4 rows/s
    2 local workers                135 rows:  15.9-31.6 rows/s (the slice has 15 heavy S1 tasks; a
                                              busy second core or a late S1 leaves one worker idle)
    Dask LocalCluster, 2 workers   135 rows:   9.2-15.1 rows/s (3-5 s of it cluster start-up)
    full grid, 2 local workers    1170 rows:  32-41 s (28.9-36.1 rows/s)

so a 1,000-row grid over the paper suites takes 30-60 s, against a 15-minute target.
Re-run at 881f3a1 (this session's simulator, planner and wgmma plans), same machine:

    1 worker (in process)          135 rows:  17.1 rows/s
    2 local workers                135 rows:  29.6 rows/s
    Dask LocalCluster, 2 workers   135 rows:  17.7 rows/s
    estimate for 1,000 rows at the best rate: 34 s

The default evaluator is now the plan `fusesim simulate` runs (evaluate_case_simulated: each strategy's
pool simulated, the fastest kept); the runs above were the cost model's pick (evaluate_case). Both on
2026-12-08, same machine (`python benchmarks/sweep.py [--full]` and `--evaluator
fusesim.sweep.evaluate:evaluate_case`):

                                   evaluate_case_simulated   evaluate_case
    1 worker (in process)          135 rows:   4.6 rows/s    39.9 rows/s
    2 local workers                135 rows:   9.4 rows/s    48.5 rows/s
    Dask LocalCluster, 2 workers   135 rows:   7.0 rows/s    26.2 rows/s
    full grid, 2 local workers    1170 rows: 136 s (8.6 rows/s; other jobs ran beside it)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "sweeps" / "dsm_bandwidth_x_cluster.yaml"
TARGET_S = 15 * 60


def run(out: Path, jobs: int, limit: int | None, dask: bool = False, cases: list[str] | None = None,
        evaluator: str | None = None) -> dict:
    cmd = [sys.executable, "-m", "fusesim", "sweep", str(SPEC), "--out", str(out), "--jobs", str(jobs),
           "--format", "json", "--no-parquet"]
    if evaluator:
        cmd += ["--evaluator", evaluator]
    if limit:
        cmd += ["--limit", str(limit)]
    if dask:
        cmd.append("--dask")
    if cases:
        cmd += ["--case", *cases]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"sweep failed ({' '.join(cmd)}):\n{r.stderr[-2000:]}")
    s = json.loads(r.stdout)
    s["process_wall_s"] = wall
    return s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["G4", "S1", "C5"],
                    help="the slice each executor runs: these cases on all 15 machines (default G4 S1 C5: a "
                         "small GEMM chain, a large SwiGLU FFN, a conv chain)")
    ap.add_argument("--full", action="store_true", help="also run the whole grid with 2 workers")
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask measurement")
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--evaluator", help="module:function (default: the sweep's, evaluate_case_simulated)")
    args = ap.parse_args()

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        tmpd = Path(tmp)
        # Each executor runs the same slice (some cases on every machine of the grid) into a fresh
        # file, in a fresh process, so no planner cache carries over.
        plans = [("1 worker (in process)", 1, False), ("2 local workers", 2, False)]
        if not args.no_dask:
            try:
                import dask.distributed  # noqa: F401

                plans.append(("Dask LocalCluster, 2 workers", 2, True))
            except ImportError:
                print("dask not installed: skipping the Dask measurement", file=sys.stderr)
        for label, jobs, dask in plans:
            s = run(tmpd / f"{jobs}-{dask}.csv", jobs, None, dask, args.cases, args.evaluator)
            results[label] = s
            print(f"{label:30} {s['computed']:5} rows in {s['wall_s']:6.1f} s = {s['rows_per_s']:6.1f} rows/s "
                  f"(process {s['process_wall_s']:.1f} s; {s['errors']} errors)", flush=True)
        best = max(results.values(), key=lambda s: s["rows_per_s"])
        est = 1000 / best["rows_per_s"]
        print(f"\nestimate for a 1,000-row grid at the best rate ({best['rows_per_s']:.1f} rows/s): "
              f"{est:.0f} s = {est / 60:.1f} min (target {TARGET_S / 60:.0f} min on {os.cpu_count()} cores)")
        full = None
        if args.full:
            full = run(tmpd / "full.csv", 2, None, evaluator=args.evaluator)
            print(f"full grid, 2 local workers: {full['computed']} rows in {full['wall_s']:.0f} s "
                  f"({full['rows_per_s']:.1f} rows/s; {full['errors']} errors, {full['infeasible']} infeasible) -> "
                  f"{'within' if full['wall_s'] * 1000 / max(full['computed'], 1) < TARGET_S else 'OVER'} "
                  f"the 15-minute target per 1,000 rows")
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu_count": os.cpu_count(), "executors": results,
                                               "estimate_1000_rows_s": est, "full": full}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
