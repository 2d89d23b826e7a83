"""Verify and time the fused_wgmma family (TMA + wgmma fused kernels, dsm_comm by st.async and bulk
DSM copies) on the GPU, next to each case's best earlier kernel and PyTorch, in one run.

    python3 -m fusesim.gpu.fused_wgmma_check --out FILE.json [--reps 30] [--torch] [--only G1,C3]
                                             [--per-case 6] [--ref results/h200/final_paper_*.json]

Per paper case without a 3x3 conv: the fused_wgmma hand candidates
(fusesim.codegen.handplans.fused_wgmma_candidates), plus odd shapes (predicated M, a K tail past the
last k tile, each gated form and dsm_comm form), plus (kind "ref") the fastest verified plan of the
case in the given earlier bench JSONs, re-timed in this run. Each plan is built (cache), verified
against float32 PyTorch (fresh inputs, NaN-poisoned output, two launches for the self-cleaning
workspace, rel. Frobenius < 1e-2, launch flag clear) and timed (CUDA events, L2 flushed).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fusesim.codegen.handplans import fused, fused_wgmma_candidates
from fusesim.gpu.oddshapes import _ffn
from fusesim.gpu.wgmma_check import check_parser, run, summary, write_check
from fusesim.plan import ClusterShape, Plan
from fusesim.stored import read_json
from fusesim.workload import Chain, load_workload

WORKLOADS = ("workloads/paper_gemm_chains.yaml", "workloads/paper_gated_ffn.yaml", "workloads/paper_conv_chains.yaml")


def odd_items() -> list[tuple[Chain, Plan, str]]:
    """Predicated M (M = 1, 77, 200), a K tail (K = 40, 200), every dsm_comm form, both gated forms."""
    specs = (
        (_ffn("fw-m77-k40", 77, 512, 40, 256, "relu"), ClusterShape(1, 1, 1, 1), 64, 64, "none"),
        (_ffn("fw-m1-tail", 1, 256, 200, 128, "silu"), ClusterShape(1, 2, 1, 2), 64, 64, "none"),
        (_ffn("fw-m200-exch", 200, 1024, 512, 256, "gelu"), ClusterShape(1, 4, 4, 4), 64, 64, "none"),
        (_ffn("fw-m200-shuf", 200, 1024, 512, 512, "none"), ClusterShape(1, 4, 1, 4), 128, 64, "none"),
        (_ffn("fw-red-bn128", 130, 2048, 256, 256, "relu"), ClusterShape(1, 8, 1, 2), 128, 128, "none"),
        (_ffn("fw-c16", 96, 2048, 256, 1024, "gelu"), ClusterShape(1, 16, 1, 16), 64, 64, "none"),
        (_ffn("fw-gated-seq", 77, 1024, 256, 256, gated=True), ClusterShape(1, 2, 2, 2), 64, 64, "sequential"),
        (_ffn("fw-gated-mul", 77, 1024, 256, 256, gated=True), ClusterShape(1, 2, 2, 4), 64, 64, "mul_exchange"),
        (_ffn("fw-gated-smem", 33, 512, 320, 256, gated=True), ClusterShape(1, 1, 1, 1), 128, 128, "sequential"),
    )
    out = []
    for ch, cs, bm, bn, gm in specs:
        n_split = ch.n // (cs.n * bn)
        for stages in (4, 3, 2):
            p = fused(ch, cs, bm, bn, 64, n_split=n_split, stages=stages, gated_mode=gm, instruction="wgmma")
            if p.buildable:
                out.append((ch, p, "odd"))
                break
        else:
            raise ValueError(f"odd shape {ch.case_id} is not buildable")
    return out


def probe_items() -> list[tuple[Chain, Plan, str]]:
    """Timed tiny chains: the floor of a fused_wgmma kernel under this timing method (one block; one
    two-block cluster with a shuffle)."""
    one = _ffn("fw-probe-1blk", 64, 64, 64, 64, "relu")
    two = _ffn("fw-probe-cluster2", 64, 128, 64, 128, "relu")
    return [(one, fused(one, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=1, stages=2, instruction="wgmma"), "probe"),
            (two, fused(two, ClusterShape(1, 2, 1, 2), 64, 64, 64, n_split=1, stages=2, instruction="wgmma"), "probe")]


def ref_plans(paths: list[str]) -> dict[str, Plan]:
    """The fastest verified plan per case in earlier bench JSONs (fusesim bench --out)."""
    best: dict[str, tuple[float, Plan]] = {}
    for path in paths:
        for case in read_json(path)["cases"]:
            for r in case.get("plans", []):
                t = (r.get("time") or {}).get("queued_median_us")
                if t is not None and (r.get("verify") or {}).get("ok") and (
                        case["case"] not in best or t < best[case["case"]][0]):
                    best[case["case"]] = (t, Plan.from_dict(r["plan"]))
    return {k: v[1] for k, v in best.items()}


def all_items(only: set[str] | None, per_case: int, refs: dict[str, Plan],
              refs_only: bool = False) -> list[tuple[Chain, Plan, str]]:
    out: list[tuple[Chain, Plan, str]] = []
    for wl in WORKLOADS:
        for ch in load_workload(wl).cases:
            if only and ch.case_id not in only:
                continue
            cands = [] if refs_only else fused_wgmma_candidates(ch, per_case)
            if not cands and not refs_only:
                continue
            if ch.case_id in refs:
                out.append((ch, refs[ch.case_id], "ref"))
            out += [(ch, p, "fwg") for p in cands]
    if not refs_only:
        out += [it for it in odd_items() + probe_items() if not only or it[0].case_id in only]
    return out


def main(argv: list[str] | None = None) -> int:
    p = check_parser(__doc__, 303, 6)
    p.add_argument("--ref", nargs="*", default=[])
    p.add_argument("--refs-only", action="store_true", help="only the earlier best plan of each case")
    p.add_argument("--d-prefetch", type=int, default=None,
                   help="gemm_wgmma: gemm0 prefetches up to this many bytes of D into L2 (a trial of "
                        "fusesim.codegen.GEMM_D_PREFETCH_MAX_BYTES)")
    p.add_argument("--list", action="store_true", help="print the plans and exit (no GPU)")
    args = p.parse_args(argv)
    if args.d_prefetch is not None:
        import fusesim.codegen

        fusesim.codegen.GEMM_D_PREFETCH_MAX_BYTES = args.d_prefetch
    only = set(args.only.split(",")) if args.only else None
    items = all_items(only, args.per_case, ref_plans(args.ref), args.refs_only)
    if args.list:
        for ch, plan, kind in items:
            print(f"{ch.case_id:14s} {kind:4s} {plan.instruction:8s} {plan.summary()}")
        print(f"{len(items)} plans")
        return 0
    rows = run(items, args.reps, args.seed, args.torch, Path(args.out + ".partial"))
    ref = {r["case"]: r["time"]["queued_median_us"] for r in rows if r["kind"] == "ref" and "time" in r}
    best = summary([r for r in rows if r["kind"] == "fwg"])
    print("\ncase      fused_wgmma us   earlier best us   torch graphs us  plan")
    for b in best:
        print(f"{b['case']:8s} {b['us']:12.2f} {ref.get(b['case'], float('nan')):15.2f} "
              f"{b.get('torch_graph_us', float('nan')):14.2f}  {b['plan']}")
    return write_check(args.out, "fused_wgmma (TMA + wgmma fused kernels) hand plans, odd shapes and each case's "
                       "earlier best (kind ref): verification vs float32 PyTorch (rel. Frobenius < 1e-2, 2 launches) "
                       "and timing (CUDA events, L2 flushed, queued median)", "fusesim.gpu.fused_wgmma_check", argv,
                       rows, best, "fused_wgmma check")


if __name__ == "__main__":
    sys.exit(main())
