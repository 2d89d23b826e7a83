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
"""

from __future__ import annotations

import argparse
import dataclasses

from wgmma_variants import SM_SMEM_BYTES, base_plans, buildable_unique, write_plans

from fusesim.capability import WGMMA_BLOCK_N, kernel_split, wgmma_gemm_smem_bytes, wgmma_threads
from fusesim.plan import Kernel, Plan, Tiles

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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="results/h200/plans_dsm_split_trial.json")
    args = ap.parse_args()
    write_plans(args.out, {case: variants(base) for case, base in base_plans().items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
