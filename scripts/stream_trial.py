"""Does the stream matter? fusesim bench times on PyTorch's current stream, which is the legacy default
stream unless the caller picks another; gemm_wgmma's second GEMM is a programmatic dependent launch. One
device call: per paper case the fastest measured plan per strategy of the H200 runs (final, wgmma im2col,
staged E), verified and timed with PyTorch eager and CUDA graphs exactly as `fusesim bench` does
(fusesim.gpu.bench.run_case), on the default stream and on a side stream (torch.cuda.Stream, created
non-blocking), alternately, twice each. Writes JSON to OUT.

    python3 scripts/stream_trial.py --stage /tmp/stage/.fscache   (here: build, then copy for the carry)
    python3 scripts/stream_trial.py OUT.json                      (on the GPU machine)
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

from fusesim.stored import read_json

RUNS = ("results/h200/final_paper_*.json", "results/h200/wgmma_im2col_paper_*.json",
        "results/h200/estage_h200_paper_*.json")


def entries() -> dict[str, list]:
    """{case: [Plan]}: the fastest verified plan per strategy over RUNS."""
    from fusesim.plan import Plan

    best: dict[tuple[str, str], tuple[float, Plan]] = {}
    for pattern in RUNS:
        for f in sorted(glob.glob(pattern)):
            for c in read_json(f)["cases"]:
                for r in c.get("plans", []):
                    t = (r.get("time") or {}).get("queued_median_us")
                    if t is None or not (r.get("verify") or {}).get("ok") or not r.get("plan"):
                        continue
                    key = (c["case"], r["plan"]["strategy"])
                    if key not in best or t < best[key][0]:
                        best[key] = (t, Plan.from_dict(r["plan"]))
    out: dict[str, list] = {}
    for (case, _s), (_t, plan) in sorted(best.items()):
        out.setdefault(case, []).append(plan)
    return out


def _best(runs: list[dict], key: str) -> float:
    """The fastest of `runs` (one stream's): our fastest verified plan, or PyTorch's `key` mode."""
    if key == "ours":
        return min(min(t for t, ok in run["ours"] if ok and t) for run in runs)
    return min(run[key] for run in runs)


def main() -> int:
    from fusesim.codegen import generate
    from fusesim.codegen.build import build

    by_case = entries()
    if sys.argv[1] == "--stage":
        import shutil

        Path(sys.argv[2]).mkdir(parents=True, exist_ok=True)
        n = 0
        for plans in by_case.values():
            for p in plans:
                shutil.copy2(build(generate(p), "so"), sys.argv[2])
                n += 1
        print(f"{n} kernels staged in {sys.argv[2]}")
        return 0
    import torch

    from fusesim.gpu.bench import run_case

    streams = {"default": torch.cuda.current_stream(), "side": torch.cuda.Stream()}
    rows = []
    for case, plans in by_case.items():
        ch = plans[0].chain
        ents = [{"plan": p.to_dict(), "source": "fastest measured " + p.strategy, "so": str(build(generate(p), "so"))}
                for p in plans]
        res: dict[str, list] = {"default": [], "side": []}
        for _ in range(2):
            for name, s in streams.items():
                with torch.cuda.stream(s):
                    r = run_case(ch, ents, 50, 1, True)
                torch.cuda.synchronize()
                res[name].append({"ours": [((p.get("time") or {}).get("queued_median_us"), (p.get("verify") or {}).get("ok"))
                                           for p in r["plans"]],
                                  "eager": r["pytorch"]["eager"]["queued_median_us"],
                                  "graph": r["pytorch"]["graph"]["queued_median_us"]})
        row = {"case": case, "plans": [p.to_dict() for p in plans], "summaries": [p.summary() for p in plans],
               "runs": res}
        rows.append(row)

        print(f"{case:4s} " + " | ".join(f"{n}: ours {_best(res[n], 'ours'):6.2f} eager {_best(res[n], 'eager'):6.2f} "
                                         f"graph {_best(res[n], 'graph'):6.2f}" for n in streams), flush=True)
        Path(sys.argv[1]).write_text(json.dumps({"what": __doc__.splitlines()[0], "gpu": torch.cuda.get_device_name(),
                                                 "rows": rows}, indent=1))  # after every case: a cut run keeps them
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
