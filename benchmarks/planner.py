"""Planner benchmark: per paper case, candidates, survivors after each rule, search seconds (cold),
and the predicted global-memory traffic (L2 + HBM) of the best plan against the unfused baseline.

    python benchmarks/planner.py [--hw h100_sxm --hw h200] [--json]

The traffic summary is what the README reports next to the paper's "PyTorch moves 2.4x more
global-memory bytes (58% less with FlashFuser)".
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fusesim.hardware import load_hardware  # noqa: E402
from fusesim.planner.search import run_search  # noqa: E402
from fusesim.workload import load_workload  # noqa: E402

WORKLOADS = ("paper_gemm_chains", "paper_gated_ffn", "paper_conv_chains")
STRATEGIES = ("unfused", "smem", "dsm")


def bench_case(chain, hw) -> dict:  # noqa: ANN001
    t0 = time.perf_counter()
    res = run_search(chain, hw, STRATEGIES, 1, False)  # uncached: the real search time
    wall = time.perf_counter() - t0
    best = min((v[0] for v in res.plans.values() if v), key=lambda sp: sp.predicted.time_ns)
    unf = res.plans["unfused"][0]

    def glob(sp) -> float:  # noqa: ANN001
        return sp.predicted.bytes["l2"] + sp.predicted.bytes["hbm"]

    dsm = res.plans.get("dsm", [None])[0]
    return {
        "case": chain.case_id, "candidates": res.search.candidates,
        "after_rule": [[n, c] for n, c in res.search.after_rule], "scored": res.search.evaluated,
        "seconds": wall, "best_strategy": best.plan.strategy, "best_us": best.predicted.time_us,
        "unfused_us": unf.predicted.time_us, "dsm_us": dsm.predicted.time_us if dsm else None,
        "smem": "ok" if res.plans.get("smem") else "infeasible",
        "best_global_bytes": glob(best), "unfused_global_bytes": glob(unf),
        "dsm_global_bytes": glob(dsm) if dsm else None,
        "traffic_ratio": glob(unf) / glob(best),
    }


def summary(rows: list[dict], prefixes: tuple[str, ...]) -> dict:
    sel = [r for r in rows if r["case"].startswith(prefixes)]
    ratios = [r["traffic_ratio"] for r in sel]
    tot_unf = sum(r["unfused_global_bytes"] for r in sel)
    tot_best = sum(r["best_global_bytes"] for r in sel)
    return {"cases": len(sel), "mean_ratio_unfused_over_best": statistics.mean(ratios),
            "mean_reduction": statistics.mean(1 - 1 / x for x in ratios),
            "total_ratio": tot_unf / tot_best, "mean_speedup": statistics.mean(r["unfused_us"] / r["best_us"] for r in sel)}


PAPER_TABLE_III = (("candidates", 2.75e13), ("1 tiles divide", 1.14e8), ("2 cluster fits", 2.47e7),
                   ("3 K innermost", 1.44e7), ("4 L not spatial", 9.62e6), ("5 fits capacity", 1.15e6))


def table_iii(hw) -> list[tuple[str, float, int]]:  # noqa: ANN001
    """The paper's GPT-6.7B space (M=256, N=16384, K=L=4096) counted by our rules, next to Table III."""
    from fusesim.planner.rules import apply_rules
    from fusesim.planner.space import Space
    from fusesim.workload import Chain

    ch = Chain("GPT-6.7B", "ffn", 256, 16384, 4096, 4096, "gelu", False)
    raw, after, _ = apply_rules(Space(ch, hw))
    ours = [raw] + [c for _, c in after[:5]]
    return [(name, paper, mine) for (name, paper), mine in zip(PAPER_TABLE_III, ours, strict=True)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hw", action="append", help="hardware (default h100_sxm and h200)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = {}
    chains = [c for w in WORKLOADS for c in load_workload(ROOT / "workloads" / f"{w}.yaml").cases]
    for name in args.hw or ["h100_sxm", "h200"]:
        hw = load_hardware(ROOT / "hw_configs" / f"{name}.yaml")
        rows = [bench_case(c, hw) for c in chains]
        summ = {"G+C": summary(rows, ("G", "C")), "G": summary(rows, ("G",)), "C": summary(rows, ("C",)),
                "S": summary(rows, ("S",)), "max_seconds": max(r["seconds"] for r in rows),
                "mean_seconds": statistics.mean(r["seconds"] for r in rows)}
        out[name] = {"cases": rows, "summary": summ,
                     "table_iii_gpt_6.7b": [{"rule": r, "paper": p, "ours": o} for r, p, o in table_iii(hw)]}
        if args.json:
            continue
        names = [n.split(" ")[0] for n, _ in rows[0]["after_rule"]]
        print(f"== {name}: candidates and survivors per rule (Table III), search seconds (one core, cold)")
        head = ["case", "candidates"] + [f"r{n}" if n.isdigit() else n[:4] for n in names] + [
            "scored", "s", "best", "best us", "unf us", "dsm us", "smem", "L2+HBM unf/best"]
        print("  ".join(f"{h:>9}" for h in head))
        for r in rows:
            vals = [r["case"], f"{r['candidates']:.2e}"] + [f"{c:.2e}" for _, c in r["after_rule"]] + [
                r["scored"], f"{r['seconds']:.3f}", r["best_strategy"], f"{r['best_us']:.2f}",
                f"{r['unfused_us']:.2f}", f"{r['dsm_us']:.2f}" if r["dsm_us"] else "-", r["smem"],
                f"{r['traffic_ratio']:.2f}x"]
            print("  ".join(f"{v:>9}" for v in vals))
        for key in ("G+C", "G", "C", "S"):
            s = summ[key]
            print(f"{key:>4}: unfused moves {s['mean_ratio_unfused_over_best']:.2f}x the global bytes (L2+HBM) of "
                  f"the best plan on average ({100 * s['mean_reduction']:.0f}% less; ratio of totals "
                  f"{s['total_ratio']:.2f}x); mean predicted speedup {s['mean_speedup']:.2f}x "
                  f"[paper, G+C vs PyTorch: 2.4x, 58% less]")
        print(f"search seconds: max {summ['max_seconds']:.3f}, mean {summ['mean_seconds']:.3f}")
        print("Table III, GPT-6.7B (M=256): rule, paper survivors, ours")
        for rule, paper, mine in table_iii(hw):
            print(f"  {rule:18s} {paper:10.3g} {mine:10.3g}")
        print()
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
