"""Does gemm_wgmma's second GEMM end sooner when, before its griddepcontrol.wait, it also starts the weight tiles
after its ring's first STAGES into L2 (`capability.GEMM_L2_LOOKAHEAD`)? Its blocks launch while the first GEMM
drains and fill their ring with D, which is independent of the first GEMM; after the wait the ring refills one
stage per consumed stage, a DRAM round trip behind, just when the first GEMM has stopped streaming. A TMA tensor
prefetch of the next tiles into L2 keeps HBM busy over that gap and turns the refills into L2 hits.
One device call: per paper case the fastest verified unfused wgmma plan of final11 (the H200 run of
benchmarks/kernels.md), built with the lookahead off, 8 tiles and 32 tiles, each verified against the float32
PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice). Writes JSON to OUT.

A trial, not kept: the generator change is results/h200/l2_lookahead_trial.patch (`git apply` it first; the script
stops without it), measured on an H100 (results/h200/l2_lookahead_trial_h100.json).

    FUSESIM_CACHE=... python3 scripts/l2_lookahead_trial.py --build-only      (here)
    python3 scripts/l2_lookahead_trial.py --stage DIR                          (here: copy them for the carry)
    python3 scripts/l2_lookahead_trial.py OUT.json [S6,S7,...]                 (on the GPU machine)

With a comma list of cases, only those, in that order (a short device lease measures the first ones).
"""

from __future__ import annotations

from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"off": 0, "lookahead 8": 8, "lookahead 32": 32}
PER_CASE = 1
FINAL11 = "results/h200/final11_paper_*.json"


def sources(cases: str = ""):
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest final11 unfused wgmma plans; of the cases
    in the comma list `cases` only, in its order, when it is given."""

    from fusesim.capability import codegen_switches

    if "gemm_l2_lookahead" not in codegen_switches():
        raise SystemExit("the generator has no gemm_l2_lookahead switch: git apply results/h200/l2_lookahead_trial.patch")

    def keep(plan) -> bool:
        return plan.strategy == "unfused" and plan.instruction == "wgmma"

    picked = list(fastest_final_plans(keep, PER_CASE, FINAL11))
    if cases:
        order = cases.split(",")
        unknown = sorted(set(order) - {case for case, _plan in picked})
        if unknown:
            raise SystemExit(f"no final11 unfused wgmma plan for {', '.join(unknown)}")
        picked = sorted((cp for cp in picked if cp[0] in order), key=lambda cp: order.index(cp[0]))
    for case, plan in picked:
        yield case, plan, switched_sources(plan, "gemm_l2_lookahead", VARIANTS)


def main() -> int:
    return trial_main(sources, "off", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
