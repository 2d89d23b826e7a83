"""Where does a fused_wgmma kernel spend its time, stage by stage? A per-block %globaltimer timeline.

The generated source of each listed plan (a final-run plan: CASE:INDEX into that case's plans in
results/h200/final_paper_*.json) gets stamps on its first consumer thread: kernel entry, the moment
each pipeline job's full barrier completes (GEMM0's A/B tiles, then GEMM1's D tiles: the data is in
SMEM and the wgmmas may start), GEMM0's last wgmma done, the first GEMM1 job's wait (after the
exchange, combine and shuffle), then through the store phase (GEMM1's last wgmma, the block barrier
after the E partial is in SMEM, the reduce-scatter's cluster barrier, all slices in, summed and
stored, inter_cluster_reduce done) and the block's end (after the exit cluster barrier). The kernel is built, verified against the fp32
reference once, then launched after an L2 flush (as fusesim bench times it) 7 times. Per plan it
prints the median block's first-data latency, its GEMM0 and GEMM1 time per stage (from the first to
the last job of each GEMM, over jobs - 1), the exchange gap and the tail, step by step. The same numbers come
from the simulator for comparison (`--sim`, on a machine with fusesim's dependencies). The median
launch's per-block marks are kept too (`blocks`), with `skew`: per mark, the median over clusters of the
latest block's lead over the cluster's median block, which a cluster barrier after that mark waits out
(added 2026-12-04 22:00 UTC for a model of cluster-barrier skew; first run in results/h200/probe_fused_wgmma_tail.json).
Each warpgroup's thread 0 also stamps its arrival at the block barrier before the store phase (`sync_*`, us from the
first consumer's last wgmma: results/h200/probe_sync_*.json).

    python3 scripts/probe_fused_wgmma_stages.py OUT.json CASE:INDEX ...   (on the GPU machine)
    python3 scripts/probe_fused_wgmma_stages.py --sim OUT.json [HW.yaml]  (here: next to the simulator's)
    python3 scripts/probe_fused_wgmma_stages.py [--from GLOB] --build CASE:INDEX ...  (here: into FUSESIM_CACHE)
(--from GLOB: the plans of those bench files instead of the final run's, e.g. the wgmma im2col run's; an
implicit-im2col kernel gets its producer's stamps too, see producer_lags; PROBE_SWITCHES: see main)
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

from fusesim.stored import glob_json

sys.path.insert(0, str(Path(__file__).parent))
from globaltimer_stamps import apply_marks, build_instrumented, load_verified, stamp_decl, stamped_launches  # noqa: E402

from fusesim.stored import read_json

MAX_JOBS = 256
TAIL = ("last_wgmma", "block_sync", "cluster_sync", "slices_in", "summed", "reduced")
PROD = MAX_JOBS + 5 + len(TAIL)  # first producer slot
SYNC = PROD + 2 * MAX_JOBS  # warpgroups 0 (producer), 1, 2 (consumers) reaching the block barrier before the store
SYNC_WHO = ("producer", "consumer_wg1", "consumer_wg2")
WIDTH = SYNC + len(SYNC_WHO)
# a TMA-producer kernel's prologue (the producer slots are the im2col producer's otherwise; these two, the last of
# them, stay free there below 254 GEMM0 jobs): thread 0 past the block barrier after mbarrier init, and done
# issuing job 0's loads
PRO_SYNCED, PRO_ISSUED = SYNC - 2, SYNC - 1
STAMP_DECL = (f"\n#define FS_MAX_JOBS {MAX_JOBS}\n#define FS_TAIL (FS_MAX_JOBS + 5)\n#define FS_PROD {PROD}"
              f"\n#define FS_ARR {PROD + MAX_JOBS}\n#define FS_SYNC {SYNC}\n#define FS_PRO {PRO_SYNCED}"
              + stamp_decl(f"g_fs_st[2048][{WIDTH}]", "g_fs_st"))
# slots per block: 0 entry, 1 GEMM0 done, 2 end, 3 SM id, 4 jobs stamped, 5.. one per job, then TAIL
# (0 where the plan has no such step); then, for an implicit-im2col kernel, the producer's thread 0 per
# job: when it found the stage empty (FS_PROD + j), and when it arrived on GEMM0 job j's full barrier
# (FS_ARR + j), `LAG` jobs later, once its copies had landed
FINAL = "results/h200/final_paper_*.json"
PRODUCER = [  # the implicit-im2col producer loop (fused_wgmma.cu.j2 `{% if im2col %}`)
    ("      fs::wg::mbar_wait(empty + s, ((j / STAGES) & 1) ^ 1);\n      if (j < KT0) {\n        const int kk",
     "      fs::wg::mbar_wait(empty + s, ((j / STAGES) & 1) ^ 1);\n"
     "      if (threadIdx.x == 0 && j < FS_MAX_JOBS) g_fs_st[blockIdx.x][FS_PROD + j] = fs_now();\n"
     "      if (j < KT0) {\n        const int kk"),
    ("        fs::wg::mbar_arrive(full + (j - LAG) % STAGES);\n",
     "        fs::wg::mbar_arrive(full + (j - LAG) % STAGES);\n"
     "        if (threadIdx.x == 0 && j - LAG < FS_MAX_JOBS) g_fs_st[blockIdx.x][FS_ARR + j - LAG] = fs_now();\n"),
    ("    for (int j = JOBS > LAG ? JOBS - LAG : 0; j < KT0; ++j) fs::wg::mbar_arrive(full + j % STAGES);\n",
     "    for (int j = JOBS > LAG ? JOBS - LAG : 0; j < KT0; ++j) {\n      fs::wg::mbar_arrive(full + j % STAGES);\n"
     "      if (threadIdx.x == 0 && j < FS_MAX_JOBS) g_fs_st[blockIdx.x][FS_ARR + j] = fs_now();\n    }\n"),
]
# the block's last statement: the exit cluster barrier (its wait half only where the arrive went early:
# capability.FUSED_EARLY_EXIT_ARRIVE's reduce-scatter plans; a relaxed arrive and the wait: FUSED_RELAXED_ARRIVE)
EXIT_BARRIERS = ("  if constexpr (CLUSTER > 1) fs::cluster_sync();  // own SMEM outlives the peers' pushes and copies\n",
                 "  fs::cluster_wait();  // own SMEM outlives the peers' pushes and copies\n",
                 "  if constexpr (CLUSTER > 1) {  // own SMEM outlives the peers' pushes and copies (each waited on by its "
                 "receiver)\n    fs::cluster_arrive_relaxed();\n    fs::cluster_wait();\n  }\n")
PROLOGUE = [("  if (wg == 0) {\n", "  if (wg == 0) {\n    if (threadIdx.x == 0) g_fs_st[blockIdx.x][FS_PRO] = fs_now();\n")]
ISSUED = "          }\n        } else {\n          const int u = j - KT0;"
ISSUED_STAMP = ("          }\n          if (j == 0) g_fs_st[blockIdx.x][FS_PRO + 1] = fs_now();\n        } else {\n"
                "          const int u = j - KT0;")
WAIT = "fs::wg::mbar_wait(full + s, (j / STAGES) & 1);\n"
STAMP_JOB = ("fs::wg::mbar_wait(full + s, (j / STAGES) & 1);\n"
             "          if (threadIdx.x == 128 && j < FS_MAX_JOBS) { g_fs_st[blockIdx.x][5 + j] = fs_now(); "
             "g_fs_st[blockIdx.x][4] = j + 1; }\n")


def instrument(code: str) -> str:
    """Insert the stamps into a fused_wgmma translation unit."""
    exit_barrier = next((b for b in EXIT_BARRIERS if f"  (void)ecol0;\n{b}}}\n" in code), None)
    if exit_barrier is None:
        raise SystemExit("template changed: the block's exit barrier is none of EXIT_BARRIERS")
    marks = [
        ('#include "wgmma.cuh"\n', '#include "wgmma.cuh"\n' + STAMP_DECL),
        ("  if (!fs::launch_ok(THREADS, GRID, CLUSTER)) return;\n",
         "  if (!fs::launch_ok(THREADS, GRID, CLUSTER)) return;\n"
         "  if (threadIdx.x == 128) g_fs_st[blockIdx.x][0] = fs_now();\n"),
        ("    fs::wg::wgmma_wait<0>();\n    pin(acc0);\n",
         "    fs::wg::wgmma_wait<0>();\n    if (threadIdx.x == 128) g_fs_st[blockIdx.x][1] = fs_now();\n    pin(acc0);\n"),
        (f"  (void)ecol0;\n{exit_barrier}}}\n",
         f"  (void)ecol0;\n{exit_barrier}"
         "  if (threadIdx.x == 128) {\n    unsigned int sm;\n    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
         "    g_fs_st[blockIdx.x][2] = fs_now();\n    g_fs_st[blockIdx.x][3] = sm;\n  }\n}\n"),
    ]
    tail = [  # the store phase: GEMM1's last wgmma, the block barrier, the reduce-scatter, the reduction
        ("      fs::wg::wgmma_wait<0>();\n      pin(acc);\n      release_pending();\n",
         "      fs::wg::wgmma_wait<0>();\n      if (threadIdx.x == 128) g_fs_st[blockIdx.x][FS_TAIL + 0] = fs_now();\n"
         "      pin(acc);\n      release_pending();\n"),
        ("  __syncthreads();\n\n  // ---- Store: dsm_reduce_scatter",
         "  if (threadIdx.x % 128 == 0) g_fs_st[blockIdx.x][FS_SYNC + threadIdx.x / 128] = fs_now();\n"
         "  __syncthreads();\n  if (threadIdx.x == 128) g_fs_st[blockIdx.x][FS_TAIL + 1] = fs_now();\n\n"
         "  // ---- Store: dsm_reduce_scatter"),
        ("      fs::cluster_sync();  // every partial E is in ebuf and every ring (which erecv reuses) is drained\n",
         "      fs::cluster_sync();  // every partial E is in ebuf and every ring (which erecv reuses) is drained\n"
         "      if (threadIdx.x == 128) g_fs_st[blockIdx.x][FS_TAIL + 2] = fs_now();\n"),
        ("    fs::wg::mbar_wait_cluster(rbar, 0);\n",  # (the early exit arrive follows it where switched on)
         "    fs::wg::mbar_wait_cluster(rbar, 0);\n    if (threadIdx.x == 128) g_fs_st[blockIdx.x][FS_TAIL + 3] = fs_now();\n"),
        ("  if constexpr (N_SPLIT > 1) {\n    // inter_cluster_reduce",
         "  if (threadIdx.x == 128) g_fs_st[blockIdx.x][FS_TAIL + 4] = fs_now();\n"
         "  if constexpr (N_SPLIT > 1) {\n    // inter_cluster_reduce"),
        ("  (void)ecol0;\n", "  (void)ecol0;\n  if (threadIdx.x == 128) g_fs_st[blockIdx.x][FS_TAIL + 5] = fs_now();\n"),
    ]
    code = apply_marks(code, marks, once=True)
    code = apply_marks(code, tail, once=True)
    if "arows.load_sw128" in code:
        code = apply_marks(code, PRODUCER, once=True)
    else:
        code = apply_marks(code, PROLOGUE, once=True)
        if ISSUED not in code:
            raise SystemExit("template changed: cannot find the producer's job loop (ISSUED)")
        code = code.replace(ISSUED, ISSUED_STAMP)  # the job loop is rendered once or twice (the early wait's halves)
    if code.count(WAIT) != 2:  # GEMM0's and GEMM1's consumer waits (the producer waits on `empty`)
        raise SystemExit("template changed: expected two consumer full-barrier waits")
    return code.replace(WAIT, STAMP_JOB)


def final_plans(pattern: str = FINAL) -> dict[str, list[dict]]:
    plans: dict[str, list[dict]] = {}
    for f in glob_json(pattern):
        for c in read_json(f)["cases"]:
            plans[c["case"]] = [{"plan": p["plan"], "us": p["time"]["queued_median_us"]} for p in c["plans"]]
    return plans


def producer_lags(row: list[int], jobs: int, kt0: int, stages: int) -> dict[str, float]:
    """An implicit-im2col block's producer chain, medians over GEMM0's jobs, us: `p_react`, from the
    consumers seeing job j - stages + 1 full (they free job j - stages in that stage) to the producer
    finding job j's stage empty; `p_issue_to_arrive`, from finding job t + lag's stage empty to arriving
    on job t (its own copies issued, job t's landed, the proxy fence); `c_wake`, from that arrival (its
    thread 0's) to the consumers seeing job t full."""
    from fusesim.capability import wgmma_im2col_lag

    lag = wgmma_im2col_lag(stages)
    full = [row[5 + j] for j in range(jobs)]
    prod = [row[PROD + j] for j in range(min(jobs, MAX_JOBS))]
    arr = [row[PROD + MAX_JOBS + t] for t in range(min(kt0, MAX_JOBS))]
    react = [prod[j] - full[j - stages + 1] for j in range(stages, min(jobs, len(prod))) if prod[j]]
    issue = [arr[t] - prod[t + lag] for t in range(len(arr)) if arr[t] and t + lag < len(prod) and prod[t + lag]]
    wake = [full[t] - arr[t] for t in range(min(len(arr), jobs)) if arr[t]]

    def med(v: list[int]) -> float:
        return statistics.median(v) / 1e3 if v else 0.0

    return {"p_react": med(react), "p_issue_to_arrive": med(issue), "c_wake": med(wake)}


def block_summary(row: list[int], kt0: int, t_ref: int, stages: int = 0) -> dict[str, float]:
    """One block's stamps -> us: first data, GEMM0 and GEMM1 per stage, gap between them, tail."""
    n = row[4]
    jobs = [(row[5 + i] - t_ref) / 1e3 for i in range(n)]
    entry, g0_done, end = [(row[i] - t_ref) / 1e3 for i in (0, 1, 2)]
    g0 = jobs[:kt0]
    g1 = jobs[kt0:]
    marks = [(row[5 + MAX_JOBS + i] - t_ref) / 1e3 if row[5 + MAX_JOBS + i] else None for i in range(len(TAIL))]
    steps = {}
    prev = g1[-1] if g1 else g0_done
    for name, t in zip(TAIL, marks, strict=True):  # each step's time from the previous stamped one
        if t is not None:
            steps["tail_" + name] = t - prev
            prev = t
    steps["tail_end"] = end - prev
    if stages and row[PROD]:  # the im2col producer: see producer_lags
        steps.update(producer_lags(row, n, kt0, stages))
    elif row[PRO_SYNCED] and row[PRO_ISSUED]:  # a TMA producer: its prologue, from the first consumer's entry
        steps["pro_synced"] = (row[PRO_SYNCED] - row[0]) / 1e3
        steps["pro_issued"] = (row[PRO_ISSUED] - row[0]) / 1e3
    last = row[5 + MAX_JOBS]  # GEMM1's last wgmma done (first consumer thread)
    for i, who in enumerate(SYNC_WHO):  # each warpgroup at the block barrier, from that moment
        if last and row[SYNC + i]:
            steps[f"sync_{who}"] = (row[SYNC + i] - last) / 1e3
    return {**steps, "entry": entry, "first_data": jobs[0] - entry,
            "g0_per_stage": (g0[-1] - g0[0]) / (len(g0) - 1) if len(g0) > 1 else 0.0,
            "g0_last_to_done": g0_done - g0[-1],
            "exchange": (g1[0] - g0_done) if g1 else 0.0,
            "g1_per_stage": (g1[-1] - g1[0]) / (len(g1) - 1) if len(g1) > 1 else 0.0,
            "tail": end - (g1[-1] if g1 else g0_done), "end": end, "jobs": n}


def block_marks(row: list[int], kt0: int, t_ref: int) -> dict[str, float]:
    """One block's stamps as times (us from the launch's first block entry), for skew between blocks:
    entry, first data, GEMM0's last wgmma, GEMM1's first and last data, the tail marks it has, end."""
    n = row[4]
    at = {"entry": row[0], "first_data": row[5] if n else 0, "g0_done": row[1],
          "g1_first": row[5 + kt0] if n > kt0 else 0, "g1_last": row[5 + n - 1] if n > kt0 else 0,
          **{name: row[5 + MAX_JOBS + i] for i, name in enumerate(TAIL)}, "end": row[2]}
    return {k: (v - t_ref) / 1e3 for k, v in at.items() if v} | {"sm": row[3]}


def cluster_skew(blocks: list[dict[str, float]], cluster: int) -> dict[str, float]:
    """Per mark, the median over clusters of (latest block - median block) within a cluster: how long a
    barrier right after that mark waits for the cluster's slowest block beyond the typical one."""
    out = {}
    for key in ("first_data", "g0_done", "g1_first", "g1_last", *TAIL, "end"):
        spreads = []
        for c0 in range(0, len(blocks), max(cluster, 1)):
            ts = [b[key] for b in blocks[c0:c0 + cluster] if key in b]
            if len(ts) == max(cluster, 1):
                spreads.append(max(ts) - statistics.median(ts))
        if spreads:
            out[key] = statistics.median(spreads)
    return out


def summarize(blocks: list[dict[str, float]]) -> dict[str, float]:
    keys = [k for k in blocks[0] if k != "jobs" and all(k in b for b in blocks)]
    out = {k: statistics.median(b[k] for b in blocks) for k in keys}
    out["end_max"] = max(b["end"] for b in blocks)
    out["entry_max"] = max(b["entry"] for b in blocks)
    out["jobs"] = blocks[0]["jobs"]
    return out


def device(out: Path, picks: list[str], pattern: str = FINAL) -> int:
    import ctypes

    import torch

    from fusesim.codegen import generate
    from fusesim.plan import Plan

    listed = final_plans(pattern)
    from fusesim.capability import codegen_switches

    result = {"what": __doc__.splitlines()[0], "gpu": torch.cuda.get_device_name(), "codegen": codegen_switches(),
              "plans": {}}
    width = WIDTH
    host = (ctypes.c_ulonglong * (2048 * width))()
    for pick in picks:
        case, idx = pick.split(":")
        entry = listed[case][int(idx)]
        plan = Plan.from_dict(entry["plan"])
        if plan.instruction != "wgmma" or plan.strategy == "unfused":
            raise SystemExit(f"{pick}: not a fused_wgmma plan")
        src = generate(plan)
        kern, ver = load_verified(plan, src.name + "_stages", instrument(src.code))
        grid = plan.kernels[0].grid_blocks
        kt0 = source_kt0(src.code)
        stages = int(re.search(r"STAGES = (\d+)", src.code).group(1))
        reps, marks = [], []
        for _ in stamped_launches(kern, host):
            rows = [[host[b * width + i] for i in range(width)] for b in range(grid)]
            t_ref = min(r[0] for r in rows)
            reps.append(summarize([block_summary(r, kt0, t_ref, stages) for r in rows]))
            marks.append([block_marks(r, kt0, t_ref) for r in rows])
        order = sorted(range(len(reps)), key=lambda i: reps[i]["end_max"])
        med = reps[order[len(order) // 2]]
        blocks = marks[order[len(order) // 2]]
        result["plans"][pick] = {"plan": plan.to_dict(), "measured_us": entry["us"], "verify": ver, "kt0": kt0,
                                 "median_rep": med, "reps": [reps[i] for i in order], "blocks": blocks,
                                 "skew": cluster_skew(blocks, plan.kernels[0].cluster_size)}
        print(f"{pick:6s} ok={ver.get('ok')} " + line(med), flush=True)
        print("       skew (max - median within a cluster, us): " + ", ".join(
            f"{k} {v:.2f}" for k, v in result["plans"][pick]["skew"].items()), flush=True)
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
    steps = " ".join(f"{k[5:]} {v:.2f}" for k, v in s.items() if k.startswith("tail_"))
    at_sync = " ".join(f"{k[5:]} {v:.2f}" for k, v in s.items() if k.startswith("sync_"))
    return (f"[tail: {steps}] " + (f"[at the block barrier, from the last wgmma: {at_sync}] " if at_sync else "") + f"jobs {s['jobs']:3d} | first data {s['first_data']:.2f} | g0 {s['g0_per_stage'] * 1e3:5.0f} ns/stage | "
            f"g0 done +{s['g0_last_to_done'] * 1e3:4.0f} | exchange {s['exchange']:.2f} | g1 {s['g1_per_stage'] * 1e3:5.0f} "
            f"ns/stage | tail {s['tail']:.2f} | end {s['end']:.2f} (max {s['end_max']:.2f}, entries to {s['entry_max']:.2f})"
            + (f" | producer: react {s['p_react'] * 1e3:.0f} ns, issue->arrive {s['p_issue_to_arrive'] * 1e3:.0f} ns, "
               f"consumer wake {s['c_wake'] * 1e3:.0f} ns" if "p_react" in s else "")
            + (f" | prologue: past the block barrier {s['pro_synced'] * 1e3:.0f} ns, job 0 issued "
               f"{s['pro_issued'] * 1e3:.0f} ns" if "pro_issued" in s else ""))


def probe_switches(data: dict) -> dict:
    """The generator switches a probe file's kernels were built with: recorded since the staged-E run; a
    file without them predates fused_wgmma's staged E and early exit arrive (its other switches were the
    defaults of today)."""
    from fusesim.capability import codegen_switches

    return data.get("codegen") or {**codegen_switches(), "fused_staged_e": False, "fused_early_exit_arrive": False}


def simulated(plan_dict: dict, hw_path: str, switches: dict | None = None) -> dict[str, float]:
    """The simulator's numbers for the same plan (first SM's spans), as the generator with `switches`
    (by default today's) builds it: first data, GEMM0 and GEMM1 per stage, GEMM0's last stage to GEMM1's
    first, the last stage to the kernel's end, the whole time."""
    from fusesim.capability import codegen_switches, generator_switches
    from fusesim.codegen import generate
    from fusesim.hardware import load_hardware
    from fusesim.plan import Plan
    from fusesim.sim import simulate

    plan = Plan.from_dict(plan_dict)
    with generator_switches(switches or codegen_switches()):
        kt0 = source_kt0(generate(plan).code)
        res = simulate(plan, load_hardware(hw_path), trace=True)
    spans = [e for e in (res.trace or []) if e.get("ph") == "X" and e["pid"] == 1]
    first_sm = min(e["tid"] for e in spans)
    mma = sorted(e["ts"] for e in spans if e["tid"] == first_sm and e["name"] == "mma")
    start_us, end_us = res.kernels[-1]["start_ns"] / 1e3, res.kernels[-1]["end_ns"] / 1e3
    g0, g1 = mma[:kt0], mma[kt0:]

    def per(v: list[float]) -> float:
        return (v[-1] - v[0]) / (len(v) - 1) if len(v) > 1 else 0.0

    return {"first_data": mma[0] - start_us, "g0_per_stage": per(g0), "g1_per_stage": per(g1),
            "g0_to_g1": (g1[0] - g0[-1]) if g1 else 0.0, "tail": end_us - (g1[-1] if g1 else g0[-1]),
            "time_us": res.time_us}


def main() -> int:
    """PROBE_SWITCHES='{"switch": value, ...}' in the environment builds and probes the kernels with those
    generator switches instead of today's (codegen_switches' keys; recorded in the output's "codegen")."""
    import os

    from fusesim.capability import codegen_switches, generator_switches

    with generator_switches({**codegen_switches(), **json.loads(os.environ.get("PROBE_SWITCHES", "{}"))}):
        return _main()


def _main() -> int:
    if sys.argv[1] == "--sim":  # --sim OUT.json [HW.yaml]
        data = read_json(sys.argv[2])
        hw_path = sys.argv[3] if len(sys.argv) > 3 else "hw_configs/h200_calibrated.yaml"
        print("plan     GPU / sim: time us | first data us | GEMM0 ns/stage | GEMM1 ns/stage | GEMM0 -> GEMM1 us | tail us")
        for pick, p in data["plans"].items():
            m, sim = p["median_rep"], simulated(p["plan"], hw_path, probe_switches(data))
            gap = m["g0_last_to_done"] + m["exchange"]
            print(f"{pick:6s} {p['measured_us']:6.2f} / {sim['time_us']:6.2f} | {m['first_data']:.2f} / {sim['first_data']:.2f} | "
                  f"{m['g0_per_stage'] * 1e3:4.0f} / {sim['g0_per_stage'] * 1e3:4.0f} | "
                  f"{m['g1_per_stage'] * 1e3:4.0f} / {sim['g1_per_stage'] * 1e3:4.0f} | {gap:.2f} / {sim['g0_to_g1']:.2f} | "
                  f"{m['tail']:.2f} / {sim['tail']:.2f}")
        return 0
    args = sys.argv[1:]
    pattern = FINAL
    if args[0] == "--from":  # --from GLOB: CASE:INDEX into those bench files' plans instead of the final run's
        pattern, args = args[1], args[2:]
    if args[0] == "--build":  # --build CASE:INDEX ...: compile the instrumented sources into FUSESIM_CACHE here
        return build_only(args[1:], pattern)
    return device(Path(args[0]), args[1:], pattern)


def build_only(picks: list[str], pattern: str) -> int:
    """nvcc the instrumented kernels here (the device's build then finds them in the carried cache)."""
    from fusesim.plan import Plan

    listed = final_plans(pattern)
    for pick in picks:
        case, idx = pick.split(":")
        print(pick, build_instrumented(Plan.from_dict(listed[case][int(idx)]["plan"]), "_stages", instrument), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
