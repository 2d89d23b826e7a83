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

from fusesim.stored import read_json

PLAN_FILES = ("results/h200/plans_final_gemm_chains.json", "results/h200/plans_final_gated_ffn.json",
              "results/h200/plans_final_conv_chains.json")
VARIANTS = {"fragments": (False, False), "staged store": (True, False), "staged store + red": (True, True)}


def unfused_wgmma(pd: dict) -> bool:
    return pd["strategy"] == "unfused" and pd.get("instruction") == "wgmma"


def plans(want=unfused_wgmma, files: tuple[str, ...] = PLAN_FILES) -> list[tuple[str, dict]]:
    """(case, plan dict) of every plan in the frozen plan lists `files` (by default the final run's)
    that `want` accepts (by default the unfused gemm_wgmma ones)."""
    out = []
    for f in files:
        for case, rows in read_json(f).items():
            out += [(case, r.get("plan", r)) for r in rows if want(r.get("plan", r))]
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


def fastest_distinct(timed: list, n: int) -> list:
    """The `n` fastest distinct plans of `timed` ((time, Plan) pairs, a plan listed once however often it
    was measured), fastest first."""
    out, seen = [], set()
    for _t, plan in sorted(timed, key=lambda x: x[0]):
        if plan.to_json() not in seen:
            seen.add(plan.to_json())
            out.append(plan)
    return out[:n]


def fastest_final_plans(keep, n: int, pattern: str = "results/h200/final_paper_*.json"):
    """(case, Plan) of each paper case's `n` fastest distinct plans of a whole run (by default the first
    final run's files) that `keep(plan)` accepts, cases in paper order, fastest first."""
    from fusesim.plan import Plan
    from fusesim.report.measured import load_measured
    from fusesim.stored import glob_json

    by_case: dict[str, list] = {}
    for m in load_measured(glob_json(pattern)).items:
        if m.plan_dict is not None and keep(plan := Plan.from_dict(m.plan_dict)):
            by_case.setdefault(m.case, []).append((m.time_us, plan))
    for case in sorted(by_case, key=lambda c: (c[0], int(c[1:]))):
        for plan in fastest_distinct(by_case[case], n):
            yield case, plan


def switched_sources(plan, switch: str, variants: dict) -> dict:
    """{variant: Source} of `plan`, generated with the generator switch `switch` (a codegen_switches key)
    set to each variant's value and the others as today."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen import generate

    out = {}
    for name, value in variants.items():
        with generator_switches({**codegen_switches(), switch: value}):
            out[name] = generate(plan)
    return out


def listed_sources(pattern: str, keep, switch: str, variants: dict):
    """(case, plan, {variant: Source}) of every plan that `keep(plan)` accepts in the frozen plan lists matching
    `pattern` ({case: [{"plan": ...}, ...]} files), generated with the switch `switch` set to each variant's value."""
    from fusesim.plan import Plan
    from fusesim.stored import glob_json

    for path in glob_json(pattern):
        for case, rows in read_json(path).items():
            for row in rows:
                plan = Plan.from_dict(row["plan"])
                if keep(plan):
                    yield case, plan, switched_sources(plan, switch, variants)


def codegen_variants(switch: str, variants: dict, keep, patched: str):
    """(case, plan, {variant: Source}) for the final run's plans that `keep(plan)` accepts, each
    generated with the module-level generator switch `fusesim.codegen.<switch>` set to each variant's
    value; `patched` names what the trial's patch adds to fusesim.codegen (a trial script run without
    its patch would build the generator's kernels under every name)."""
    import fusesim.codegen as codegen
    from fusesim.plan import Plan

    if not hasattr(codegen, patched):
        raise SystemExit(f"fusesim.codegen has no {patched}: apply the trial's patch first (see the script's docstring)")
    saved = getattr(codegen, switch)
    try:
        for case, pd in plans():
            plan = Plan.from_dict(pd)
            if not keep(plan):
                continue
            srcs = {}
            for name, value in variants.items():
                setattr(codegen, switch, value)
                srcs[name] = codegen.generate(plan)
            yield case, plan, srcs
    finally:
        setattr(codegen, switch, saved)


def build_only(items) -> int:
    """Compile every distinct source of `items` ((case, plan, {variant: Source}) triples) here."""
    from concurrent.futures import ThreadPoolExecutor

    from fusesim.codegen.build import build

    srcs = {s.digest: s for _c, _p, variants in items for s in variants.values()}
    import os

    with ThreadPoolExecutor(min(16, os.cpu_count() or 2)) as ex:  # 2 here, 16 on the GPU machine
        list(ex.map(lambda s: build(s, "so"), srcs.values()))
    print(f"{len(srcs)} distinct sources built")
    return 0


def stage(items, dest: str) -> int:
    """Copy the built kernels of every variant of `items` (from $FUSESIM_CACHE), with their ptxas notes, into
    `dest`, for the carry."""
    from fusesim.codegen.build import build, stage_artifacts

    n = stage_artifacts({build(s, "so") for _c, _p, variants in items for s in variants.values()}, dest)
    print(f"{n} kernels staged in {dest}")
    return 0


def measure(items, base: str, out: str, what: str, variants: dict) -> int:
    """Verify every variant of every plan against the float32 PyTorch reference, time them in turn
    (twice, so drift hits all; L2 flushed, median of 50), print a line per plan against `base`, and
    write the rows to `out`."""
    import torch

    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, time_kernel, verify
    from fusesim.gpu.timing import L2Flusher

    flush = L2Flusher()
    rows = []
    for case, plan, srcs in items:
        kerns = {n: Loaded(Path(build(s, "so"))) for n, s in srcs.items()}
        ver = {n: verify(k, plan.chain, seed=7) for n, k in kerns.items()}
        runs: dict[str, list[float]] = {n: [] for n in kerns}
        for _ in range(2):
            for n, k in kerns.items():
                runs[n].append(time_kernel(k, plan.chain, flush, 50)["queued_median_us"])
        row = {"case": case, "plan": plan.to_dict(), "summary": plan.summary(), "verify": ver,
               "us": {n: min(v) for n, v in runs.items()}, "us_runs": runs}
        rows.append(row)
        ref = row["us"][base]
        print(f"{case:4s} {plan.summary()[:60]:60s} " + " | ".join(
            f"{n} {row['us'][n]:6.2f} ({row['us'][n] / ref:.3f}x, ok {ver[n]['ok']})" for n in kerns), flush=True)
        Path(out).write_text(json.dumps({"what": what, "gpu": torch.cuda.get_device_name(), "variants": variants,
                                         "rows": rows}, indent=1))  # after every plan: a cut run keeps them
    return 0


def trial_main(sources, base: str, doc: str, variants: dict) -> int:
    """A trial script's command line: `--build-only` or `--stage DIR` here (the kernels of every variant
    of `sources()`), or `OUT.json [ARG]` on the GPU machine (`measure` against the `base` variant;
    ARG, if any, goes to `sources`, also after `--build-only` or `--stage DIR`)."""
    argv = sys.argv[1:]
    if argv[:1] == ["--build-only"]:
        return build_only(list(sources(*argv[1:])))
    if argv[:1] == ["--stage"]:
        return stage(sources(*argv[2:]), argv[1])
    return measure(list(sources(*argv[1:])), base, argv[0], doc.splitlines()[0], variants)


def main() -> int:
    return trial_main(sources, "fragments", __doc__, {n: list(v) for n, v in VARIANTS.items()})


if __name__ == "__main__":
    raise SystemExit(main())
