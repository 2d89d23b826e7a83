"""Where does an unfused gemm_wgmma chain spend its time? A per-block %globaltimer timeline of the
weight-streaming cases' best plans, one device call.

The generated source of each plan (the final run's fastest unfused wgmma plan: G5, G8, S1, S3, S7)
gets stamps at block start, the first stage landing in the consumer, the consumer's last wgmma done
and block end (first consumer thread), per block and GEMM; the kernel is built, verified against
the fp32 reference once, then launched after an L2 flush (as fusesim bench times it) several times.
Prints per GEMM: first block start, median and max first-data latency, the spread of block ends
(tail), and how gemm1 starts relative to gemm0's end. Writes JSON to OUT.

    python3 scripts/probe_wgmma_timeline.py OUT.json     (on the GPU machine; scripts/device_env.sh)
    python3 scripts/probe_wgmma_timeline.py OUT.json PLANS.json CASE:INDEX...   (plans of a bench --plans file)
    python3 scripts/probe_wgmma_timeline.py --build PLANS.json CASE:INDEX...    (here: nvcc them into FUSESIM_CACHE)

`--lead` anywhere: hold the GPU for bench's host lead (HOST_LEAD_US) after each flush, so that both
GEMMs are enqueued before gemm0 starts, as in bench's queued timing (the committed probes ran without).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from globaltimer_stamps import apply_marks, build_instrumented, load_verified, stamp_decl, stamped_launches  # noqa: E402

from fusesim.stored import read_json

STAMP_DECL = stamp_decl("g_fs_stamp[2][4096][5]", "g_fs_stamp")


def instrument(code: str) -> str:
    """Insert the stamps into a gemm_wgmma translation unit (both GEMM kernels)."""
    marks = [
        ("#include \"wgmma.cuh\"\n", "#include \"wgmma.cuh\"\n" + STAMP_DECL),
        (") return;\n  if constexpr (PDL_PRIMARY)",
         ") return;\n  const unsigned long long fs_t0 = fs_now();\n"
         "  unsigned long long fs_t1 = 0, fs_t2 = 0;\n  if constexpr (PDL_PRIMARY)"),
        ("      fs::wg::mbar_wait(full + s, (t / STAGES) & 1);\n      const unsigned char* st = smem + s * STAGE_BYTES;\n",
         "      fs::wg::mbar_wait(full + s, (t / STAGES) & 1);\n      if (t == 0) fs_t1 = fs_now();\n"
         "      const unsigned char* st = smem + s * STAGE_BYTES;\n"),
        ("    fs::wg::wgmma_wait<0>();\n    pin(acc0);\n", "    fs::wg::wgmma_wait<0>();\n    fs_t2 = fs_now();\n    pin(acc0);\n"),
    ]  # and the stamp before each kernel's closing brace, below
    code = apply_marks(code, marks)
    end = "\n}\n\nMapCache map_x, map_w0, map_w1;"
    stamp = ("\n  if (threadIdx.x == 128) {\n    unsigned int sm;\n    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm));\n"
             "    unsigned long long* o = g_fs_stamp[PDL_SECONDARY ? 1 : 0][blockIdx.x];\n"
             "    o[0] = fs_t0; o[1] = fs_t1; o[2] = fs_t2; o[3] = fs_now(); o[4] = sm;\n  }")
    if code.count(end) != 2:
        raise SystemExit("template changed: kernel end not found")
    return code.replace(end, stamp + end)


def summarize(st: list[list[int]], t_ref: int) -> dict[str, float]:
    us = [[(v - t_ref) / 1e3 for v in row[:4]] for row in st]
    first = [r[1] - r[0] for r in us]
    ends = [r[3] for r in us]
    return {"blocks": len(us), "first_start_us": min(r[0] for r in us), "last_start_us": max(r[0] for r in us),
            "first_data_us_median": statistics.median(first), "first_data_us_max": max(first),
            "mma_done_us_median": statistics.median(r[2] for r in us), "end_us_min": min(ends),
            "end_us_median": statistics.median(ends), "end_us_max": max(ends),
            # per block, its consumer's last wgmma to its end: the epilogue (stores, or split-K's
            # red.adds + ticket, and the last part's convert)
            "tail_us_median": statistics.median(r[3] - r[2] for r in us), "tail_us_max": max(r[3] - r[2] for r in us)}


def build_only(plans_file: str, picks: list[str]) -> int:
    """nvcc the instrumented kernels here, into FUSESIM_CACHE (the device's build then finds them)."""
    from fusesim.plan import Plan

    listed = read_json(plans_file)
    for pick in picks:
        case, idx = pick.split(":")
        entry = listed[case][int(idx)]
        print(pick, build_instrumented(Plan.from_dict(entry.get("plan", entry)), "_timeline", instrument), flush=True)
    return 0


def main() -> int:
    if sys.argv[1] == "--build":  # --build PLANS.json CASE:INDEX ...
        return build_only(sys.argv[2], sys.argv[3:])
    lead_us = 0.0
    if "--lead" in sys.argv:  # hold the GPU for bench's host lead after each flush (see stamped_launches)
        from fusesim.gpu.timing import HOST_LEAD_US

        sys.argv.remove("--lead")
        lead_us = HOST_LEAD_US
    import ctypes

    import torch

    from fusesim.codegen import generate
    from fusesim.plan import Plan

    out = Path(sys.argv[1])
    sys.path.insert(0, str(Path(__file__).parent))
    from wgmma_variants import base_plans

    plans = base_plans()
    if len(sys.argv) > 2:  # PLANS_FILE CASE:INDEX ...: plans of a `bench --plans file:` list instead
        listed = read_json(sys.argv[2])
        plans = {}
        for pick in sys.argv[3:]:
            case, idx = pick.split(":")
            plans[pick] = Plan.from_dict(listed[case][int(idx)]["plan"])
    result = {"what": __doc__.splitlines()[0], "gpu": torch.cuda.get_device_name(), "host_lead_us": lead_us,
              "cases": {}}
    host = (ctypes.c_ulonglong * (2 * 4096 * 5))()
    for case in (plans if len(sys.argv) > 2 else ("G5", "G8", "S1", "S3", "S7")):
        plan: Plan = plans[case]
        src = generate(plan)
        kern, ver = load_verified(plan, src.name + "_timeline", instrument(src.code))
        g0, g1 = plan.kernels[0].grid_blocks, plan.kernels[1].grid_blocks
        reps = []
        for _ in stamped_launches(kern, host, lead_us=lead_us):
            a = [[host[(0 * 4096 + b) * 5 + i] for i in range(5)] for b in range(g0)]
            c = [[host[(1 * 4096 + b) * 5 + i] for i in range(5)] for b in range(g1)]
            t_ref = min(r[0] for r in a)
            s0, s1 = summarize(a, t_ref), summarize(c, t_ref)
            reps.append({"gemm0": s0, "gemm1": s1, "total_us": s1["end_us_max"]})
        reps.sort(key=lambda r: r["total_us"])
        med = reps[len(reps) // 2]
        result["cases"][case] = {"plan": plan.to_dict(), "verify": ver, "median_rep": med, "reps": reps}
        s0, s1 = med["gemm0"], med["gemm1"]
        print(f"{case}: verify ok={ver.get('ok')} | gemm0 {s0['blocks']} blocks: starts 0-{s0['last_start_us']:.1f}, "
              f"first data {s0['first_data_us_median']:.2f} (max {s0['first_data_us_max']:.2f}), mma done "
              f"{s0['mma_done_us_median']:.1f}, ends {s0['end_us_min']:.1f}/{s0['end_us_median']:.1f}/{s0['end_us_max']:.1f} "
              f"| gemm1 {s1['blocks']} blocks: starts {s1['first_start_us']:.1f}-{s1['last_start_us']:.1f}, first data "
              f"{s1['first_data_us_median']:.2f}, mma done {s1['mma_done_us_median']:.1f}, ends "
              f"{s1['end_us_min']:.1f}/{s1['end_us_median']:.1f}/{s1['end_us_max']:.1f} (us from gemm0's first block) | "
              f"last wgmma to block end: gemm0 {s0['tail_us_median']:.2f} (max {s0['tail_us_max']:.2f}), gemm1 "
              f"{s1['tail_us_median']:.2f} (max {s1['tail_us_max']:.2f})",
              flush=True)
    out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
