"""Is the mma.sync kernels' implicit im2col bound by its address arithmetic? One device call: every
3x3 conv plan of the final run (results/h200/plans_final_conv_chains.json: C5-C8, all mma.sync),
built two ways -- each 16-byte copy decoding its row and filter tap with four constant divisions
(capability.IM2COL_ROWS_HOISTED off: the kernels of the final run, byte for byte but for the device
header) and each copy's row decoded once per block, the tap once per k tile (tile.cuh Im2colRows) --
each verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed,
median of 50, twice). Writes JSON to OUT.

    FUSESIM_CACHE=.fscache_im2col python3 scripts/im2col_trial.py --build-only     (here)
    python3 scripts/im2col_trial.py OUT.json             (on the GPU machine; scripts/device_im2col_trial.sh)
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from store_trial import build_only, measure, switched_sources  # noqa: E402

from fusesim.stored import read_json

PLAN_FILE = "results/h200/plans_final_conv_chains.json"
VARIANTS = {"per-copy decode": False, "rows decoded once": True}


def sources():
    """(case, plan, {variant: Source}) for every plan with an implicit-im2col A loader."""
    from fusesim.capability import im2col_rows_hoisted
    from fusesim.plan import Plan

    for case, rows in read_json(PLAN_FILE).items():
        for r in rows:
            plan = Plan.from_dict(r.get("plan", r))
            if plan.instruction != "mma_sync" or not im2col_rows_hoisted(plan.chain, plan.tiles.block_k):
                continue
            yield case, plan, switched_sources(plan, "im2col_rows_hoisted", VARIANTS)


def main() -> int:
    if sys.argv[1:] == ["--build-only"]:
        return build_only(list(sources()))
    return measure(sources(), "per-copy decode", sys.argv[1], __doc__.splitlines()[0], VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
