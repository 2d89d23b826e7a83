"""`fusesim plan WORKLOAD --hw HW`: the planner's best plans per strategy, and its Table III counts."""

from __future__ import annotations

import argparse
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

STRATEGY_CHOICES = ("unfused", "smem", "dsm", "best")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plan", help="search fusion plans (unfused / smem / dsm / best) for each case")
    p.add_argument("workload", help="workload YAML (or the name of a shipped one)")
    add_hw(p)
    p.add_argument("--case", action="append", metavar="ID", help="only this case (repeatable)")
    p.add_argument("--strategy", action="append", choices=STRATEGY_CHOICES,
                   help="strategy to plan (repeatable; default: all four)")
    p.add_argument("--top-k", type=int, default=1, help="plans per strategy, best first (default 1)")
    add_rank(p)
    p.add_argument("--require-buildable", action="store_true",
                   help="only plans the code generator can build (capability.can_build)")
    add_format(p)
    p.set_defaults(func=run)


def plan_entry(group: str, sp: Any, rank: int, hw: Any) -> dict[str, Any]:
    """One plan in the stable JSON form (DESIGN.md), plus the full Plan under "plan"."""
    from fusesim.planner.dataflow import intermediate_tiers

    p, pred = sp.plan, sp.predicted
    t = p.tiles
    return {
        "strategy": group,
        "plan_strategy": p.strategy,
        "rank": rank,
        "cluster": p.cluster.as_dict(),
        "tiles": {"block_m": t.block_m, "block_n": t.block_n, "block_k": t.block_k, "block_l": t.block_l},
        "schedule": {"order": p.schedule.order, "spatial": p.schedule.spatial},
        "placement": dict(vars(p.placement)),
        "intermediate_bytes": intermediate_tiers(p, hw),
        "grid_m": p.grid_m, "n_split": p.n_split, "n_passes": p.n_passes, "stages": p.stages, "threads": p.threads,
        "instruction": p.instruction, "gated_mode": p.gated_mode,
        "dsm_comm": [dict(vars(s)) for s in p.dsm_comm],
        "predicted": {"time_us": pred.time_us, "bytes": dict(pred.bytes), "bound": pred.bound},
        "simulated_us": None if sp.simulated_ns is None else sp.simulated_ns / 1e3,
        "buildable": p.buildable,
        "notes": list(p.notes),
        "plan": p.to_dict(),
    }


def case_entry(res: Any, strategies: tuple[str, ...], hw: Any) -> dict[str, Any]:
    plans = [plan_entry(s, sp, i + 1, hw) for s in strategies for i, sp in enumerate(res.plans.get(s, []))]
    st = res.search
    return {
        "case": res.case_id,
        "plans": plans,
        "infeasible": {s: r for s, r in res.infeasible.items() if s in strategies},
        "search": {"candidates": st.candidates, "after_rule": [[n, c] for n, c in st.after_rule],
                   "seconds": st.seconds, "evaluated": st.evaluated, "by_strategy": dict(st.by_strategy)},
    }


def _mb(x: float) -> float:
    return x / 1e6


def _rules_table(entries: list[dict[str, Any]], hw_name: str) -> str:
    # the rules any case ran (a case the planner rejects before the search, e.g. N not a multiple of 16, ran none)
    names = list(dict.fromkeys(n for e in entries for n, _ in e["search"]["after_rule"]))
    short = ["1 tiles", "2 cluster", "3 K inner", "4 L temporal", "5 capacity", "executable"]
    headers = ["case", "candidates"] + [short[i] if i < len(short) else n for i, n in enumerate(names)] + ["scored", "seconds"]
    rows = []
    for e in entries:
        prev, after = e["search"]["candidates"], dict(e["search"]["after_rule"])
        cells = []
        for n in names:
            if n not in after:
                cells.append("-")
                continue
            c = after[n]
            if not prev:
                cells.append("0")
            else:  # one decimal where a whole percent would round to 100 while plans remain
                cut = 100 * (1 - c / prev)
                cells.append(f"{c:.3g} (-{cut:.{1 if c and cut >= 99.5 else 0}f}%)")
            prev = c
        rows.append([e["case"], f"{e['search']['candidates']:.3g}"] + cells
                    + [e["search"]["evaluated"], e["search"]["seconds"]])
    legend = "; ".join(names) or "none ran (every case rejected before the search: see each case below)"
    return table(headers, rows, title=f"Candidates and survivors after each pruning rule (Table III) on {hw_name}\n"
                                      f"rules: {legend}")


def _plans_table(e: dict[str, Any]) -> str:
    rows = []
    for p in e["plans"]:
        c, t, pr = p["cluster"], p["tiles"], p["predicted"]
        rows.append([p["strategy"], p["rank"], p["plan_strategy"], f"({c['m']},{c['n']},{c['k']},{c['l']})",
                     f"{t['block_m']}x{t['block_n']}x{t['block_k']}x{t['block_l']}",
                     f"{p['grid_m']}x{p['n_split']}" if p["plan_strategy"] != "unfused" else "2 kernels",
                     p["n_passes"], p["stages"], p["threads"], p["instruction"], "yes" if p["buildable"] else "no",
                     pr["time_us"], "-" if p["simulated_us"] is None else p["simulated_us"], pr["bound"],
                     _mb(pr["bytes"]["hbm"]), _mb(pr["bytes"]["l2"]), _mb(pr["bytes"]["dsm"])])
    out = table(["strategy", "#", "kind", "cluster mnkl", "tiles m n k l", "grid", "passes", "stages", "threads",
                 "instr", "build", "pred us", "sim us", "bound", "pred HBM MB", "pred L2 MB", "pred DSM MB"], rows,
                title=f"case {e['case']} (pred: the cost model's time, bound and bytes; sim us: the simulator's time)")
    for s, why in e["infeasible"].items():
        out += f"\n  {s}: infeasible: {why}"
    return out


def run(args: argparse.Namespace) -> int:
    from fusesim.planner import plan_case

    if args.top_k < 1:
        raise InputError(None, "--top-k", f"must be at least 1 (got {args.top_k})")
    wl = workload_arg(args.workload)
    hw = hardware_arg(args.hw)
    strategies = tuple(dict.fromkeys(args.strategy or STRATEGY_CHOICES))
    entries = []
    for chain in wl.select(args.case):
        res = plan_case(chain, hw, strategies=strategies, top_k=args.top_k, require_buildable=args.require_buildable,
                        rank=args.rank)
        entries.append(case_entry(res, strategies, hw))
    if args.format == "json":
        print_json({"workload": wl.name, "hw": hw.name, "rank": args.rank, "cases": entries})
        return 0
    print(_rules_table(entries, hw.name))
    for e in entries:
        print()
        print(_plans_table(e))
    return 0
