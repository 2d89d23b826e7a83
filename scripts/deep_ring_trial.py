"""Do unfused gemm_wgmma GEMMs end sooner with a ring deep enough to hold every k tile of a part?
A 6-stage ring issues a part's k tiles 7.. only as the first ones are consumed, so a GEMM with 12 or 16 k tiles
per part (G4, G6) waits two or three DRAM round trips on a cold L2 where one could do; the weight-streaming
GEMMs are bandwidth-bound and keep 96-192 KB in flight already. One device call: per paper case the PER_CASE
fastest verified unfused wgmma plans of the last whole run (results/h200/final7_paper_*_h100.json) with a GEMM
whose k tiles per part exceed its ring, built three ways -- as run; each such GEMM's ring 8 deep (the
generator's MAX_STAGES); as deep as its k tiles per part, up to 16 stages within SMEM (MAX_STAGES raised for
the trial) -- each verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2
flushed, median of 50, twice). Writes JSON to OUT.

With the argument `per-gemm`: the small cases only (floor under 10 us on the H200's file), the PER_GEMM_CASE
fastest such plans per case, each GEMM's ring 8 deep alone and both (the first run's gains, S8 0.933x and G6 0.979x,
came with both GEMMs deeper; its losses with gemm1 split through a DSM cluster), and each GEMM as run but launched
one block per SM (SOLO): an 8-deep ring of 64x64 tiles fills 128 KiB, so it also stops two blocks sharing an SM,
which gemm1's early (PDL) blocks otherwise do on the SMs gemm0 leaves free.

    python3 scripts/deep_ring_trial.py --build-only [per-gemm]   (on the GPU machine first: 16 cores)
    python3 scripts/deep_ring_trial.py OUT.json [per-gemm]        (then the trial; scripts/device_deep_ring.sh)

`--freeze OUT.json` (here) writes the per-gemm variants that deepen no DSM-cluster GEMM as {case: [{plan, source}]}
for a whole run (scripts/freeze_final_plans.py --extend), chosen before any of them was timed.
"""

from __future__ import annotations

import dataclasses
import sys

from store_trial import fastest_final_plans, trial_main

PER_CASE = 2
FINAL7 = "results/h200/final7_paper_*_h100.json"
DEEPEST = 16
VARIANTS = {"as run": 0, "ring 8": 8, "ring = k tiles": DEEPEST}
PER_GEMM_CASE = 4
PER_GEMM = {"as run": (0, 0), "gemm0 8": (8, 0), "gemm1 8": (0, 8), "both 8": (8, 8)}
# per-gemm mode also: the plan as run with a GEMM launched one block per SM (fusesim.codegen.GEMM_SOLO_SM), as an
# 8-deep ring of 64x64 tiles is (128 KiB) where 6 stages (96 KiB) let two share an SM: depth or occupancy?
SOLO = {"gemm0 solo": (0,), "gemm1 solo": (1,)}


def _gemms(plan):
    """(index, kernel, output width, reduction, gated) of an unfused plan's two GEMMs."""
    ch = plan.chain
    return ((0, plan.kernels[0], ch.n, ch.k, ch.gated), (1, plan.kernels[1], ch.l, ch.n, False))


