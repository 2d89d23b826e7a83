"""Is a generated kernel's store tail a cold address translation? Time the same kernels after the usual
L2 flush, and after the flush plus a touch of one byte per 64 KiB of some of their buffers.

The per-block timelines (results/h200/probe_fused_wgmma_im2col.json, probe_wgmma_im2col.json) show 1.5-2.2 us
from a block's last wgmma to its end in the 3x3 conv kernels, about the first data's latency, while the
stores themselves are a few KiB per block. The flush (summing a 2.5x L2 buffer) leaves L2 clean but walks
~150 MiB of other pages, so the first touch of each output page may wait for a page walk. A touch of one
byte per 64 KiB brings 1/2048 of a buffer into L2 (a 32-byte sector per 64 KiB) and its translations into
the TLBs: if the kernel then runs faster by about a tail, the tail is translation, not bytes.

Variants per kernel (interleaved, two rounds, queued CUDA-event medians of `--reps`): `flush` (as fusesim
bench), `touch_out` (flush, then touch E, C and the workspaces), `touch_all` (also A and the weights).
Plans: each paper case's fastest verified plan of the final run, and the four unfused plans 0 and the
fused smem plan 8 of the wgmma im2col run (C5-C8).

    python3 scripts/tlb_trial.py OUT.json          (on the GPU machine; kernels from FUSESIM_CACHE)
    python3 scripts/tlb_trial.py --build           (here: compile them into FUSESIM_CACHE)
"""

from __future__ import annotations

import glob
import json
import statistics
import sys
from pathlib import Path

from fusesim.stored import read_json

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FINAL = "results/h200/final_paper_*.json"
IM2COL = "results/h200/wgmma_im2col_paper_*.json"
IM2COL_PICKS = ("C5:0", "C6:0", "C7:0", "C8:0", "C5:8")
STRIDE_BYTES = 64 << 10


def plans() -> list[tuple[str, dict]]:
    """(label, plan dict): each case's fastest verified final-run plan, then the im2col picks."""
    out = []
    for f in sorted(glob.glob(str(ROOT / FINAL))):
        for c in read_json(f)["cases"]:
            ok = [p for p in c["plans"] if p.get("plan") and (p.get("verify") or {}).get("ok")]
            if ok:
                best = min(ok, key=lambda p: p["time"]["queued_median_us"])
                out.append((f"{c['case']} best", best["plan"]))
    im2col = {}
    for f in sorted(glob.glob(str(ROOT / IM2COL))):
        for c in read_json(f)["cases"]:
            im2col[c["case"]] = [p["plan"] for p in c["plans"]]
    for pick in IM2COL_PICKS:
        case, i = pick.split(":")
        out.append((f"{pick} im2col", im2col[case][int(i)]))
    return out


def touch(tensors: list) -> None:
    """Read one byte per STRIDE_BYTES of each tensor (one small kernel per tensor)."""
    import torch

    for t in tensors:
        flat = t.reshape(-1).view(torch.uint8)
        if flat.numel() > STRIDE_BYTES:
            flat[::STRIDE_BYTES].sum()


def time_variants(kern, t: dict, flush, reps: int) -> dict[str, list[float]]:
    """Queued medians of `kern` after each flush variant, interleaved, two rounds."""
    import torch

    from fusesim.gpu.timing import time_fn

    outs = [t[k] for k in ("E", "C", "ws", "tickets")]
    ins = [t[k] for k in ("A", "B0", "B1", "D") if k in t]
    variants = {"flush": flush, "touch_out": lambda: (flush(), touch(outs)),
                "touch_all": lambda: (flush(), touch(outs + ins))}
    stream = torch.cuda.current_stream().cuda_stream
    got: dict[str, list[float]] = {v: [] for v in variants}
    for _ in range(2):
        for name, fl in variants.items():
            got[name].append(time_fn(lambda: kern.launch(stream), fl, reps=reps)["queued_median_us"])
    return got


def device(out: Path) -> int:
    import torch

    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, bind, make_problem, verify
    from fusesim.gpu.timing import L2Flusher
    from fusesim.plan import Plan

    reps = 60
    flush = L2Flusher()
    rows = []
    for label, pd in plans():
        plan = Plan.from_dict(pd)
        kern = Loaded(build(generate(plan), "so"))
        ver = verify(kern, plan.chain, seed=3)
        prob = make_problem(plan.chain, seed=4, reference=False)
        bind(kern, prob)
        got = time_variants(kern, prob.tensors, flush, reps)
        med = {k: statistics.median(v) for k, v in got.items()}
        rows.append({"label": label, "plan": pd, "verify": ver, "queued_median_us": med, "rounds": got})
        print(f"{label:14s} ok={ver['ok']!s:5s} flush {med['flush']:7.2f} | touch_out {med['touch_out']:7.2f} "
              f"({med['touch_out'] / med['flush']:.3f}x) | touch_all {med['touch_all']:7.2f} "
              f"({med['touch_all'] / med['flush']:.3f}x)", flush=True)
    props = torch.cuda.get_device_properties(0)
    out.write_text(json.dumps({"what": __doc__.splitlines()[0], "gpu": props.name, "reps": reps,
                               "stride_bytes": STRIDE_BYTES, "rows": rows}, indent=1))
    ratios = [r["queued_median_us"]["touch_out"] / r["queued_median_us"]["flush"] for r in rows]
    print(f"touch_out / flush: median {statistics.median(ratios):.3f}x ({min(ratios):.3f}-{max(ratios):.3f}x)")
    return 0


def build_only() -> int:
    from fusesim.codegen import generate
    from fusesim.codegen.build import build
    from fusesim.plan import Plan

    for label, pd in plans():
        print(label, build(generate(Plan.from_dict(pd)), "so"))
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--build"]:
        raise SystemExit(build_only())
    raise SystemExit(device(Path(sys.argv[1])))
