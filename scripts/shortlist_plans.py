"""Shortlist a whole run's frozen plans by what earlier runs measured, so the next run on the H200 fits a small
device budget: per case, every plan of the frozen lists (results/h200/<FROM><workload>.json) that ran within
`--within` of its case's fastest verified plan in any of the `--runs` (bench JSONs, e.g. two H100 runs), each
strategy's fastest plan there (so the per-strategy columns of benchmarks/kernels.md stay filled), and every plan
within `--within-h200` of the case's fastest in the `--h200` run, each once. Entries keep their frozen "source"; they are written
to results/h200/<INTO><workload>.json in the frozen order, which `PLANS_PREFIX=<INTO>` times
(scripts/device_final2.sh). Runs here, no GPU:

    python3 scripts/shortlist_plans.py --from plans_final8_ --into plans_short10_ \
        --runs 'results/h200/final8_paper_{}_h100.json' 'results/h200/final9_paper_{}_h100.json' \
        --h200 'results/h200/final5_paper_{}.json'

Checked before use: with final6's two H100 runs and --within 1.05, final5's fastest plan on the H200 was listed for
all 26 cases.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fusesim.stored import read_json

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ("gemm_chains", "gated_ffn", "conv_chains")
STRATEGIES = ("unfused", "smem", "dsm")


def _key(plan: dict[str, Any]) -> str:
    return json.dumps(plan, sort_keys=True)


def _verified(bench: Path) -> dict[str, list[tuple[float, str, str]]]:
    """Per case of a bench JSON: (queued median us, plan key, strategy) of its verified plans (as
    fusesim.report.measured reads them; PyTorch's times carry no plan)."""
    from fusesim.report.measured import load_measured

    out: dict[str, list[tuple[float, str, str]]] = {}
    for m in load_measured(bench).items:
        if m.plan_dict is not None:
            out.setdefault(m.case, []).append((m.time_us, _key(m.plan_dict), m.strategy))
    return out


def shortlist(rows: list[tuple[float, str, str]], within: float, per_strategy: bool) -> set[str]:
    """Plan keys within `within` of the fastest row, and (per_strategy) each strategy's fastest."""
    if not rows:
        return set()
    best = min(t for t, _k, _s in rows)
    keep = {k for t, k, _s in rows if t <= within * best}
    if per_strategy:
        for s in STRATEGIES:
            of = [r for r in rows if r[2] == s]
            if of:
                keep.add(min(of)[1])
    return keep


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="src", required=True, help="prefix of the frozen lists, e.g. plans_final8_")
    ap.add_argument("--into", required=True, help="prefix of the shortlists, e.g. plans_short10_")
    ap.add_argument("--runs", nargs="+", required=True, help="bench JSON patterns, {} = the workload")
    ap.add_argument("--within", type=float, default=1.10)
    ap.add_argument("--h200", help="a bench JSON pattern of an H200 run, {} = the workload")
    ap.add_argument("--within-h200", type=float, default=1.05)
    args = ap.parse_args()
    total = kept = 0
    for wl in WORKLOADS:
        frozen = read_json(ROOT / f"results/h200/{args.src}{wl}.json")
        measured = [_verified(ROOT / p.format(wl)) for p in args.runs]
        h200 = _verified(ROOT / args.h200.format(wl)) if args.h200 else {}
        out = {}
        for case, entries in frozen.items():
            keep: set[str] = set()
            for run in measured:
                keep |= shortlist(run.get(case, []), args.within, per_strategy=True)
            keep |= shortlist(h200.get(case, []), args.within_h200, per_strategy=False)
            out[case] = []
            for e in entries:  # the frozen order; a plan frozen twice (two sources) is timed once
                if _key(e["plan"]) in keep:
                    out[case].append(e)
                    keep.discard(_key(e["plan"]))
            if not out[case]:
                raise SystemExit(f"{args.src}{wl}.json: case {case}: no frozen plan was measured in --runs")
            total += len(entries)
            kept += len(out[case])
        dest = ROOT / f"results/h200/{args.into}{wl}.json"
        dest.write_text(json.dumps(out, indent=1) + "\n")
        print(f"{dest.relative_to(ROOT)}: {sum(len(v) for v in out.values())} plans")
    print(f"kept {kept} of {total} frozen plans")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
