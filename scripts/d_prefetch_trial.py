"""Does gemm0 prefetching gemm1's weights into L2, once its own last weight tile is issued, keep DRAM
busy through gemm0's tail and gemm1's start? One device call: every unfused gemm_wgmma plan of the
final run (results/h200/plans_final_*.json), of the cases whose D
is 2 MiB or more, built with the late D prefetch off and capped at 16 and 48 MiB (fusesim.codegen.GEMM_D_PREFETCH_MAX_BYTES: the same prefix of each of gemm1's split
parts), each verified against the float32 PyTorch reference, then timed in turn (CUDA events, L2
flushed, median of 50, twice). Writes JSON to OUT.

The late prefetch is not in the generator (measured slower; results/h200/README.md): the trial ran
with `git apply results/h200/d_prefetch_trial.patch` (gemm_wgmma.cu.j2's PF_* prefetch after the
producer's last weight tile, and fusesim.codegen's `_d_prefetch`), which this script needs.

    git apply results/h200/d_prefetch_trial.patch
    FUSESIM_CACHE=.fscache python3 scripts/d_prefetch_trial.py --build-only     (here)
    FUSESIM_CACHE=.fscache python3 scripts/d_prefetch_trial.py --stage /tmp/stage/.fscache
    python3 scripts/d_prefetch_trial.py OUT.json             (on the GPU machine; scripts/device_d_prefetch_trial.sh)
"""

from __future__ import annotations

from store_trial import codegen_variants, trial_main

VARIANTS = {"off": 0, "16 MiB": 16 << 20, "48 MiB": 48 << 20}
MIN_D_BYTES = 2 << 20


def sources():
    """(case, plan, {variant: Source}) with the prefetch cap set per variant."""
    return codegen_variants("GEMM_D_PREFETCH_MAX_BYTES", VARIANTS, keep, patched="_d_prefetch")


def keep(plan) -> bool:
    ch = plan.chain
    return ch.n * ch.l * ch.dtype_bytes >= MIN_D_BYTES


def main() -> int:
    return trial_main(sources, "off", __doc__, VARIANTS)


if __name__ == "__main__":
    raise SystemExit(main())
