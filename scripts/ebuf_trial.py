"""Do fused_wgmma's E partial stores lose time to SMEM bank conflicts? One device call: every fused_wgmma
plan of the final run with a dsm_reduce_scatter (results/h200/plans_final_*.json; the E partial goes
to SMEM as slice-major fp32 rows), built two ways -- plain rows (E_SWZ_MASK 0: each warp's fragment
stores hit the same 8 banks whenever a slice row is a multiple of 128 B) and each row's 32-byte chunk
index XORed with a few row bits (the generator's kernel) -- each verified against the float32 PyTorch reference,
then timed in turn (CUDA events, L2 flushed, median of 50, twice). Writes JSON to OUT.

    FUSESIM_CACHE=.fscache python3 scripts/ebuf_trial.py --build-only             (here)
    FUSESIM_CACHE=.fscache python3 scripts/ebuf_trial.py --stage /tmp/stage/.fscache
    python3 scripts/ebuf_trial.py OUT.json       (on the GPU machine; scripts/device_ebuf_trial.sh)
"""

from __future__ import annotations

from store_trial import plans, trial_main

SWIZZLE = "constexpr int E_SWZ_MASK = E_CHUNKS % 4 == 0 ? 3 : (E_CHUNKS % 2 == 0 ? 1 : 0);"
VARIANTS = {"plain rows": SWIZZLE.replace("E_CHUNKS % 4 == 0 ? 3 : (E_CHUNKS % 2 == 0 ? 1 : 0)", "0"), "swizzled": SWIZZLE}


def reduce_scatter(pd: dict) -> bool:
    c = pd["cluster"]
    return pd["strategy"] != "unfused" and pd.get("instruction") == "wgmma" and c.get("reduce", 1) > 1


def sources():
    """(case, plan, {variant: Source}): the generated source, and the same with the swizzle off."""
    from fusesim.codegen import Source, generate
    from fusesim.plan import Plan

    for case, pd in plans(reduce_scatter):
        plan = Plan.from_dict(pd)
        src = generate(plan)
        if SWIZZLE not in src.code:
            raise SystemExit(f"{case}: the generated source has no '{SWIZZLE}' (the template changed)")
        yield case, plan, {name: Source(src.name + ("" if line == SWIZZLE else "_plain"), src.family,
                                        src.code.replace(SWIZZLE, line)) for name, line in VARIANTS.items()}


def main() -> int:
    return trial_main(sources, "plain rows", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
