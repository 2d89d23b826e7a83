"""Freeze the plans of the CUDA-graph launch trial: per paper case and strategy, the fastest verified plan of the
last whole H200 run (final11). `fusesim bench --graph-launch` times each as launched (ctypes -> fs_launch) and as
the replay of that launch captured into a CUDA graph, next to PyTorch eager and CUDA graphs: in `sync` mode (the
GPU idle when the call comes) the host's launch path is in the interval, and PyTorch's graphs pay one graph
launch where our kernels paid fs_launch's one or two cudaLaunchKernelEx through ctypes. Nothing is measured here:

    python3 scripts/freeze_graph_launch_plans.py --out results/h200/plans_graph_launch.json
    FUSESIM_CACHE=.fscache python3 scripts/prebuild.py --plans-file results/h200/plans_graph_launch.json
    scripts/device_graph_launch.sh $OUT        (on the GPU machine)
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from freeze_verdict_plans import STRATEGIES, WORKLOADS, final_run

from fusesim.stored import PACK_MIN_BYTES, pack
from fusesim.workload import load_workload


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", default="results/h200/final11_paper_*.json", help="the bench results to pick from")
    ap.add_argument("--out", default="results/h200/plans_graph_launch.json")
    args = ap.parse_args()
    best, _timed = final_run((args.runs,))
    frozen: dict[str, list[dict]] = {}
    for wl in WORKLOADS:
        for ch in load_workload(f"workloads/paper_{wl}.yaml").cases:
            rows = sorted(((best[(ch.case_id, s)], s) for s in STRATEGIES if (ch.case_id, s) in best),
                          key=lambda r: r[0][0])  # the case's fastest first
            frozen[ch.case_id] = [{"plan": p.to_dict(), "source": f"{args.runs}: the fastest {s} ({t:.2f} us there)"}
                                  for (t, p), s in rows]
    out = Path(args.out)
    out.write_text(json.dumps(frozen, indent=1) + "\n")
    if out.stat().st_size > PACK_MIN_BYTES:  # committed results are stored packed; every reader finds NAME.json.gz
        out = pack(out)
    print(f"{out}: {sum(map(len, frozen.values()))} plans, {len(frozen)} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
