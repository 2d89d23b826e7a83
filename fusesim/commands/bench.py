"""`fusesim bench WORKLOAD --hw HW --out FILE.json`: build, verify and time generated kernels on the GPU.

Per plan: nvcc build (cached), verification against a float32 PyTorch reference (fresh random
inputs, NaN-poisoned output), CUDA-event timing with L2 flushed before every launch (median of
--reps), optional Nsight Compute traffic; PyTorch eager and CUDA graphs for the same case.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fusesim.commands.common import add_format, hardware_arg, table, workload_arg
from fusesim.errors import InputError
from fusesim.yamlio import atomic_write, check_writable, read_mapping


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="build, verify and time generated kernels on a GPU (needs torch + nvcc)")
    p.add_argument("workload", help="workload YAML")
    p.add_argument("--hw", required=True, help="hardware YAML (planner input)")
    p.add_argument("--case", action="append", help="case id (repeatable; default all)")
    p.add_argument("--strategy", default="all", choices=("unfused", "smem", "dsm", "all"))
    p.add_argument("--top-k", type=int, default=3, help="plans per strategy to build and time")
    p.add_argument("--plans", default="planner",
                   help="plan source: planner (falls back to hand-built plans when it has none), hand, both, "
                        "or file:PLANS.json ({case: [Plan.to_dict()]}, e.g. the best plans of an earlier run)")
    p.add_argument("--reps", type=int, default=60, help="timed launches per mode (>= 50)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ncu", action="store_true", help="Nsight Compute traffic of each case's best plan")
    p.add_argument("--graph-launch", action="store_true",
                   help="also capture each verified plan into a CUDA graph, verify and time its replays (time_graph)")
    p.add_argument("--work", default=None, help="scratch folder (default OUT's folder/.bench_work)")
    p.add_argument("--out", required=True, help="result JSON")
    add_format(p)
    p.set_defaults(func=run)


def best_rows(cases: list[dict]) -> list[dict]:
    """Per case: fastest verified plan per strategy and overall, with PyTorch alongside."""
    out = []
    for c in cases:
        ok = [r for r in c.get("plans", []) if r.get("verify", {}).get("ok") and r.get("time")]
        by_s: dict[str, dict] = {}
        for r in ok:
            s = r["strategy"]
            if s not in by_s or r["time"]["queued_median_us"] < by_s[s]["time"]["queued_median_us"]:
                by_s[s] = r
        best = min(ok, key=lambda r: r["time"]["queued_median_us"]) if ok else None
        pt = c.get("pytorch", {})
        out.append({
            "case": c["case"],
            "best_strategy": best["strategy"] if best else None,
            "best_us": best["time"]["queued_median_us"] if best else None,
            "best_sync_us": best["time"]["sync_median_us"] if best else None,
            # the same plan as a CUDA graph's replay (bench --graph-launch), where it was timed so
            "best_graph_us": ((best or {}).get("time_graph") or {}).get("queued_median_us"),
            "best_graph_sync_us": ((best or {}).get("time_graph") or {}).get("sync_median_us"),
            "by_strategy_us": {s: r["time"]["queued_median_us"] for s, r in by_s.items()},
            "verified": f"{sum(1 for r in c.get('plans', []) if r.get('verify', {}).get('ok'))}/{len(c.get('plans', []))}",
            "eager_us": pt.get("eager", {}).get("queued_median_us"),
            "eager_sync_us": pt.get("eager", {}).get("sync_median_us"),
            "graph_us": pt.get("graph", {}).get("queued_median_us"),
            "graph_sync_us": pt.get("graph", {}).get("sync_median_us"),
        })
    return out


def run(args: argparse.Namespace) -> int:
    from fusesim.capability import codegen_switches
    from fusesim.gpu.bench import bench
    from fusesim.gpu.env import environment, hopper_missing

    wl = workload_arg(args.workload)
    cases = wl.select(args.case)
    hw = hardware_arg(args.hw)
    if args.plans.startswith("file:"):
        read_mapping(args.plans[5:])  # missing or malformed: one line, exit 2, before any build or launch
    elif args.plans not in ("planner", "hand", "both"):
        raise InputError(None, "--plans", f"{args.plans!r}: expected planner, hand, both or file:PLANS.json")
    check_writable(args.out, "--out")
    why = hopper_missing()  # after the inputs (their mistakes are named first), before any build or launch
    if why:
        raise InputError("this machine", None, f"{why}: bench builds, verifies and times the kernels on a Hopper "
                         "GPU (sm_90) with PyTorch; `fusesim codegen` writes them (with a harness) to take to one")
    strategies = ("unfused", "smem", "dsm") if args.strategy == "all" else (args.strategy,)
    out = Path(args.out)
    work = Path(args.work) if args.work else out.parent / ".bench_work"
    results = bench(cases, hw, strategies, args.top_k, args.plans, max(args.reps, 50), args.seed, work,
                    graph_launch=args.graph_launch)
    if args.ncu:
        from fusesim.gpu.ncu import ncu_best

        for c in results:
            ncu_best(c, work)
    doc = {"what": "fusesim bench: generated kernels vs PyTorch, bf16, L2 flushed before every launch",
           "env": environment(), "codegen": codegen_switches(), "workload": wl.name, "hw": hw.name,
           "strategies": list(strategies),
           "top_k": args.top_k, "plans_source": args.plans, "reps": max(args.reps, 50), "seed": args.seed,
           "graph_launch": args.graph_launch, "summary": best_rows(results), "cases": results}
    atomic_write(out, json.dumps(doc, indent=1))
    if args.format == "json":
        json.dump(doc["summary"], sys.stdout, indent=2)
        return 0
    rows = [[r["case"], r["best_strategy"] or "-", r["verified"], r["best_us"] or float("nan"),
             r["eager_us"] or float("nan"), r["graph_us"] or float("nan"),
             (r["eager_us"] / r["best_us"]) if r["best_us"] and r["eager_us"] else float("nan"),
             (r["graph_us"] / r["best_us"]) if r["best_us"] and r["graph_us"] else float("nan")]
            for r in doc["summary"]]
    head = ["case", "best", "ok", "ours us", "eager us", "graph us", "x eager", "x graph"]
    if args.graph_launch:  # the same best plan replayed from a CUDA graph, beside PyTorch's graphs
        head.append("ours as graph us")
        for row, r in zip(rows, doc["summary"], strict=True):
            row.append(r["best_graph_us"] or float("nan"))
    print(table(head, rows, title=f"{wl.name} on {doc['env']['gpu']} -> {out}"))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Stand-alone entry (python -m fusesim.commands.bench ...): needs no other subcommand to import."""
    parser = argparse.ArgumentParser(prog="fusesim")
    register(parser.add_subparsers(dest="cmd"))
    args = parser.parse_args(["bench", *(sys.argv[1:] if argv is None else argv)])
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
