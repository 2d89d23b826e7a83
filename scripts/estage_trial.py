"""Does staging fused_wgmma's last E sub-tile in the drained ring shorten the kernels' store tail? One
device call: every fused_wgmma plan of results/h200/plans_estage.json that stores E straight out (no
reduce-scatter, no inter_cluster_reduce; capability.fused_wgmma_e_staged), built two ways -- every
consumer thread storing its accumulator fragments (FUSED_STAGED_E off: 4-byte stores, 8 rows of 16 B
per warp store; the kernels of the im2col and final runs) and the last sub-tile staged as bf16 rows in
the drained ring, then stored as 16-byte row pieces (on: the generator's kernel) -- each verified
against the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50,
twice). Writes JSON to OUT.

    FUSESIM_CACHE=.fscache python3 scripts/estage_trial.py --build-only            (here)
    FUSESIM_CACHE=.fscache python3 scripts/estage_trial.py --stage /tmp/stage/.fscache
    python3 scripts/estage_trial.py OUT.json       (on the GPU machine; scripts/device_estage.sh)
"""

from __future__ import annotations

from store_trial import plans, switched_sources, trial_main

PLANS = ("results/h200/plans_estage.json",)
VARIANTS = {"fragments": False, "staged": True}


def sources():
    """(case, plan, {variant: Source}) of each distinct plan whose E the template would stage."""
    from fusesim.capability import fused_wgmma_e_staged
    from fusesim.plan import Plan

    seen: set[str] = set()
    for case, pd in plans(lambda d: d["strategy"] != "unfused" and d.get("instruction") == "wgmma", PLANS):
        plan = Plan.from_dict(pd)
        if not fused_wgmma_e_staged(plan) or plan.to_json() in seen:
            continue
        seen.add(plan.to_json())
        yield case, plan, switched_sources(plan, "fused_staged_e", VARIANTS)


def main() -> int:
    return trial_main(sources, "fragments", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
