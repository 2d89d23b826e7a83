"""Verify and time the gemm_wgmma family (TMA + wgmma, split-K) on the GPU.

    python3 -m fusesim.gpu.wgmma_check --out FILE.json [--reps 30] [--torch] [--only G5,S1] [--plans-from OLD.json]

Every wgmma hand plan (fusesim.codegen.handplans.wgmma_candidates) of the paper's GEMM-chain and
gated-FFN cases, plus odd-M chains (predicated rows, split-K with predicated rows, each activation):
built (cache), verified against float32 PyTorch (fresh inputs, NaN-poisoned output, two launches so
the self-cleaning split-K workspace is checked, rel. Frobenius < 1e-2, launch flag clear), then
timed (CUDA events, L2 flushed). `--torch` adds PyTorch eager and CUDA-graph times per paper case.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fusesim.capability import can_build, kernel_split
from fusesim.codegen.handplans import unfused_wgmma, wgmma_candidates
from fusesim.gpu.oddshapes import _ffn
from fusesim.plan import Plan
from fusesim.stored import read_json
from fusesim.workload import Chain, load_workload

WORKLOADS = ("workloads/paper_gemm_chains.yaml", "workloads/paper_gated_ffn.yaml")
HBM_GBPS = 4300.0  # the floor's bandwidth (benchmarks/kernels.md: Chain.floor_ns on hw_configs/h200.yaml)

ODD_CHAINS = (
    _ffn("wg-m80", 80, 1024, 512, 768, "relu"),
    _ffn("wg-m200", 200, 2048, 1024, 512, "gelu"),
    _ffn("wg-m1", 1, 512, 256, 256, "silu"),
    _ffn("wg-none-m33", 33, 256, 128, 128, "none"),
    _ffn("wg-gated-m77", 77, 768, 256, 512, gated=True),
    _ffn("wg-gated-m200", 200, 1024, 512, 256, gated=True),
)


def odd_plans(ch: Chain) -> list[Plan]:
    """Predicated M with 64- and 128-row tiles, with and without split-K in both GEMMs."""
    specs = ((64, 64, 3, 1, 1), (64, 128, 4, 2, 2), (128, 64, 4, 2, 4), (128, 128, 2, 1, 2))
    out = []
    for bm, bn, st, s0, s1 in specs:
        p = unfused_wgmma(ch, bm, bn, st, s0, s1)
        if can_build(p)[0]:
            out.append(p)
    return out


def planner_plan(ch: Chain) -> list[Plan]:
    """The planner's best unfused plan when it is a wgmma one (what `fusesim plan` emits)."""
    from fusesim.hardware import load_hardware
    from fusesim.planner import plan_case

    res = plan_case(ch, load_hardware("hw_configs/h200.yaml"), strategies=("unfused",), top_k=1)
    return [sp.plan for sp in res.plans.get("unfused", []) if sp.plan.instruction == "wgmma" and sp.plan.buildable]


def all_plans(only: set[str] | None, per_case: int = 99) -> list[tuple[Chain, Plan, str]]:
    out: list[tuple[Chain, Plan, str]] = []
    for wl in WORKLOADS:
        for ch in load_workload(wl).cases:
            if only and ch.case_id not in only:
                continue
            out += [(ch, p, "planner") for p in planner_plan(ch)]
            out += [(ch, p, "paper") for p in wgmma_candidates(ch)[:per_case]]
    for ch in ODD_CHAINS:
        if only and ch.case_id not in only:
            continue
        out += [(ch, p, "odd") for p in odd_plans(ch)[:per_case]]
    return out


def describe(plan: Plan) -> str:
    ch = plan.chain
    k0, k1 = plan.kernels
    s0, s1 = kernel_split(k0, ch.m, ch.n), kernel_split(k1, ch.m, ch.l)
    t0, t1 = k0.tiles, k1.tiles
    return (f"g0 {t0.block_m}x{t0.block_n} st{k0.stages} sk{s0} ({k0.grid_blocks} blk) | "
            f"g1 {t1.block_m}x{t1.block_n} st{k1.stages} sk{s1} ({k1.grid_blocks} blk)")


def _torch(ch: Chain, flush: Any, reps: int) -> dict[str, Any]:
    from fusesim.gpu.baseline import RawCase, measure_case

    rc = RawCase(ch.case_id, ch.kind, ch.m, ch.n, ch.k, ch.l, ch.activation, ch.gated, None)
    return measure_case(rc, flush, reps)


def describe_any(plan: Plan) -> str:
    return describe(plan) if plan.strategy == "unfused" else f"{plan.instruction} {plan.summary()}"


