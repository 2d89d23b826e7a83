"""Does gemm_wgmma's second GEMM end sooner launched one block per SM where its blocks cannot sit beside the first
GEMM's? One device call: every plan of final8's lists (results/h200/plans_final8_*.json) that the rule
`capability.gemm_solo_sm` changes (26: C1-C3, G2, G4, G6, G7, G9, G10, S5, S6, S8), built two ways -- gemm1 asking
for its ring's SMEM (two blocks may share an SM) and for more than half an SM's (GEMM_SOLO_SECONDARY) -- each
verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice).
The per-gemm deep-ring trial (results/h200/deep_ring_per_gemm_run{1,2}_h100.json) found it on S8's plans only
(0.88-0.93x); this asks it of every plan the rule picks. Writes JSON to OUT.

    python3 scripts/solo_sm_trial.py --build-only     (on the GPU machine first: 16 cores)
    python3 scripts/solo_sm_trial.py OUT.json          (then the trial; scripts/device_solo_final8.sh)
"""

from __future__ import annotations

from store_trial import listed_sources, trial_main

VARIANTS = {"ring smem": False, "one per SM": True}
PLANS = "results/h200/plans_final8_*.json"


def rule_changes(plan) -> bool:
    """Whether `capability.gemm_solo_sm` (its switch on) launches this plan's gemm1 one block per SM."""
    import fusesim.capability as capability

    if plan.strategy != "unfused" or plan.instruction != "wgmma":
        return False
    with capability.generator_switches({**capability.codegen_switches(), "gemm_solo_secondary": True}):
        return capability.gemm_solo_sm(plan, plan.kernels[1])


def sources():
    """(case, plan, {variant: Source}) of every final8 plan whose gemm1 the rule launches one block per SM."""
    return listed_sources(PLANS, rule_changes, "gemm_solo_secondary", VARIANTS)


def main() -> int:
    return trial_main(sources, "ring smem", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
