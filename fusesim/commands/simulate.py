"""`fusesim simulate WORKLOAD... --hw HW`: plan each case, run the plans on the SimPy machine
(`--plan PLAN.json ...` instead: run those plans, checked against the hardware first).

Without --strategy every case runs unfused, smem and dsm, and the table shows the speedup of the
best fused plan over unfused. Each strategy runs its fastest plan by simulation among the candidates
`best` simulates (`--rank simulated`, the default), or the cost model's top plan (`--rank cost`).
The planner is imported lazily (it pulls numpy); so is the simulator.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fusesim.commands.common import (
    add_format,
    add_hw,
    add_rank,
    hardware_arg,
    print_json,
    table,
    workload_arg,
)
from fusesim.errors import InputError
from fusesim.yamlio import atomic_write, check_writable

STRATEGY_CHOICES = ("unfused", "smem", "dsm", "best")
RANK_TITLE = {"simulated": "each strategy's fastest simulated plan", "cost": "each strategy's top plan by the cost model"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("simulate", help="simulate the planned kernels of workload cases on a hardware description")
    p.add_argument("workload", nargs="*", help="workload YAML(s) (e.g. workloads/paper_gemm_chains.yaml)")
    p.add_argument("--plan", action="append", metavar="PLAN.json",
                   help="simulate this plan file instead of planning (repeatable; codegen's NAME.plan.json, one "
                        "`plan` entry of `fusesim plan --format json` saved alone, or by hand; checked against --hw "
                        "first)")
    add_hw(p)
    p.add_argument("--case", action="append", metavar="ID", help="only these case ids (repeatable)")
    p.add_argument("--strategy", choices=STRATEGY_CHOICES, action="append",
                   help="a strategy (repeatable; 'best' = the planner's fastest); default: unfused, smem and dsm")
    add_rank(p)
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="simulate N (case, strategy) pairs at a time in worker processes (default 1)")
    p.add_argument("--trace", metavar="FILE.json", help="write a Chrome/Perfetto trace of every simulated plan")
    add_format(p)
    p.set_defaults(func=run)


def _plan_jobs(args: argparse.Namespace, hw: Any) -> list[tuple[Any, str, Any]]:
    """(chain, strategy, plan) of each --plan file, each checked against the hardware (one line if not)."""
    from fusesim.plancheck import load_plan

    if args.workload:
        raise InputError("<command line>", "--plan", "give workload files or --plan files, not both")
    for flag, value in (("--case", args.case), ("--strategy", args.strategy)):
        if value:
            raise InputError("<command line>", flag, "selects among a workload's cases; a plan file is one plan")
    plans = [load_plan(path, hw) for path in args.plan]
    chains: dict[str, tuple[Any, str]] = {}  # the rows' speedups are keyed by case id: one chain per id
    for path, p in zip(args.plan, plans, strict=True):
        seen = chains.setdefault(p.case_id, (p.chain, path))
        if seen[0] != p.chain:
            raise InputError(path, "chain", f"case {p.case_id!r} has another shape in {seen[1]}: give the plans of "
                             "different problems different case_ids", case=p.case_id)
    return [(p.chain, p.strategy, p) for p in plans]


def _jobs(args: argparse.Namespace) -> list[tuple[Any, str]]:
    if not args.workload:
        raise InputError("<command line>", "workload", "give one or more workload files (or --plan files)")
    chains = []
    first: dict[str, str] = {}  # case id -> the file it came from: the rows (and speedups) are keyed by id
    for path in args.workload:
        wl = workload_arg(path)
        chosen = [c for c in wl.cases if not args.case or c.case_id in args.case]
        for c in chosen:
            if c.case_id in first:
                raise InputError(path, "id", f"case {c.case_id!r} is also in {first[c.case_id]}: ids must differ "
                                 "across the files of one command", case=c.case_id)
            first[c.case_id] = path
        chains += chosen
    if args.case:
        have = {c.case_id for c in chains}
        missing = [i for i in args.case if i not in have]
        if missing:
            raise InputError(", ".join(args.workload), "id", f"no case {missing[0]!r}", case=missing[0])
    strategies = list(dict.fromkeys(args.strategy)) if args.strategy else ["unfused", "smem", "dsm"]
    return [(c, s) for c in chains for s in strategies]


def _plan(chain: Any, hw: Any, strategy: str, rank: str) -> tuple[Any, float | None, str | None]:
    """(plan, planner-predicted ns, reason if infeasible)."""
    from fusesim.planner import plan_case

    if strategy == "best":
        res = plan_case(chain, hw, strategies=("best",), top_k=1)
        if not res.plans.get("best"):
            return None, None, res.infeasible.get("best", "no feasible plan")
        sp = res.plans["best"][0]
        return sp.plan, sp.predicted.time_ns, None
    res = plan_case(chain, hw, strategies=(strategy,), top_k=1, rank=rank)
    scored = res.plans.get(strategy) or []
    if not scored:
        return None, None, res.infeasible.get(strategy, "no feasible plan")
    return scored[0].plan, scored[0].predicted.time_ns, None


def _simulate_job(job: tuple[Any, Any, str, str, bool, Any]) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """Plan and simulate one (case, strategy), or simulate a given plan: its result row and, when asked, its
    trace. A top-level function of plain arguments, so that worker processes can run it (`--jobs`)."""
    from fusesim.sim import simulate

    chain, hw, strategy, rank, want_trace, given = job
    if given is None:
        plan, predicted_ns, reason = _plan(chain, hw, strategy, rank)
    else:  # a plan file: the cost model's time for it, as the planner would have predicted
        from fusesim.planner.cost import predict

        plan, predicted_ns, reason = given, predict(given, hw).time_ns, None
    row: dict[str, Any] = {"case": chain.case_id, "strategy": strategy}
    if plan is None:
        row.update(infeasible=reason)
        return row, None
    r = simulate(plan, hw, trace=want_trace)
    if strategy == "best":
        row["plan_strategy"] = plan.strategy
    row.update({
        "time_us": r.time_us,
        "bytes": r.bytes,
        "drain_bytes": r.drain_bytes,  # outputs written back to HBM after the last kernel (not in bytes.hbm_write)
        "utilization": r.utilization,
        "sim": {"events": r.events, "wall_s": r.wall_s},
        "predicted_time_us": predicted_ns / 1e3 if predicted_ns is not None else None,
        "floor_us": chain.floor_ns(hw, plan.instruction) / 1e3,
        "plan": plan.summary(),
        "instruction": plan.instruction,
    })
    return row, r.trace


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    if args.jobs < 1:
        raise InputError("<command line>", "--jobs", f"must be at least 1 (got {args.jobs})")
    hw = hardware_arg(args.hw)
    if args.trace:
        check_writable(args.trace, "--trace")
    if args.plan:
        jobs = [(chain, hw, strategy, args.rank, bool(args.trace), plan) for chain, strategy, plan in _plan_jobs(args, hw)]
    else:
        jobs = [(chain, hw, strategy, args.rank, bool(args.trace), None) for chain, strategy in _jobs(args)]
    bar = tqdm(total=len(jobs), desc="simulate", unit="plan", file=sys.stderr, disable=not sys.stderr.isatty())
    if args.jobs == 1 or len(jobs) < 2:
        done = []
        for job in jobs:
            bar.set_postfix_str(f"{job[0].case_id} {job[2]}")
            done.append(_simulate_job(job))
            bar.update()
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(args.jobs, len(jobs))) as pool:
            done = []
            for out in pool.map(_simulate_job, jobs):  # in order: the same rows as one process gives
                done.append(out)
                bar.update()
    bar.close()
    results = [row for row, _trace in done]
    traces = [(f"{row['case']} {row.get('plan_strategy', row['strategy'])}", trace)
              for row, trace in done if trace is not None]
    _speedups(results)
    if args.trace:
        atomic_write(args.trace, _merge_traces(traces))
    if args.format == "json":
        print_json({"hw": hw.name, "rank": None if args.plan else args.rank, "results": results})
        return 0
    rows, cut = [], []
    for r in results:
        if "infeasible" in r:
            why = r["infeasible"]
            if len(why) > 60:
                cut.append(f"  {r['case']} {r['strategy']}: infeasible: {why}")
                why = why[:57] + "..."
            rows.append([r["case"], r["strategy"], "-", "-", "-", "-", "-", "-", "-", "infeasible: " + why])
            continue
        b = r["bytes"]
        rows.append([r["case"], r.get("plan_strategy", r["strategy"]), r["time_us"],
                     r["predicted_time_us"] if r["predicted_time_us"] is not None else "-", r["floor_us"],
                     (b["hbm_read"] + b["hbm_write"] + r["drain_bytes"]) / 1e6, (b["l2_read"] + b["l2_write"]) / 1e6,
                     b["dsm"] / 1e6,
                     f"{r['speedup_vs_unfused']:.2f}x" if r.get("speedup_vs_unfused") else "",
                     f"{r['plan']}, {r['instruction']}"])
    print(table(["case", "strategy", "sim us", "pred us", "floor us", "HBM MB", "L2 MB", "DSM MB", "vs unfused", "plan"],
                rows, title=f"simulated on {hw.name}, {'the given plan files' if args.plan else RANK_TITLE[args.rank]} (pred = planner cost model; "
                            "floor = max(FLOPs/peak, min bytes/HBM); HBM MB: reads, writes and the outputs' "
                            "write-back after the last kernel)"))
    if cut:
        print("\n".join(cut))
    best = [r for r in results if r.get("best_fused")]
    if best:
        print()
        print("best fused vs unfused: " + ", ".join(f"{r['case']} {r['speedup_vs_unfused']:.2f}x ({r['strategy']})"
                                                    for r in best))
    return 0


def _speedups(results: list[dict[str, Any]]) -> None:
    """speedup_vs_unfused on fused rows; best_fused marks each case's fastest fused row."""
    unfused = {r["case"]: r["time_us"] for r in results if r["strategy"] == "unfused" and "time_us" in r}
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if "time_us" in r and r["case"] in unfused and r["strategy"] != "unfused":
            r["speedup_vs_unfused"] = unfused[r["case"]] / r["time_us"]
            by_case.setdefault(r["case"], []).append(r)
    for rows in by_case.values():
        min(rows, key=lambda r: r["time_us"])["best_fused"] = True


def _merge_traces(traces: list[tuple[str, list[dict[str, Any]]]]) -> str:
    """One trace file: each simulated plan becomes its own pair of processes (launcher, GPU)."""
    import json

    events: list[dict[str, Any]] = []
    for i, (label, trace) in enumerate(traces):
        for ev in trace:
            ev = dict(ev)
            ev["pid"] = 2 * i + ev.get("pid", 0)
            if ev.get("name") == "process_name":
                ev["args"] = {"name": f"{label}: {ev['args']['name']}"}
            events.append(ev)
    return json.dumps({"traceEvents": events, "displayTimeUnit": "ns"})
