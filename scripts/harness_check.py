"""Run the standalone harnesses `fusesim codegen` wrote (built by its Makefile) and time the same plans through
`fusesim bench`'s Python path (fusesim.gpu.runner + timing), in one process after another on one GPU.

    python3 scripts/harness_check.py DIR --out results/h200/harness_check.json [--reps 60]

DIR holds NAME.cu, NAME.plan.json, NAME_main.cu and the executables NAME (`make -C DIR`). Per kernel: the
harness's verdict, errors and CUDA-event medians (queued / sync), the runner's verification and medians of the
same plan, and their ratio. Prints a table last; exit 1 if any harness or runner verification failed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from fusesim.stored import read_json


def run_harness(exe: Path, reps: int, seed: int) -> dict:
    r = subprocess.run([str(exe), "--json", "--reps", str(reps), "--seed", str(seed)], capture_output=True,
                       text=True, timeout=600)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        out = {"verified": False}
    out["exit_code"] = r.returncode
    if r.returncode != 0:
        out["stderr"] = r.stderr[-2000:]
    return out


def run_runner(plan_file: Path, reps: int, flush) -> dict:
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, time_kernel, verify
    from fusesim.plan import Plan

    plan = Plan.from_json(plan_file.read_text())
    kern = Loaded(Path(build(generate(plan), "so")))
    ver = verify(kern, plan.chain, seed=int(time.time()) % 100_000, launches=2)
    out = {"verified": bool(ver["ok"]), "rel_err": ver["rel_err"]}
    if ver["ok"]:
        out.update(time_kernel(kern, plan.chain, flush, reps))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=60)
    args = ap.parse_args()

    from concurrent.futures import ThreadPoolExecutor

    import torch

    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.env import environment
    from fusesim.gpu.timing import L2Flusher
    from fusesim.plan import Plan

    plan_files = sorted(args.dir.glob("*.plan.json"))
    with ThreadPoolExecutor(max_workers=16) as ex:  # the runner's .so builds, in parallel, before any timing
        list(ex.map(lambda f: build(generate(Plan.from_json(f.read_text())), "so"), plan_files))
    flush = L2Flusher()
    rows = []
    for i, main_cu in enumerate(sorted(args.dir.glob("*_main.cu"))):
        name = main_cu.name[: -len("_main.cu")]
        plan_doc = read_json(args.dir / f"{name}.plan.json")
        h = run_harness(args.dir / name, args.reps, seed=1000 + i)
        p = run_runner(args.dir / f"{name}.plan.json", args.reps, flush)
        rows.append({"kernel": name, "case": plan_doc["case_id"], "strategy": plan_doc["strategy"],
                     "harness": h, "runner": p})
        torch.cuda.synchronize()
    doc = {"what": "standalone harnesses (fusesim codegen) vs fusesim bench's Python timing of the same plans",
           "command": " ".join(sys.argv), "environment": environment(), "reps": args.reps, "kernels": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))

    bad = 0
    print(f"{'case':5} {'strategy':8} {'family':12} {'ok':>3} {'rel_err':>8} {'harness q/s us':>16} "
          f"{'runner q/s us':>16} {'q ratio':>7}")
    for r in rows:
        h, p = r["harness"], r["runner"]
        ok = bool(h.get("verified")) and bool(p.get("verified"))
        bad += not ok
        hq, hs = h.get("queued_median_us", -1), h.get("sync_median_us", -1)
        pq, ps = p.get("queued_median_us", -1), p.get("sync_median_us", -1)
        ratio = hq / pq if hq > 0 and pq > 0 else float("nan")
        err = max(h.get("rel_err", [float("nan")]))
        print(f"{r['case']:5} {r['strategy']:8} {h.get('family', '?'):12} {'yes' if ok else 'NO':>3} {err:8.2e} "
              f"{hq:7.2f}/{hs:7.2f} {pq:7.2f}/{ps:7.2f} {ratio:7.3f}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
