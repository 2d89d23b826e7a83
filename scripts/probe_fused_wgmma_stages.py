"""Where does a fused_wgmma kernel spend its time, stage by stage? A per-block %globaltimer timeline.

The generated source of each listed plan (a final-run plan: CASE:INDEX into that case's plans in
results/h200/final_paper_*.json) gets stamps on its first consumer thread: kernel entry, the moment
each pipeline job's full barrier completes (GEMM0's A/B tiles, then GEMM1's D tiles: the data is in
SMEM and the wgmmas may start), GEMM0's last wgmma done, the first GEMM1 job's wait (after the
exchange, combine and shuffle) and the block's end. The kernel is built, verified against the fp32
reference once, then launched after an L2 flush (as fusesim bench times it) 7 times. Per plan it
prints the median block's first-data latency, its GEMM0 and GEMM1 time per stage (from the first to
the last job of each GEMM, over jobs - 1), the exchange gap and the tail. The same numbers come
from the simulator for comparison (`--sim`, on a machine with fusesim's dependencies).

    python3 scripts/probe_fused_wgmma_stages.py OUT.json CASE:INDEX ...   (on the GPU machine)
    python3 scripts/probe_fused_wgmma_stages.py --sim OUT.json            (here: add the simulator's)
"""

from __future__ import annotations

import glob
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from globaltimer_stamps import apply_marks, stamp_decl  # noqa: E402

MAX_JOBS = 256
STAMP_DECL = f"\n#define FS_MAX_JOBS {MAX_JOBS}" + stamp_decl("g_fs_st[2048][FS_MAX_JOBS + 5]", "g_fs_st")
# slots per block: 0 entry, 1 GEMM0 done, 2 end, 3 SM id, 4 jobs stamped, 5.. one per job
WAIT = "fs::wg::mbar_wait(full + s, (j / STAGES) & 1);\n"
STAMP_JOB = ("fs::wg::mbar_wait(full + s, (j / STAGES) & 1);\n"
             "          if (threadIdx.x == 128 && j < FS_MAX_JOBS) { g_fs_st[blockIdx.x][5 + j] = fs_now(); "
             "g_fs_st[blockIdx.x][4] = j + 1; }\n")


def instrument(code: str) -> str:
    """Insert the stamps into a fused_wgmma translation unit."""
    marks = [
        ('#include "wgmma.cuh"\n', '#include "wgmma.cuh"\n' + STAMP_DECL),
        ("  if (!fs::launch_ok(THREADS, GRID, CLUSTER)) return;\n",
         "  if (!fs::launch_ok(THREADS, GRID, CLUSTER)) return;\n"
         "  if (threadIdx.x == 128) g_fs_st[blockIdx.x][0] = fs_now();\n"),
        ("    fs::wg::wgmma_wait<0>();\n    pin(acc0);\n",
         "    fs::wg::wgmma_wait<0>();\n    if (threadIdx.x == 128) g_fs_st[blockIdx.x][1] = fs_now();\n    pin(acc0);\n"),
        ("  (void)ecol0;\n  if constexpr (CLUSTER > 1) fs::cluster_sync();  // own SMEM outlives the peers' pushes and copies\n}\n",
         "  (void)ecol0;\n  if constexpr (CLUSTER > 1) fs::cluster_sync();  // own SMEM outlives the peers' pushes and copies\n"
         "  if (threadIdx.x == 128) {\n    unsigned int sm;\n    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
         "    g_fs_st[blockIdx.x][2] = fs_now();\n    g_fs_st[blockIdx.x][3] = sm;\n  }\n}\n"),
    ]
    code = apply_marks(code, marks, once=True)
    if code.count(WAIT) != 2:  # GEMM0's and GEMM1's consumer waits (the producer waits on `empty`)
        raise SystemExit("template changed: expected two consumer full-barrier waits")
    return code.replace(WAIT, STAMP_JOB)


def final_plans() -> dict[str, list[dict]]:
    plans: dict[str, list[dict]] = {}
    for f in sorted(glob.glob("results/h200/final_paper_*.json")):
        for c in json.loads(Path(f).read_text())["cases"]:
            plans[c["case"]] = [{"plan": p["plan"], "us": p["time"]["queued_median_us"]} for p in c["plans"]]
    return plans