def run(items: list[tuple[Chain, Plan, str]], reps: int, seed: int, torch_cases: bool,
        partial: Path | None = None) -> list[dict[str, Any]]:
    """Build, verify and time every (chain, plan, kind). With `partial`, rows are written after each
    plan and a re-run resumes after them; a plan whose launch hangs is recorded as such (the
    process exits with code 7 so that a driver loop re-runs the rest)."""
    import os

    import torch

    from fusesim.gpu.bench import build_all
    from fusesim.gpu.runner import KernelError, KernelHung, Loaded, time_kernel, verify
    from fusesim.gpu.timing import L2Flusher

    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    flush = L2Flusher()
    rows: list[dict[str, Any]] = read_json(partial) if partial is not None and partial.exists() else []
    marker = partial.with_suffix(".current") if partial is not None else None
    if marker is not None and marker.exists():  # the previous process died on this plan
        rows.append(read_json(marker) | {"run_error": "hung: launch did not complete (process killed)"})
        marker.unlink()
    done = len(rows)
    built = build_all([p for _, p, _ in items[done:]], jobs=16)
    torch_done: set[str] = {r["case"] for r in rows if "pytorch" in r}
    for i, ((ch, plan, kind), (so, err)) in enumerate(zip(items[done:], built, strict=True), start=done):
        row: dict[str, Any] = {"case": ch.case_id, "kind": kind, "summary": f"{kind[:3]} {describe_any(plan)}",
                               "build_error": err, "floor_us": ch.min_bytes / HBM_GBPS / 1e3, "plan": plan.to_dict()}
        if so:
            if marker is not None:
                marker.write_text(json.dumps(row))
            try:
                kern = Loaded(Path(so))
                row["verify"] = verify(kern, ch, seed=seed + i)
                if row["verify"]["ok"] and kind != "odd":
                    row["time"] = time_kernel(kern, ch, flush, reps)
            except KernelHung as exc:
                print(f"{ch.case_id}: {row['summary']}: {exc}; exiting for a re-run", flush=True)
                os._exit(7)
            except KernelError as exc:
                row["run_error"] = str(exc)
            if marker is not None:
                marker.unlink()
        if torch_cases and kind != "odd" and ch.case_id not in torch_done:
            torch_done.add(ch.case_id)
            row["pytorch"] = _torch(ch, flush, reps)
        rows.append(row)
        if partial is not None:  # a hung kernel still leaves every row measured before it
            partial.write_text(json.dumps(rows))
        v, t = row.get("verify", {}), row.get("time", {})
        print(f"{ch.case_id:14s} {row['summary']:70s} ok={v.get('ok')} err={v.get('rel_err', float('nan')):.1e} "
              f"t={t.get('queued_median_us', float('nan')):8.2f} us floor={row['floor_us']:6.2f}"
              f" {(row.get('run_error') or err or '')[:80]}", flush=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per paper case: the fastest verified wgmma plan next to its floor and PyTorch, and the
    planner's pick (kind "planner")."""
    best: dict[str, dict[str, Any]] = {}
    graphs: dict[str, float] = {}
    planner: dict[str, float] = {}
    for r in rows:
        if "pytorch" in r:
            graphs[r["case"]] = r["pytorch"]["graph"]["queued_median_us"]
        t = r.get("time", {}).get("queued_median_us")
        if t is not None and (r["case"] not in best or t < best[r["case"]]["us"]):
            best[r["case"]] = {"case": r["case"], "us": t, "floor_us": r["floor_us"], "plan": r["summary"]}
        if t is not None and r["kind"] == "planner":
            planner[r["case"]] = t
    out = []
    for cid, b in best.items():
        b["x_floor"] = b["us"] / b["floor_us"]
        if cid in graphs:
            b["torch_graph_us"] = graphs[cid]
        if cid in planner:
            b["planner_us"] = planner[cid]
        out.append(b)
    return out


def check_parser(doc: str, seed: int, per_case: int) -> argparse.ArgumentParser:
    """The arguments every device check shares (this one and fusesim.gpu.fused_wgmma_check)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--seed", type=int, default=seed)
    p.add_argument("--torch", action="store_true", help="time PyTorch eager and CUDA graphs per case too")
    p.add_argument("--only", default="", help="comma-separated case ids")
    p.add_argument("--per-case", type=int, default=per_case)
    return p


def write_check(out: str, what: str, module: str, argv: list[str] | None, rows: list[dict[str, Any]],
                best: list[dict[str, Any]], label: str) -> int:
    """Write a device check's JSON (what, command, env, pass count, per-case best, rows), print the
    verified count; 0 when every plan verified."""
    from fusesim.capability import codegen_switches
    from fusesim.gpu.env import environment

    passed = sum(1 for r in rows if r.get("verify", {}).get("ok"))
    doc = {"what": what, "command": " ".join([f"python3 -m {module}", *(argv or sys.argv[1:])]),
           "env": environment(), "codegen": codegen_switches(), "passed": passed, "total": len(rows), "best": best, "rows": rows}
    Path(out).write_text(json.dumps(doc, indent=1))
    print(f"{label}: {passed}/{len(rows)} verified")
    return 0 if passed == len(rows) else 1


def recorded_plans(path: str, only: set[str] | None) -> list[tuple[Chain, Plan, str]]:
    """The exact plans of an earlier check's rows (its JSON), to time them again with today's template."""
    rows = read_json(path)["rows"]
    plans = [(Plan.from_dict(r["plan"]), r.get("kind", "recorded")) for r in rows if r.get("plan")]
    return [(p.chain, p, kind) for p, kind in plans if not only or p.case_id in only]


def main(argv: list[str] | None = None) -> int:
    ap = check_parser(__doc__, 202, 99)
    ap.add_argument("--plans-from", default="", help="an earlier check's JSON: time exactly its plans again")
    args = ap.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    items = recorded_plans(args.plans_from, only) if args.plans_from else all_plans(only, args.per_case)
    rows = run(items, args.reps, args.seed, args.torch, Path(args.out + ".partial"))
    best = summary(rows)
    print("\ncase      best us   floor us  x floor  torch graphs us  planner us  plan")
    for b in best:
        print(f"{b['case']:8s} {b['us']:9.2f} {b['floor_us']:9.2f} {b['x_floor']:7.2f} "
              f"{b.get('torch_graph_us', float('nan')):12.2f} {b.get('planner_us', float('nan')):11.2f}  {b['plan']}")
    return write_check(args.out, "gemm_wgmma (TMA + wgmma + split-K) unfused plans: verification vs float32 "
                       "PyTorch (rel. Frobenius < 1e-2, 2 launches) and timing (CUDA events, L2 flushed, queued "
                       "median)", "fusesim.gpu.wgmma_check", argv, rows, best, "wgmma check")


if __name__ == "__main__":
    sys.exit(main())
