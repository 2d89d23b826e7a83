"""Do split-K gemm_wgmma GEMMs end sooner when their parts sum in slices (`capability.gemm_split_shared`): each
part stores its fp32 partial into its own workspace slice, the parts of a tile wait for each other, then each
sums a 1/split share of the tile -- instead of every part red.adding into one workspace tile that the last part
converts and re-zeroes? The weight-streaming cases' gemm1 spends 4-9 us from its median block's last wgmma to its
last block's end (results/h200/probe_wgmma_timeline*.json; per step: results/h200/probe_splitk_tail_h100.json).
One device call: per paper case the PER_CASE fastest verified unfused wgmma plans with a split-K GEMM of the last
whole H200 run (results/h200/final5_paper_*.json), built three ways (red.add; slices where the partial tile has
at least 32 KiB, `GEMM_SPLIT_SHARED_MIN_BYTES` = 32768; slices for every split GEMM, = 1), each verified against
the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice). Writes JSON to
OUT.

    python3 scripts/split_shared_trial.py --build-only   (on the GPU machine first: 16 cores)
    python3 scripts/split_shared_trial.py OUT.json        (then the trial; scripts/device_split_shared.sh)

A first trial (results/h200/split_slices_trial_h100.json: one plan per case, the switch then an int mode) also
built a form whose last part alone summed the other parts' slices: 1.005-1.199x the red.add time on all 23 plans,
so that form was not kept (its template branch never reached main).
"""

from __future__ import annotations

from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"red.add": 0, "shared >= 32 KiB": 32768, "shared all": 1}
PER_CASE = 2
FINAL5 = "results/h200/final5_paper_*.json"


def has_split(plan) -> bool:
    from fusesim.capability import kernel_split

    ch = plan.chain
    dims = ((ch.m, ch.n), (ch.m, ch.l))
    return any(k.cluster_size == 1 and kernel_split(k, *dims[i]) > 1 for i, k in enumerate(plan.kernels))


def sources():
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest measured unfused wgmma plans with split-K."""

    def keep(plan) -> bool:
        return plan.strategy == "unfused" and plan.instruction == "wgmma" and has_split(plan)

    for case, plan in fastest_final_plans(keep, PER_CASE, FINAL5):
        yield case, plan, switched_sources(plan, "gemm_split_shared_min_bytes", VARIANTS)


def main() -> int:
    return trial_main(sources, "red.add", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
