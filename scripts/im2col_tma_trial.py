"""Does the wgmma templates' implicit im2col run faster as TMA loads in im2col mode? One device call: per 3x3
conv chain (C5-C8) and strategy the three fastest wgmma plans measured on the H200 (results/h200/
estage_h200_paper_conv_chains.json, wgmma_im2col_paper_conv_chains.json), and the GPU tests' implicit-im2col
representatives (two images, predicated rows, split-K, cls_k 2), built two ways -- the producer warpgroup's
cp.async copies arriving LAG stages later (WGMMA_IM2COL_TMA off: the generator's kernels) and one TMA
im2col load per stage by the producer thread (on) -- each verified against the float32 PyTorch reference,
then timed in turn (CUDA events, L2 flushed, median of 50, twice). Writes JSON to OUT.

The TMA im2col form is in the generator behind its switch, off until measured (prepared 2026-12-05, when the
device tool lent no GPU for it):

    python3 scripts/im2col_tma_trial.py --stage /tmp/stage/.fscache   (here: build, then copy for the carry)
    python3 scripts/im2col_tma_trial.py OUT.json                      (on the GPU machine)
"""

from __future__ import annotations

from store_trial import fastest_distinct, switched_sources, trial_main

from fusesim.stored import glob_json

VARIANTS = {"cp.async": False, "TMA im2col": True}
RUNS = ("results/h200/estage_h200_paper_conv_chains.json", "results/h200/wgmma_im2col_paper_conv_chains.json")
PER_STRATEGY = 3
REPRESENTATIVES = ("gemm_wgmma_conv3x3_split_predicated", "gemm_wgmma_conv3x3_m64_two_images",
                   "fused_wgmma_conv3x3_smem", "fused_wgmma_conv3x3_cls_k2_two_images")


def sources():
    """(case, plan, {variant: Source}) of the measured plans, fastest first per case and strategy, then the
    representatives."""
    from fusesim.capability import wgmma_im2col
    from fusesim.codegen.handplans import representative_plans
    from fusesim.plan import Plan
    from fusesim.report.measured import load_measured

    by_key: dict[tuple[str, str], list[tuple[float, Plan]]] = {}
    for m in load_measured(sorted(f for r in RUNS for f in glob_json(r))).items:
        if m.plan_dict is None:
            continue
        plan = Plan.from_dict(m.plan_dict)
        if plan.instruction == "wgmma" and wgmma_im2col(plan.chain):
            by_key.setdefault((m.case, plan.strategy), []).append((m.time_us, plan))
    for (case, _strategy), rows in sorted(by_key.items()):
        for plan in fastest_distinct(rows, PER_STRATEGY):
            yield case, plan, switched_sources(plan, "wgmma_im2col_tma", VARIANTS)
    reps = representative_plans()
    for name in REPRESENTATIVES:
        yield name, reps[name], switched_sources(reps[name], "wgmma_im2col_tma", VARIANTS)


def main() -> int:
    return trial_main(sources, "cp.async", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
