"""Two small experiments on the H200, one device call (writes JSON, prints tables):

1. Where a tiny chain's ~10 us goes. For the planner's best G1 / G3 kernels: the usual timing
   (L2 flushed by a read before every launch), the same without the flush (warm L2 and TLB), the
   same kernel with the SMEM carveout preference set to the maximum (no L1/SMEM reconfiguration
   between the flush kernel and ours), and a single cuBLAS GEMM of the chain's first GEMM and a
   one-element torch add (the cold-launch floor) timed the same way.
2. What Nsight Compute counts as DSM bytes. One plan per dsm_comm form whose payload the dataflow
   analyzer counts exactly, built with fp32 SMEM rows padded by 4 floats (16 B: odd rows are not
   32-byte aligned) and by 8 floats (32 B: every row aligned); DSM bytes read by ncu vs payload.

Usage (device, repo root, wheels installed as in scripts/device_bench.sh):
    python3 scripts/probe_small_and_dsm.py OUT_DIR [--dsm-only]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import fusesim.capability as capability
import fusesim.codegen as codegen
from fusesim.codegen.build import build
from fusesim.codegen.handplans import fused
from fusesim.gpu.ncu import METRICS, _ncu_cmd, _run_ncu, so_kernel_stem
from fusesim.gpu.oddshapes import _ffn
from fusesim.hardware import load_hardware
from fusesim.plan import ClusterShape, Plan
from fusesim.planner import analyze
from fusesim.stored import read_json

DSM = "l1tex__m_xbar2l1tex_read_bytes_mem_dshared.sum"
CARVEOUT = "cudaFuncAttributePreferredSharedMemoryCarveout, 100));\n  FS_CHECK(cudaFuncSetAttribute("


def _so(plan: Plan, carveout: bool = False) -> str:
    src = codegen.generate(plan)
    if carveout:
        code = src.code.replace("FS_CHECK(cudaFuncSetAttribute(", "FS_CHECK(cudaFuncSetAttribute(" + _kernel(src.code)
                                + ", " + CARVEOUT, 1)
        src = codegen.Source(src.name + "_carve", src.family, code)
    return str(build(src, "so"))


def _kernel(code: str) -> str:
    i = code.index("FS_CHECK(cudaFuncSetAttribute(") + len("FS_CHECK(cudaFuncSetAttribute(")
    return code[i:code.index(",", i)]


def small_cases(out: Path) -> list[dict[str, Any]]:
    import torch

    from fusesim.gpu.runner import Loaded, bind, make_problem
    from fusesim.gpu.timing import L2Flusher, time_fn
    from fusesim.workload import Chain

    doc = read_json("results/h200/planner_paper_gemm_chains.json")
    flush = L2Flusher("read")
    rows = []

    def none() -> None:
        return None

    for c in doc["cases"]:
        if c["case"] not in ("G1", "G2", "G3"):
            continue
        ok = [r for r in c["plans"] if r.get("verify", {}).get("ok")]
        best = min(ok, key=lambda r: r["time"]["queued_median_us"])
        plan = Plan.from_dict(best["plan"])
        ch = Chain.from_dict(c["chain"])
        for label, carve in (("kernel", False), ("kernel + carveout 100", True)):
            kern = Loaded(Path(_so(plan, carve)))
            prob = make_problem(ch, seed=3)
            bind(kern, prob)
            s = torch.cuda.current_stream().cuda_stream
            cold = time_fn(lambda k=kern, s=s: k.launch(s), flush, reps=100)
            warm = time_fn(lambda k=kern, s=s: k.launch(s), none, reps=100)  # type: ignore[arg-type]
            rows.append({"case": c["case"], "what": label, "plan": plan.summary(),
                         "cold_queued_us": cold["queued_median_us"], "warm_queued_us": warm["queued_median_us"]})
        a = torch.randn(ch.m, ch.k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(ch.k, ch.n, device="cuda", dtype=torch.bfloat16)
        x = torch.ones(1, device="cuda")
        for label, fn in (("cuBLAS A@B (one GEMM)", lambda a=a, b=b: a @ b), ("torch add, 1 element", lambda x=x: x + 1)):
            cold = time_fn(fn, flush, reps=100)
            warm = time_fn(fn, none, reps=100)  # type: ignore[arg-type]
            rows.append({"case": c["case"], "what": label, "cold_queued_us": cold["queued_median_us"],
                         "warm_queued_us": warm["queued_median_us"]})
    return rows


def dsm_plans() -> dict[str, Plan]:
    ch = _ffn("dsmprobe", 128, 2048, 512, 512, "relu")
    return {
        "dsm_all_exchange only (1,1,2,2)": fused(ch, ClusterShape(1, 1, 2, 2), 64, 128, 64, n_split=1),
        "dsm_reduce_scatter only (1,8,1,1)": fused(ch, ClusterShape(1, 8, 1, 1), 64, 64, 64, n_split=1),
        "dsm_shuffle only (1,4,1,4)": fused(ch, ClusterShape(1, 4, 1, 4), 64, 64, 64, n_split=1),
    }


def dsm_bytes(work: Path) -> list[dict[str, Any]]:
    hw = load_hardware("hw_configs/h200.yaml")
    items, meta = [], []
    for pad in (4, 8):
        capability.PAD_F32 = pad
        codegen.PAD_F32 = pad
        for name, plan in dsm_plans().items():
            plan = fused(plan.chain, plan.cluster, plan.tiles.block_m, plan.tiles.block_n, plan.tiles.block_k,
                         n_split=plan.n_split)  # re-laid out with this padding
            so = _so(plan)
            items.append({"so": so, "chain": plan.chain.to_dict()})
            meta.append((pad, name, plan, so))
    capability.PAD_F32 = codegen.PAD_F32 = 4
    spec = work / "dsm_probe.json"
    spec.write_text(json.dumps(items))
    launches, err = _run_ncu(_ncu_cmd(shutil.which("ncu") or "ncu", ["--launch-many", str(spec)]), 300)
    if err:
        raise SystemExit(err)
    rows = []
    for pad, name, plan, so in meta:
        got = [k for k in launches if k["name"].endswith(so_kernel_stem(so))]
        payload = analyze(plan, hw).dsm
        ncu = sum(k.get(DSM, 0.0) for k in got)
        rows.append({"form": name, "pad_f32": pad, "plan": plan.summary(), "payload_bytes": payload,
                     "ncu_dsm_bytes": ncu, "ratio": ncu / payload if payload else None,
                     "ncu": {m: sum(k.get(m, 0.0) for k in got) for m in METRICS}})
    return rows


def main() -> int:
    from fusesim.gpu.env import environment

    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    work = Path("/tmp/probe_work")
    work.mkdir(parents=True, exist_ok=True)
    dsm_only = sys.argv[2:] == ["--dsm-only"]
    small = [] if dsm_only else small_cases(out)
    dsm = dsm_bytes(work)
    doc = {"what": "small-chain latency breakdown and DSM byte accounting probes", "env": environment(),
           "command": "python3 scripts/probe_small_and_dsm.py $OUT" + (" --dsm-only" if dsm_only else ""),
           "small": small, "dsm": dsm}
    (out / ("probe_dsm.json" if dsm_only else "probe_small_and_dsm.json")).write_text(json.dumps(doc, indent=1))
    print(f"{'case':4s} {'what':28s} {'cold us':>8s} {'warm us':>8s}")
    for r in small:
        print(f"{r['case']:4s} {r['what']:28s} {r['cold_queued_us']:8.2f} {r['warm_queued_us']:8.2f}")
    print(f"{'form':36s} {'pad':>3s} {'payload':>10s} {'ncu dsm':>10s} {'ratio':>6s}")
    for r in dsm:
        print(f"{r['form']:36s} {r['pad_f32']:3d} {r['payload_bytes']:10.0f} {r['ncu_dsm_bytes']:10.0f} "
              f"{(r['ratio'] or 0):6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
