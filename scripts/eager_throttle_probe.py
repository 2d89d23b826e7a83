"""Does how far the host runs ahead of the GPU change `fusesim bench`'s queued times of PyTorch eager, CUDA graphs
and our best kernels? The standalone harness measured ~1 us more per launch when it enqueued every rep at once
(results/h200/harness_probe_h100.json); the Python loop runs a few reps ahead. Here each is timed as bench does
(fusesim.gpu.timing.time_fn) and with the host held at most two reps ahead (`time_fn(..., ahead=2)`: the end event
of rep i - 2 synchronized before rep i is enqueued), interleaved over rounds, in one process. (At the run in
results/h200/eager_throttle_probe_h100.json the throttled loop was a copy of time_fn's queued mode in this script;
it is time_fn's `ahead` since, the same loop; that run's throttled entries hold only the queued fields.)

    python3 scripts/eager_throttle_probe.py --cases C6 C7 S8 C2 G1 G4 --out results/h200/eager_throttle_probe.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

WORKLOADS = ("workloads/paper_gemm_chains.yaml", "workloads/paper_gated_ffn.yaml", "workloads/paper_conv_chains.yaml")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--reps", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from fusesim.gpu.baseline import raw_cases, torch_chain
    from fusesim.gpu.env import environment
    from fusesim.gpu.timing import L2Flusher, graph_of, time_fn

    cases = {c.case_id: c for w in WORKLOADS for c in raw_cases(w) if c.case_id in args.cases}
    flush = L2Flusher()
    fns: dict[str, dict[str, Any]] = {}
    for cid, case in cases.items():
        fn, _ = torch_chain(case)
        fns[cid] = {"eager": fn, "graphs": graph_of(fn)}
    res: dict[str, dict[str, list]] = {c: {} for c in cases}
    for _ in range(args.rounds):
        for cid in cases:
            for kind, fn in fns[cid].items():
                res[cid].setdefault(f"{kind}_bench", []).append(time_fn(fn, flush, reps=args.reps))
                res[cid].setdefault(f"{kind}_throttled", []).append(time_fn(fn, flush, reps=args.reps, ahead=2))
    doc = {"what": "PyTorch queued times, bench's loop vs the host at most two reps ahead", "command": " ".join(sys.argv),
           "environment": environment(), "reps": args.reps, "rounds": args.rounds, "samples": res}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1))
    cols = ["eager_bench", "eager_throttled", "graphs_bench", "graphs_throttled"]
    print("queued median us, median over rounds (min over rounds of the medians .. max)")
    print(f"{'case':5} " + " ".join(f"{c:>22}" for c in cols))
    for cid in cases:
        cells = []
        for c in cols:
            meds = [s["queued_median_us"] for s in res[cid][c]]
            cells.append(f"{statistics.median(meds):6.2f} ({min(meds):5.1f}..{max(meds):5.1f})")
        print(f"{cid:5} " + " ".join(f"{x:>22}" for x in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
