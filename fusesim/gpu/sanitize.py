"""compute-sanitizer memcheck, racecheck and synccheck on one kernel per template family and
cluster size (1, 2, 4, 8, 16: the fused template's DSM paths differ by cluster shape).

    python3 -m fusesim.gpu.sanitize --out FILE.json [--tools memcheck,racecheck,synccheck]

Each check runs `compute-sanitizer --tool T --kernel-name kns=fs_` over a child process that
launches the generated kernel once on random inputs (fusesim.gpu.ncu's launcher), so only our
kernels are instrumented. The JSON keeps each tool's summary lines and exit status.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fusesim import capability
from fusesim.codegen.handplans import fused, representative_plans, unfused, unfused_wgmma
from fusesim.gpu.oddshapes import ODD_CHAINS, _ffn
from fusesim.plan import ClusterShape, Plan
from fusesim.workload import Chain, ConvGeom

TOOLS = ("memcheck", "racecheck", "synccheck")
PARALLEL = 8  # sanitizer processes at once (each instruments one small launch)
JOB_TIMEOUT_S = 400.0  # one check's limit; a slower one is killed and recorded (rc -9), the rest go on


def one_cluster(name: str, plan: Plan) -> Plan:
    """The aliased reduce-scatter family on one cluster: same tiles, cluster 8, ring and SMEM layout, two K
    steps per block (8 blocks, 4.5x fewer FLOPs than its 32-block representative, each block's GEMM1 and
    64x512 fp32 E partial unchanged; with N on one cluster E is stored as bf16). Racecheck hung on this
    family, on one cluster too, until the producer's early entry wait (capability.FUSED_PRODUCER_EARLY_WAIT;
    the history: results/h200/README.md); since, both forms are checked, racecheck clean in 10.0 s (one
    cluster) and 10.5 s (whole) on an H100 (results/h200/sanitize_aliased_whole_h100.json)."""
    if name != "fused_wgmma_reduce_receive_aliased":
        return plan
    t, c = plan.tiles, plan.cluster
    chain = dataclasses.replace(plan.chain, m=t.block_m, n=c.n * t.block_n, k=2 * c.k * t.block_k)
    return fused(chain, c, t.block_m, t.block_n, t.block_k, n_split=1, stages=plan.stages, instruction="wgmma")


def family_plans() -> dict[str, Plan]:
    """One plan per template family and cluster size, covering every dsm_comm form."""
    ch = _ffn("san", 96, 1024, 256, 256, "gelu")
    wide = _ffn("san-wide", 96, 1024, 256, 512, "relu")
    g = _ffn("san-gated", 80, 512, 128, 128, gated=True)
    a_loader = "TMA im2col" if capability.WGMMA_IM2COL_TMA else "cp.async"  # the wgmma templates' im2col A
    conv = Chain("san-conv3x3", "conv_chain", 2 * 9 * 11, 64, 9 * 32, 128, "relu", False, conv=ConvGeom(2, 9, 11, 32, 3))
    reps = representative_plans()
    return {
        "gemm (unfused, gated, predicated M), cluster 1": unfused(ODD_CHAINS[3], 64, 32, 32),
        "gemm_wgmma (TMA + wgmma, gated, split-K 2 + 4, predicated M), cluster 1": unfused_wgmma(
            _ffn("san-wg-gated", 200, 512, 512, 256, gated=True), 128, 128, 4, split0=2, split1=4),
        "gemm_wgmma (64-row tiles, split-K 3, M = 33), cluster 1": unfused_wgmma(
            _ffn("san-wg", 33, 256, 768, 128, "gelu"), 64, 64, 4, split0=1, split1=3, bn1=64),
        "gemm_wgmma (split-K through DSM 2 + 4, predicated M), clusters 2 and 4": unfused_wgmma(
            _ffn("san-wg-dsm", 200, 512, 512, 256, "gelu"), 128, 128, 4, split0=2, split1=4, dsm_split=(True, True)),
        "gemm implicit im2col (3x3 conv, rows decoded once, batch 2, image edges, predicated M), cluster 1": unfused(
            conv, 64, 64, 32),
        "fused dsm implicit im2col (rows decoded once, exchange + shuffle, predicated M), cluster 4": fused(
            conv, ClusterShape(1, 2, 2, 4), 64, 32, 16, n_split=1),
        "fused smem (inter_cluster_reduce), cluster 1": fused(ch, ClusterShape(1, 1, 1, 1), 64, 64, 64, n_split=4),
        "fused dsm (exchange add + inter_cluster_reduce), cluster 2": fused(ch, ClusterShape(1, 1, 2, 2), 64, 64, 64,
                                                                             n_split=2),
        "fused dsm (ring shuffle), cluster 2": fused(ch, ClusterShape(1, 2, 1, 2), 64, 64, 64, n_split=2),
        "fused dsm (mul exchange + shuffle + inter_cluster_reduce), cluster 4": fused(
            g, ClusterShape(1, 2, 2, 4), 64, 64, 64, n_split=2, gated_mode="mul_exchange"),
        "fused dsm (exchange add + shuffle + reduce_scatter), cluster 8": fused(ch, ClusterShape(1, 4, 2, 4),
                                                                                64, 64, 64, n_split=1),
        "fused dsm, E in registers + shared SMEM (all four forms), cluster 8": fused(
            ch, ClusterShape(1, 4, 2, 4), 64, 64, 64, n_split=4),
        "fused dsm (cls_m 2, exchange + shuffle + reduce_scatter), cluster 16": fused(
            ch, ClusterShape(2, 4, 2, 8), 64, 64, 64, n_split=1),
        "fused dsm (exchange + 16-block ring), cluster 16": fused(wide, ClusterShape(1, 8, 2, 16), 64, 64, 64,
                                                                  n_split=1),
        f"gemm_wgmma implicit im2col (conv3x3, {a_loader} A + TMA B on one ring, split-K 3, predicated M), cluster 1":
            reps["gemm_wgmma_conv3x3_split_predicated"],
        **{f"fused_wgmma ({name[len('fused_wgmma_'):].replace('_', ' ')}), cluster {plan.cluster.size}":
           one_cluster(name, plan) for name, plan in reps.items() if name.startswith("fused_wgmma")},
        # the aliased family whole (4 clusters of 8, inter_cluster_reduce after the reduce-scatter): its racecheck
        # finishes since the producer's early entry wait (FUSED_PRODUCER_EARLY_WAIT)
        **({"fused_wgmma (reduce receive aliased, 4 clusters), cluster 8": reps["fused_wgmma_reduce_receive_aliased"]}
           if capability.FUSED_PRODUCER_EARLY_WAIT else {}),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--work", default="/tmp/sanitize_work")
    p.add_argument("--tools", default=",".join(TOOLS))
    p.add_argument("--only", default="", help="families whose name contains this text (default: all)")
    p.add_argument("--switches", default="", help="generator switches as JSON (capability.codegen_switches' keys), "
                   "e.g. to check the kernels a measured file ran")
    p.add_argument("--job-timeout-s", type=float, default=JOB_TIMEOUT_S, help="one check's limit (killed: rc -9)")
    p.add_argument("--sanitizer-args", default="", help="more compute-sanitizer options, recorded in each row "
                   "(e.g. '--racecheck-memcpy-async no' to tell a racecheck hang from its async-copy tracking)")
    args = p.parse_args(argv)
    tools = tuple(args.tools.split(","))
    extra = shlex.split(args.sanitizer_args)
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.gpu.bench import build_all

    exe = shutil.which("compute-sanitizer")
    if exe is None:
        print("compute-sanitizer not found")
        return 1
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    switches = {**codegen_switches(), **(json.loads(args.switches) if args.switches else {})}
    with generator_switches(switches):  # the families too: their plans and names follow the switches
        plans = {k: v for k, v in family_plans().items() if args.only in k}
        built = build_all(list(plans.values()), jobs=8)
    jobs: list[tuple[str, str, list[str], Path]] = []
    rows: list[dict[str, Any]] = []
    for i, ((name, plan), (so, err)) in enumerate(zip(plans.items(), built, strict=True)):
        if not so:
            print(f"{name}: build failed {err[:200]}")
            rows.append({"family": name, "tool": "build", "rc": -1, "summary": [err[:300]],
                         "plan": plan.summary(), "case": plan.case_id})
            continue
        spec = work / f"{plan.case_id}_{plan.strategy}_{i}.json"
        spec.write_text(json.dumps(plan.chain.to_dict()))
        for tool in tools:
            log = work / f"{spec.stem}_{tool}.log"
            cmd = [exe, "--tool", tool, *extra, "--kernel-name", "kns=fs_", "--error-exitcode", "9",
                   sys.executable, "-m", "fusesim.gpu.ncu", so, str(spec)]
            jobs.append((name, tool, cmd, log))
    pending = list(jobs)
    running: list[tuple[str, str, Any, Path, float]] = []
    while pending or running:
        while pending and len(running) < PARALLEL:
            name, tool, cmd, log = pending.pop(0)
            with log.open("w") as out:  # the child keeps its own copy of the descriptor
                proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
            running.append((name, tool, proc, log, time.monotonic()))
        done = [job for job in running if job[2].poll() is not None or time.monotonic() - job[4] > args.job_timeout_s]
        if not done:
            time.sleep(0.5)
            continue
        for job in done:
            running.remove(job)
            name, tool, proc, log, t0 = job
            rows.append(_finish(name, tool, proc, log, plans[name], time.monotonic() - t0, extra))
        # after every finished check, so that a run cut short (or one slow check) keeps what was checked
        Path(args.out).write_text(json.dumps({"what": "compute-sanitizer on one kernel per template family and "
                                                      "cluster size", "tools": list(tools), "codegen": switches,
                                              "rows": rows}, indent=1))
    return 0 if rows and all(r["rc"] == 0 for r in rows) else 1


def _finish(name: str, tool: str, proc: Any, log: Path, plan: Plan, seconds: float,
            extra: list[str]) -> dict[str, Any]:
    """One check's row; a check still running (past its limit) is killed and recorded with rc -9."""
    killed = proc.poll() is None
    if killed:
        proc.kill()
        proc.wait()
    rc = -9 if killed else proc.returncode
    text = log.read_text(errors="replace")
    summary = [ln.strip() for ln in text.splitlines() if "SUMMARY" in ln or "Error" in ln][-6:]
    print(f"{tool:9s} rc={rc:3d} {seconds:6.1f} s {name}: {' | '.join(summary)[:150]}", flush=True)
    return {"family": name, "tool": tool, "rc": rc, "seconds": round(seconds, 1), "summary": summary,
            "plan": plan.summary(), "case": plan.case_id, "cluster_size": max([plan.cluster.size, *(k.cluster_size for k in plan.kernels)]),
            **({"sanitizer_args": extra} if extra else {})}


if __name__ == "__main__":
    sys.exit(main())