def k_tiles_per_part(kern, rows: int, cols: int, depth: int) -> int:
    from fusesim.capability import WGMMA_BLOCK_K, kernel_split

    return -(-depth // WGMMA_BLOCK_K // kernel_split(kern, rows, cols))


def deepened(plan, cap: int | tuple[int, int]):
    """`plan` with each GEMM's ring as deep as its k tiles per part, at most `cap` stages (per GEMM where a
    pair; 0 leaves that GEMM alone) and within SMEM (never shallower than it was); None where no GEMM changes."""
    import fusesim.capability as capability

    caps = cap if isinstance(cap, tuple) else (cap, cap)
    kernels = list(plan.kernels)
    for i, kern, cols, depth, gated in _gemms(plan):
        want = min(caps[i], k_tiles_per_part(kern, plan.chain.m, cols, depth))
        for stages in range(want, kern.stages, -1):
            t = kern.tiles
            cand = dataclasses.replace(kern, stages=stages, smem_bytes=capability.wgmma_gemm_smem_bytes(
                t.block_m, t.block_n, stages, gated))
            if capability.wgmma_gemm_problem(cand, plan.chain.m, cols, depth, gated) is None:
                kernels[i] = cand
                break
    if tuple(kernels) == plan.kernels:
        return None
    return dataclasses.replace(plan, kernels=tuple(kernels), stages=kernels[0].stages)


def small(plan) -> bool:
    from fusesim.hardware import load_hardware

    return plan.chain.floor_ns(load_hardware("hw_configs/h200.yaml")) < 10_000


def sources(mode: str = ""):
    """(case, plan, {variant: Source}) of each case's PER_CASE fastest measured unfused wgmma plans that the
    deepest variant changes (mode "per-gemm": the small cases' PER_GEMM_CASE fastest, the PER_GEMM variants)."""
    import fusesim.capability as capability
    from fusesim.codegen import generate

    capability.MAX_STAGES = DEEPEST  # the trial only: the generator's check reads the module's value
    # the generator of the trials' time: gemm1 asking for its ring's SMEM (gemm_solo_secondary came after them)
    capability.GEMM_SOLO_SECONDARY = False
    per_gemm = mode == "per-gemm"
    variants = PER_GEMM if per_gemm else VARIANTS
    deepest = (8, 8) if per_gemm else DEEPEST

    def keep(plan) -> bool:
        return (plan.strategy == "unfused" and plan.instruction == "wgmma" and deepened(plan, deepest) is not None
                and (not per_gemm or small(plan)))

    for case, plan in fastest_final_plans(keep, PER_GEMM_CASE if per_gemm else PER_CASE, FINAL7):
        srcs = {}
        for name, cap in variants.items():
            variant = plan if cap in (0, (0, 0)) else deepened(plan, cap)
            if variant is not None:
                srcs[name] = generate(variant)
        if per_gemm:
            srcs.update(solo_sources(plan))
        yield case, plan, srcs


def solo_sources(plan) -> dict:
    """{variant: Source} of `plan` as run with one of its GEMMs launched one block per SM (SOLO)."""
    import fusesim.codegen as codegen

    saved = codegen.GEMM_SOLO_SM
    try:
        out = {}
        for name, solo in SOLO.items():
            codegen.GEMM_SOLO_SM = solo
            out[name] = codegen.generate(plan)
        return out
    finally:
        codegen.GEMM_SOLO_SM = saved


def freeze(out: str) -> int:
    """Write the per-gemm variants whose deeper GEMMs run without a cluster, per case, for a whole run."""
    import json
    from pathlib import Path

    rows: dict[str, list[dict]] = {}
    seen: set[str] = set()
    for case, plan, _srcs in sources("per-gemm"):
        for name, cap in PER_GEMM.items():
            variant = None if cap == (0, 0) else deepened(plan, cap)
            if variant is None or variant.to_json() in seen:
                continue
            deeper = [k for k, old in zip(variant.kernels, plan.kernels, strict=True) if k.stages != old.stages]
            if any(k.cluster_size > 1 for k in deeper):
                continue
            seen.add(variant.to_json())
            rows.setdefault(case, []).append({"plan": variant.to_dict(), "source": f"deep ring: {name} of a fastest "
                                              "unfused wgmma plan of final7 (scripts/deep_ring_trial.py --freeze)"})
    Path(out).write_text(json.dumps(rows, indent=1) + "\n")
    print(f"{out}: {sum(map(len, rows.values()))} plans, " + ", ".join(f"{c} {len(v)}" for c, v in rows.items()))
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--freeze"]:
        return freeze(sys.argv[2])
    per_gemm = sys.argv[2:3] == ["per-gemm"] or sys.argv[1:3] == ["--build-only", "per-gemm"]
    return trial_main(sources, "as run", __doc__, {**PER_GEMM, **SOLO} if per_gemm else VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
