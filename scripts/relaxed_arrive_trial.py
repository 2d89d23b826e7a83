"""Does fused_wgmma's cluster barrier cost less when its arrives are relaxed? One device call: for each of the 17
paper cases whose floor is under 10 us (the small ones, where a fixed cost matters) the two fastest fused_wgmma
plans with clusters of 2 or more in final4 (results/h200/final4_paper_*.json), built two ways --
barrier.cluster.arrive.release at the start and exit barriers (that run's kernels) and .relaxed
(FUSED_RELAXED_ARRIVE: the mbarrier-init fence and the receivers' acquire waits order what the barriers protect)
-- each verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of
50, twice). Writes JSON to OUT.

    FUSESIM_CACHE=.fscache python3 scripts/relaxed_arrive_trial.py --stage /tmp/stage/.fscache   (here)
    python3 scripts/relaxed_arrive_trial.py OUT.json       (on the GPU machine)
"""

from __future__ import annotations

from store_trial import fastest_final_plans, switched_sources, trial_main

VARIANTS = {"release": False, "relaxed": True}
PER_CASE = 2
SMALL = {"G1", "G2", "G3", "G4", "G6", "G7", "G9", "G10", "S8", "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"}
RUN = "results/h200/final4_paper_*.json"


def sources():
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest measured cluster plans."""
    def cluster_plan(plan) -> bool:
        return (plan.strategy != "unfused" and plan.instruction == "wgmma" and plan.cluster.size > 1
                and plan.case_id in SMALL)

    for case, plan in fastest_final_plans(cluster_plan, PER_CASE, RUN):
        yield case, plan, switched_sources(plan, "fused_relaxed_arrive", VARIANTS)


def main() -> int:
    return trial_main(sources, "release", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
