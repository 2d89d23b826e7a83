"""gemm1 split-K through DSM instead of the L2 workspace, for one device run on the weight-streaming
cases: does reducing the split parts of a tile inside a cluster (fp32 partials parked in SMEM,
dsm_reduce_scatter, bf16 stores; no red.add, ticket or workspace) shorten gemm1's tail?

Per case: the final run's fastest unfused wgmma plan (the control, split-K through L2), then gemm1
with the same tiles and ring as a cluster of its split parts where that is buildable, then per
block_n and split 2 / 4 / 8 the deepest ring with one block per SM, and the deepest with two, kept
where the grid fits the clusters the H200 co-schedules (cudaOccupancyMaxActiveClusters, calibrate's
`gpc` group) -- gemm0 stays the control's. Writes {case: [{plan, source}]} for
`fusesim bench --plans file:...`. Runs here, no GPU:

    python3 scripts/dsm_split_variants.py --out results/h200/plans_dsm_split_trial.json

`--small N` writes instead the cases with a floor under 10 us that have an unfused wgmma plan: the final
run's fastest as the control and the simulator's N fastest variants with split-K through DSM in gemm0,
gemm1 or both (the control's tiles and rings), frozen before any is timed:

    python3 scripts/dsm_split_variants.py --small 3 --out results/h200/plans_dsm_split_small.json

`--finals GLOB` takes the controls from another run's files (e.g. "results/h200/final5_paper_*[ns].json"), `--cases`
other cases than those ten.
"""

from __future__ import annotations

import argparse
import dataclasses

from wgmma_variants import FINALS, SM_SMEM_BYTES, base_plans, buildable_unique, write_plans

from fusesim.capability import WGMMA_BLOCK_N, can_build, kernel_split, wgmma_gemm_smem_bytes, wgmma_threads
from fusesim.plan import Kernel, Plan, Tiles
from fusesim.stored import glob_json

# H200, cudaOccupancyMaxActiveClusters (hw_configs/h200_calibrated.yaml, gpc_sm_counts provenance):
# clusters co-resident with 1 and 2 blocks per SM
MAX_CLUSTERS = {1: {2: 66, 4: 30, 8: 15}, 2: {2: 132, 4: 62, 8: 30}}


def _gemm1(kern: Kernel, rows: int, cols: int, block_n: int, split: int, stages: int) -> Kernel:
    tiles = -(-rows // 128) * (cols // block_n)
    return dataclasses.replace(
        kern, grid_blocks=tiles * split, cluster_size=split, threads=wgmma_threads(128), stages=stages,
        smem_bytes=wgmma_gemm_smem_bytes(128, block_n, stages, False),
        tiles=Tiles(block_m=128, block_n=block_n, block_k=64, block_l=0))


def variants(base: Plan) -> list[tuple[Plan, str]]:
    ch = base.chain
    g0, g1 = base.kernels
    out: list[tuple[Plan, str]] = [(base, "control: the final run's fastest unfused wgmma plan (split-K through L2)")]
    split = kernel_split(g1, ch.m, ch.l)
    out.append((dataclasses.replace(base, kernels=(g0, dataclasses.replace(g1, cluster_size=split))),
                "the control's gemm1 as a cluster of its split parts"))
    for bn in WGMMA_BLOCK_N:
        if ch.l % bn:
            continue
        tiles = -(-ch.m // 128) * (ch.l // bn)
        for s in (2, 4, 8):
            for per_sm in (1, 2):
                fits = [st for st in (2, 3, 4, 5, 6)
                        if per_sm * (wgmma_gemm_smem_bytes(128, bn, st, False) + 1024) <= SM_SMEM_BYTES]
                if not fits or tiles * s > MAX_CLUSTERS[per_sm][s] * s:
                    continue
                if per_sm == 2 and tiles * s <= MAX_CLUSTERS[1][s] * s:
                    continue  # fits one wave at one block per SM: the deeper ring is the variant
                k1 = _gemm1(g1, ch.m, ch.l, bn, s, max(fits))
                out.append((dataclasses.replace(base, kernels=(g0, k1)),
                            f"gemm1 block_n {bn}, DSM split {s}, {per_sm} block(s) per SM"))
    return buildable_unique(out)


SMALL_CASES = ("G2", "G4", "G6", "G7", "G9", "G10", "S8", "C2", "C3", "C4")  # floor < 10 us, an unfused wgmma plan
FINALS_ALL = (*FINALS, "results/h200/final_paper_conv_chains.json")


def simulated_variants(base: Plan, hw_path: str, picks: int) -> list[tuple[Plan, str]]:
    """The control, then the simulator's `picks` fastest plans with the control's tiles and rings whose
    gemm0, gemm1 or both reduce split-K through DSM (split 2, 4 or 8, and the control's), chosen on
    `hw_path` before any is timed."""
    from fusesim.codegen.handplans import unfused_wgmma
    from fusesim.hardware import load_hardware
    from fusesim.sim import simulate

    hw = load_hardware(hw_path)
    ch = base.chain
    g0, g1 = base.kernels
    s0, s1 = kernel_split(g0, ch.m, ch.n), kernel_split(g1, ch.m, ch.l)
    pool: list[tuple[float, Plan, str]] = []
    for dsm in ((False, True), (True, False), (True, True)):
        for sp0 in sorted({s0, 2, 4, 8} if dsm[0] else {s0}):
            for sp1 in sorted({s1, 2, 4, 8} if dsm[1] else {s1}):
                p = unfused_wgmma(ch, g0.tiles.block_m, g0.tiles.block_n, g0.stages, split0=sp0, split1=sp1,
                                  bm1=g1.tiles.block_m, bn1=g1.tiles.block_n, stages1=g1.stages, dsm_split=dsm)
                if (dsm[0] and sp0 == 1) or (dsm[1] and sp1 == 1) or not can_build(p)[0]:
                    continue  # (a "cluster" of one part is the control's kernel)
                t = simulate(p, hw).time_ns / 1e3
                which = "both GEMMs" if all(dsm) else "gemm0" if dsm[0] else "gemm1"
                pool.append((t, p, f"simulator pick: split-K through DSM in {which} (splits {sp0}/{sp1}), {t:.2f} us simulated"))
    pool.sort(key=lambda x: x[0])
    out = [(base, "control: the final run's fastest unfused wgmma plan (split-K through L2)")]
    out += [(p, why) for _t, p, why in pool[:picks]]
    return buildable_unique(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/h200/plans_dsm_split_trial.json")
    ap.add_argument("--small", type=int, default=0, metavar="N",
                    help="instead: the cases with a floor under 10 us, the control and the simulator's N fastest DSM "
                         "split-K variants of its tiles (--hw)")
    ap.add_argument("--hw", default="hw_configs/h200_calibrated.yaml")
    ap.add_argument("--finals", default=None, metavar="GLOB",
                    help="the run whose fastest unfused wgmma plan per case is the control (default: the first final run)")
    ap.add_argument("--cases", default=",".join(SMALL_CASES), help="with --small: the cases (comma-separated)")
    args = ap.parse_args()
    finals = tuple(glob_json(args.finals)) if args.finals else None
    if args.finals and not finals:
        raise SystemExit(f"--finals {args.finals}: no such files")
    if args.small:
        bases = base_plans(tuple(args.cases.split(",")), finals or FINALS_ALL)
        write_plans(args.out, {case: simulated_variants(base, args.hw, args.small) for case, base in bases.items()})
        return 0
    bases = base_plans(finals=finals) if finals else base_plans()
    write_plans(args.out, {case: variants(base) for case, base in bases.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
