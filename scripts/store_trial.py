"""Is gemm_wgmma's epilogue bound by its L2 write requests? One device call: every unfused gemm_wgmma
plan of the final run (results/h200/plans_final_*.json), built three ways -- fragment stores and
fragment red.add.v2 (capability's GEMM_STAGED_STORE and GEMM_STAGED_RED off: the kernels of the final run of
15:18 UTC, byte for byte), the output tile staged in SMEM and stored as 16-byte row pieces (store on), and also the
split-K partial staged and red.added as 16-byte v4 row pieces (both on) -- each verified against the
float32 PyTorch reference, then timed in turn (CUDA events, L2 flushed, median of 50, twice). Writes
JSON to OUT.

    FUSESIM_CACHE=.fscache_store python3 scripts/store_trial.py --build-only     (here)
    python3 scripts/store_trial.py OUT.json             (on the GPU machine; scripts/device_store_trial.sh)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

PLAN_FILES = ("results/h200/plans_final_gemm_chains.json", "results/h200/plans_final_gated_ffn.json",
              "results/h200/plans_final_conv_chains.json")
VARIANTS = {"fragments": (False, False), "staged store": (True, False), "staged store + red": (True, True)}


def plans() -> list[tuple[str, dict]]:
    """(case, plan dict) of every unfused gemm_wgmma plan in the frozen final-run plan lists."""
    out = []
    for f in PLAN_FILES:
        for case, rows in json.loads(Path(f).read_text()).items():
            for r in rows:
                pd = r.get("plan", r)
                if pd["strategy"] == "unfused" and pd.get("instruction") == "wgmma":
                    out.append((case, pd))
    return out


def sources():
    """(case, plan, {variant: Source}) with the generator's switches set per variant."""
    from fusesim.capability import generator_switches
    from fusesim.codegen import generate
    from fusesim.plan import Plan

    for case, pd in plans():
        plan = Plan.from_dict(pd)
        srcs = {}
        for name, (store, red) in VARIANTS.items():
            with generator_switches({"gemm_staged_store": store, "gemm_staged_red": red}):
                srcs[name] = generate(plan)
        yield case, plan, srcs


def main() -> int:
    from fusesim.codegen.build import build

    if sys.argv[1:] == ["--build-only"]:
        from concurrent.futures import ThreadPoolExecutor

        items = {s.digest: s for _c, _p, srcs in sources() for s in srcs.values()}
        with ThreadPoolExecutor(2) as ex:
            list(ex.map(lambda s: build(s, "so"), items.values()))
        print(f"{len(items)} distinct sources built")
        return 0
    import torch

    from fusesim.gpu.runner import Loaded, time_kernel, verify
    from fusesim.gpu.timing import L2Flusher

    flush = L2Flusher()
    rows = []
    for case, plan, srcs in sources():
        kerns = {n: Loaded(Path(build(s, "so"))) for n, s in srcs.items()}
        ver = {n: verify(k, plan.chain, seed=7) for n, k in kerns.items()}
        runs: dict[str, list[float]] = {n: [] for n in kerns}
        for _ in range(2):  # in turn, so drift hits all
            for n, k in kerns.items():
                runs[n].append(time_kernel(k, plan.chain, flush, 50)["queued_median_us"])
        row = {"case": case, "plan": plan.to_dict(), "summary": plan.summary(), "verify": ver,
               "us": {n: min(v) for n, v in runs.items()}, "us_runs": runs}
        rows.append(row)
        base = row["us"]["fragments"]
        print(f"{case:4s} {plan.summary()[:60]:60s} " + " | ".join(
            f"{n} {row['us'][n]:6.2f} ({row['us'][n] / base:.3f}x, ok {ver[n]['ok']})" for n in kerns), flush=True)
    Path(sys.argv[1]).write_text(json.dumps({"what": __doc__.splitlines()[0], "gpu": torch.cuda.get_device_name(),
                                             "variants": {n: list(v) for n, v in VARIANTS.items()}, "rows": rows},
                                            indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