def block_summary(row: list[int], kt0: int, t_ref: int) -> dict[str, float]:
    """One block's stamps -> us: first data, GEMM0 and GEMM1 per stage, gap between them, tail."""
    n = row[4]
    jobs = [(row[5 + i] - t_ref) / 1e3 for i in range(n)]
    entry, g0_done, end = [(row[i] - t_ref) / 1e3 for i in (0, 1, 2)]
    g0 = jobs[:kt0]
    g1 = jobs[kt0:]
    return {"entry": entry, "first_data": jobs[0] - entry,
            "g0_per_stage": (g0[-1] - g0[0]) / (len(g0) - 1) if len(g0) > 1 else 0.0,
            "g0_last_to_done": g0_done - g0[-1],
            "exchange": (g1[0] - g0_done) if g1 else 0.0,
            "g1_per_stage": (g1[-1] - g1[0]) / (len(g1) - 1) if len(g1) > 1 else 0.0,
            "tail": end - (g1[-1] if g1 else g0_done), "end": end, "jobs": n}


def summarize(blocks: list[dict[str, float]]) -> dict[str, float]:
    keys = [k for k in blocks[0] if k != "jobs"]
    out = {k: statistics.median(b[k] for b in blocks) for k in keys}
    out["end_max"] = max(b["end"] for b in blocks)
    out["entry_max"] = max(b["entry"] for b in blocks)
    out["jobs"] = blocks[0]["jobs"]
    return out


def device(out: Path, picks: list[str]) -> int:
    import ctypes

    import torch

    from fusesim.codegen import Source, generate
    from fusesim.codegen.build import build
    from fusesim.gpu.runner import Loaded, bind, make_problem, verify
    from fusesim.gpu.timing import L2Flusher
    from fusesim.plan import Plan

    listed = final_plans()
    flush = L2Flusher()
    result = {"what": __doc__.splitlines()[0], "gpu": torch.cuda.get_device_name(), "plans": {}}
    width = MAX_JOBS + 5
    host = (ctypes.c_ulonglong * (2048 * width))()
    for pick in picks:
        case, idx = pick.split(":")
        entry = listed[case][int(idx)]
        plan = Plan.from_dict(entry["plan"])
        if plan.instruction != "wgmma" or plan.strategy == "unfused":
            raise SystemExit(f"{pick}: not a fused_wgmma plan")
        src = generate(plan)
        so = build(Source(src.name + "_stages", src.family, instrument(src.code)), "so")
        kern = Loaded(so)
        kern.lib.fs_stamps.argtypes = [ctypes.c_void_p]
        ver = verify(kern, plan.chain, seed=3)
        prob = make_problem(plan.chain, seed=4)
        bind(kern, prob)
        grid = plan.kernels[0].grid_blocks
        kt0 = source_kt0(src.code)
        reps = []
        for _ in range(7):
            flush()
            kern.launch(torch.cuda.current_stream().cuda_stream)
            torch.cuda.synchronize()
            if kern.lib.fs_stamps(ctypes.addressof(host)) != 0:
                raise SystemExit("cudaMemcpyFromSymbol failed")
            rows = [[host[b * width + i] for i in range(width)] for b in range(grid)]
            t_ref = min(r[0] for r in rows)
            reps.append(summarize([block_summary(r, kt0, t_ref) for r in rows]))
        reps.sort(key=lambda r: r["end_max"])
        med = reps[len(reps) // 2]
        result["plans"][pick] = {"plan": plan.to_dict(), "measured_us": entry["us"], "verify": ver, "kt0": kt0,
                                 "median_rep": med, "reps": reps}
        print(f"{pick:6s} ok={ver.get('ok')} " + line(med), flush=True)
    out.write_text(json.dumps(result, indent=1))
    return 0


def source_kt0(code: str) -> int:
    """GEMM0's jobs per block, from the generated constants (the template's KT0 = ceil(KSLICE / BK))."""
    k = int(re.search(r"constexpr int M = \d+, N = \d+, K = (\d+)", code).group(1))
    bk = int(re.search(r"BK = (\d+)", code).group(1))
    cls_k = int(re.search(r"CLS_K = (\d+)", code).group(1))
    mul = "constexpr bool MUL_EXCHANGE = true;" in code
    return -(-(k if mul else k // cls_k) // bk)


def line(s: dict[str, float]) -> str:
    return (f"jobs {s['jobs']:3d} | first data {s['first_data']:.2f} | g0 {s['g0_per_stage'] * 1e3:5.0f} ns/stage | "
            f"g0 done +{s['g0_last_to_done'] * 1e3:4.0f} | exchange {s['exchange']:.2f} | g1 {s['g1_per_stage'] * 1e3:5.0f} "
            f"ns/stage | tail {s['tail']:.2f} | end {s['end']:.2f} (max {s['end_max']:.2f}, entries to {s['entry_max']:.2f})")


def main() -> int:
    if sys.argv[1] == "--sim":
        data = json.loads(Path(sys.argv[2]).read_text())
        for pick, p in data["plans"].items():
            print(f"{pick:6s} GPU {p['measured_us']:6.2f} us | " + line(p["median_rep"]))
        return 0
    return device(Path(sys.argv[1]), sys.argv[2:])


if __name__ == "__main__":
    raise SystemExit(main())
