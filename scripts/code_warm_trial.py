"""Is part of a generated kernel's fixed cost fetching its own code from a cold L2? Time each paper case's
fastest plan after the usual L2 flush, and after the flush plus one launch of the same kernel on other buffers.

bench evicts L2 before every timed launch (reading a 2.5x L2 buffer), which evicts the kernels' instructions
as well as their data. The per-block timelines show ~1.3-1.7 us from a block's start to its first stage and
~1.7 us from the last wgmma to the block's end even where the epilogue stores a few KiB (G4,
results/h200/probe_wgmma_timeline_small_splitk.json); code first run late (the consumer's loop, the
epilogue) is fetched only then. Variants (interleaved, two rounds, queued CUDA-event medians of `--reps`):
`flush` (as fusesim bench); `warm_self` (flush, then the same kernel once on a second set of buffers: its code
is in L2 and the SMs' instruction caches, its data is not); `warm_other` (flush, then the previous case's
kernel once on its own buffers: as much extra work before the timed launch, none of its code).

    python3 scripts/code_warm_trial.py OUT.json     (on the GPU machine; kernels from FUSESIM_CACHE)
    python3 scripts/code_warm_trial.py --build      (here: compile them into FUSESIM_CACHE)
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from fusesim.stored import glob_json, read_json

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUN = "results/h200/final11_paper_*.json"


def plans() -> list[tuple[str, dict]]:
    """(case, plan dict): each case's fastest verified plan of final11 (the H200 run of kernels.md)."""
    out = []
    for f in glob_json(ROOT / RUN):
        for c in read_json(f)["cases"]:
            ok = [p for p in c["plans"] if p.get("plan") and (p.get("verify") or {}).get("ok") and p.get("time")]
            if ok:
                out.append((c["case"], min(ok, key=lambda p: p["time"]["queued_median_us"])["plan"]))
    return out


def device(out: Path, reps: int = 60) -> int:
    import torch

    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, bind, make_problem, verify
    from fusesim.gpu.timing import L2Flusher, time_fn
    from fusesim.plan import Plan

    flush = L2Flusher()
    stream = torch.cuda.current_stream().cuda_stream
    loaded = []  # (case, plan dict, kernel, verify, its pointers, the spare set's, and both problems, kept alive)
    for case, pd in plans():
        plan = Plan.from_dict(pd)
        kern = Loaded(build(generate(plan), "so"))
        ver = verify(kern, plan.chain, seed=3)
        spare = make_problem(plan.chain, seed=5, reference=False)
        spare_ptrs = bind(kern, spare)
        prob = make_problem(plan.chain, seed=4, reference=False)
        ptrs = bind(kern, prob)
        loaded.append((case, pd, kern, ver, ptrs, spare_ptrs, prob, spare))

    def run_on(kern, on: list[int], back: list[int]) -> None:
        """Launch `kern` on the buffers `on`, then point it back at `back`."""
        kern.bind(on)
        kern.launch(stream)
        kern.bind(back)

    rows = []
    for i, (case, pd, kern, ver, ptrs, spare_ptrs, _, _) in enumerate(loaded):
        other = loaded[i - 1]  # the previous case's kernel on its own buffers
        variants = {"flush": flush,
                    "warm_self": lambda k=kern, p=ptrs, s=spare_ptrs: (flush(), run_on(k, s, p)),
                    "warm_other": lambda k=other[2], p=other[4]: (flush(), run_on(k, p, p))}
        got: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(2):
            for name, fl in variants.items():
                got[name].append(time_fn(lambda k=kern: k.launch(stream), fl, reps=reps)["queued_median_us"])
        med = {k: statistics.median(v) for k, v in got.items()}
        rows.append({"case": case, "plan": pd, "warm_other_case": other[0], "verify": ver, "queued_median_us": med,
                     "rounds": got})
        print(f"{case:4s} ok={ver['ok']!s:5s} flush {med['flush']:7.2f} | warm_self {med['warm_self']:7.2f} "
              f"({med['warm_self'] / med['flush']:.3f}x) | warm_other {med['warm_other']:7.2f} "
              f"({med['warm_other'] / med['flush']:.3f}x)", flush=True)
    props = torch.cuda.get_device_properties(0)
    out.write_text(json.dumps({"what": __doc__.splitlines()[0], "gpu": props.name, "reps": reps, "rows": rows}, indent=1))
    for v in ("warm_self", "warm_other"):
        r = [row["queued_median_us"][v] / row["queued_median_us"]["flush"] for row in rows]
        d = [row["queued_median_us"]["flush"] - row["queued_median_us"][v] for row in rows]
        print(f"{v} / flush: median {statistics.median(r):.3f}x ({min(r):.3f}-{max(r):.3f}x), "
              f"saved median {statistics.median(d):.2f} us ({min(d):.2f}-{max(d):.2f})")
    return 0


def build_only() -> int:
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.plan import Plan

    for case, pd in plans():
        print(case, build(generate(Plan.from_dict(pd)), "so"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--build"]:
        raise SystemExit(build_only())
    raise SystemExit(device(Path(sys.argv[1])))
